"""Keeping credentials out of what the ingest shows: reprs, error messages, logs.

Kafka and schema-registry settings carry secrets (``sasl.password``,
``ssl.key.password``, ``basic.auth.user.info``, ``user:password@`` in a URL);
whatever may show a setting shows it through these helpers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from hudi_sync.secrets import MASK as MASK
from hudi_sync.secrets import scrub as scrub

# A setting is secret when its name holds one of these (librdkafka's, Kafka's and
# Confluent's names: sasl.password, ssl.keystore.password, sasl.oauthbearer.client.secret,
# ssl.key.pem, sasl.jaas.config, basic.auth.user.info, bearer.auth.token...; Snowflake's
# private_key_file_pwd).
_SECRET_PARTS = (
    "password", "secret", "user.info", "jaas.config", "key.pem", "token", "pwd", "passphrase",
)  # fmt: skip


def is_secret(name: str) -> bool:
    """Whether a setting's value is a credential."""
    lowered = name.lower()
    return any(part in lowered for part in _SECRET_PARTS)


def url_password(url: str) -> str | None:
    """The password of a ``scheme://user:password@host`` URL, as written (None if none)."""
    userinfo = _userinfo(url)
    if userinfo is None or ":" not in userinfo:
        return None
    return userinfo.partition(":")[2]


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (the user name stays, to tell
    which account was used)."""
    userinfo = _userinfo(url)
    if userinfo is None or ":" not in userinfo:
        return url
    scheme, _, rest = url.partition("://")
    user = userinfo.partition(":")[0]
    return f"{scheme}://{user}:{MASK}@{rest[len(userinfo) + 1 :]}"


def _userinfo(url: str) -> str | None:
    _, sep, rest = url.partition("://")
    if not sep:
        return None
    authority = rest.split("/", 1)[0].split("?", 1)[0]
    userinfo, at, _ = authority.rpartition("@")
    return userinfo if at else None


def mask_value(name: str, value: Any) -> Any:
    """A setting's value as it may be shown."""
    if is_secret(name):
        return MASK
    if isinstance(value, str) and "@" in value and "://" in value:
        return mask_url(value)
    return value


def masked(options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Settings as they may be shown."""
    if options is None:
        return None
    return {k: mask_value(k, v) for k, v in options.items()}


def secrets_of(options: Mapping[str, Any] | None) -> set[str]:
    """Every secret value in ``options`` (for ``scrub``), with the password part
    of ``user:password`` values and of URLs."""
    found: set[str] = set()
    for name, value in (options or {}).items():
        if not isinstance(value, str) or not value:
            continue
        if is_secret(name):
            found.add(value)
            if name.lower().endswith("user.info") and ":" in value:
                found.add(value.partition(":")[2])
        password = url_password(value)
        if password:
            found.add(password)
    return found


def masked_repr(instance: Any) -> str:
    """A dataclass's repr with its settings masked: fields named like secrets show
    ``***``, mappings of settings show masked values, URLs lose their password."""
    parts = []
    for item in dataclasses.fields(instance):
        if not item.repr:
            continue
        value = getattr(instance, item.name)
        if isinstance(value, Mapping):
            value = masked(value)
        else:
            value = mask_value(item.name.replace("_", "."), value)
        parts.append(f"{item.name}={value!r}")
    return f"{type(instance).__name__}({', '.join(parts)})"
