"""The ingest's settings: ``IngestConfig`` read from Hudi's, Kafka's and Debezium's
option names (the CLI's flags as overrides), with the registry's credentials checked
and never echoed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.debezium.events import UNAVAILABLE
from hudi_sync.debezium.kafka_source import KafkaSettings
from hudi_sync.debezium.masking import masked_repr
from hudi_sync.errors import BadInputError

ON_ERROR = cfg.ON_ERROR.choices

# Option names: Hudi's streamer / Kafka's / Debezium's where they have one (declared,
# with the older hoodie.deltastreamer.* spellings, in hudi_sync.config).
TOPIC = cfg.TOPIC.key
MAX_EVENTS = cfg.MAX_EVENTS.key
REGISTRY_URL = cfg.REGISTRY_URL.key
TRUNCATE_POLICY = cfg.TRUNCATE_POLICY.key
ON_ERROR_OPTION = cfg.ON_ERROR.key
DEAD_LETTER = cfg.DEAD_LETTER.key
PLACEHOLDER = cfg.PLACEHOLDER.key  # Debezium's connector option
BINARY_MODE = cfg.BINARY_MODE.key  # Debezium's connector option
# The schema registry's basic auth by Confluent's client names (also with the
# schema.registry. prefix Confluent's serializers accept).
USER_INFO = cfg.REGISTRY_USER_INFO.key
CREDENTIALS_SOURCE = cfg.REGISTRY_CREDENTIALS_SOURCE.key
_REGISTRY_PREFIXES = ("schema.registry.", "basic.auth.")
# Not hoodie.* yet not Kafka client settings: the consumer's named fields, Debezium's.
_NOT_CLIENT = {
    cfg.BOOTSTRAP_SERVERS.key,
    cfg.GROUP_ID.key,
    cfg.AUTO_OFFSET_RESET.key,
    PLACEHOLDER,
    BINARY_MODE,
}
# The CLI's flags (keyword overrides) that are options: read by the same rules.
_OPTION_OVERRIDES: dict[str, cfg.OptionSpec[Any]] = {
    "max_events": cfg.MAX_EVENTS,
    "truncate_policy": cfg.TRUNCATE_POLICY,
    "on_error": cfg.ON_ERROR,
    "dead_letter_path": cfg.DEAD_LETTER,
}


@dataclass(frozen=True, repr=False)
class IngestConfig:
    """Everything one ingest needs; ``from_options`` reads it from Hudi's names.
    Its repr masks credentials (Kafka client secrets, registry passwords)."""

    table_path: str
    kafka: KafkaSettings
    write_options: Mapping[str, str] = field(default_factory=dict)
    record_key_fields: tuple[str, ...] | None = None
    max_events: int = 100_000
    truncate_policy: str = "fail"
    on_error: str = "stop"
    dead_letter_path: str = "debezium-dead-letter.jsonl"
    registry_url: str | None = None  # may hold user:password@
    registry_user_info: str | None = None  # user:password for the registry's basic auth
    unavailable_values: tuple[str, ...] = (UNAVAILABLE,)
    binary_handling_mode: str = "bytes"
    continuous: bool = False
    poll_interval_s: float = 5.0
    storage_options: Mapping[str, Any] | None = None

    def __repr__(self) -> str:
        return masked_repr(self)

    @classmethod
    def from_options(
        cls, table_path: str, options: Mapping[str, Any], **overrides: Any
    ) -> IngestConfig:
        """Options by Hudi's names (``hoodie.deltastreamer.*`` spellings too); keyword
        overrides (the CLI's flags) win. As in HoodieStreamer, every option that is not
        ``hoodie.*`` (nor the registry's or Debezium's) is a Kafka consumer setting."""
        o = {str(k): str(v) for k, v in options.items()}
        _apply_table_type(o, overrides.pop("table_type", None))
        for name, spec in _OPTION_OVERRIDES.items():
            value = overrides.pop(name, None)
            if value is not None:  # a flag wins: the key is read before its alternates
                o[spec.key] = str(value)
        placeholder = cfg.PLACEHOLDER.text(o)  # compared with data: as given
        cfg.META_SYNC.read(o)  # a bad value fails now, not after the first commit
        kafka = KafkaSettings(
            bootstrap_servers=cfg.BOOTSTRAP_SERVERS.read(o),
            topics=cfg.TOPIC.read(o),
            auto_offset_reset=cfg.AUTO_OFFSET_RESET.read(o),
            group_id=cfg.GROUP_ID.read(o),
            client_options={
                k: v
                for k, v in o.items()
                if not k.startswith((cfg.HOODIE_PREFIX, *_REGISTRY_PREFIXES))
                and k not in _NOT_CLIENT
            },
        )
        values: dict[str, Any] = {
            "table_path": table_path,
            "kafka": kafka,
            "write_options": {k: v for k, v in o.items() if k.startswith(cfg.HOODIE_PREFIX)},
            "record_key_fields": cfg.RECORD_KEY.read(o) or None,
            "max_events": cfg.MAX_EVENTS.read(o),
            "truncate_policy": cfg.TRUNCATE_POLICY.read(o),
            "on_error": cfg.ON_ERROR.read(o),
            "dead_letter_path": cfg.DEAD_LETTER.read(o),
            "registry_url": cfg.REGISTRY_URL.read(o),
            "registry_user_info": _registry_user_info(o),
            "unavailable_values": (UNAVAILABLE, placeholder) if placeholder else (UNAVAILABLE,),
            "binary_handling_mode": cfg.BINARY_MODE.read(o),
        }
        kafka_keys = ("bootstrap_servers", "topics", "topic_pattern", "auto_offset_reset")
        kafka_overrides = {k: overrides.pop(k, None) for k in kafka_keys}
        kafka_overrides = {k: v for k, v in kafka_overrides.items() if v not in (None, ())}
        values["kafka"] = KafkaSettings(**{**kafka.__dict__, **kafka_overrides})
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)
        config.check()
        return config

    def check(self) -> None:
        if "://" in self.dead_letter_path and not self.dead_letter_path.startswith("file://"):
            raise BadInputError(
                f"{DEAD_LETTER}={self.dead_letter_path}: the dead-letter file is appended to "
                "after each bad event, and object stores cannot append; give a local path"
            )


def _apply_table_type(options: dict[str, str], flag: str | None) -> None:
    """``--table-type`` into the options: it and ``hoodie.datasource.write.table.type``
    must agree when both are given."""
    spec = cfg.WRITE_TABLE_TYPE
    asked = spec.read(options) if spec.given(options) else None  # a bad value fails now
    if flag is None:
        return
    chosen = spec.read({spec.key: flag})
    if asked is not None and asked != chosen:
        raise BadInputError(
            f"--table-type {chosen} disagrees with {spec.key}={asked} (give one, or the same)"
        )
    for name in spec.alternates:
        options.pop(name, None)
    options[spec.key] = chosen


def _registry_user_info(options: Mapping[str, str]) -> str | None:
    """The registry's ``user:password`` from Confluent's settings: ``basic.auth.user.info``
    unless ``basic.auth.credentials.source=URL`` (then the URL's own, read by the
    registry client). Never echoes a value."""

    source = (cfg.REGISTRY_CREDENTIALS_SOURCE.read(options) or "").upper()
    user_info = cfg.REGISTRY_USER_INFO.text(options)  # a secret: never stripped nor echoed
    if source not in ("", "USER_INFO", "URL"):
        raise BadInputError(
            f"{CREDENTIALS_SOURCE}={source} is not supported (USER_INFO, or URL for "
            "user:password@ in the registry URL)"
        )
    if source == "URL":
        return None
    if source == "USER_INFO" and not user_info:
        raise BadInputError(f"{CREDENTIALS_SOURCE}=USER_INFO needs {USER_INFO} (user:password)")
    if user_info and ":" not in user_info:
        raise BadInputError(f"{USER_INFO} must be user:password (it has no ':')")
    return user_info or None
