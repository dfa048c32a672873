"""Which metadata-table partitions a write keeps current, and dropping the others.

Hudi's writer keeps every partition listed in ``hoodie.table.metadata.partitions``
current; one its write config disables is dropped before the write (the partition's
folder deleted, the property and the index definitions updated), and
``hoodie.metadata.enable=false`` deletes the whole metadata table. hudi_sync does the
same, but a partition it cannot keep current and the user has not disabled refuses the
write: a stale index would give other engines wrong answers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.option_spec import OptionSpec
from hudi_sync.storage import Location
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.table.config.properties import decode_properties, parse_java_properties
from hudi_sync.table.write.create import java_properties_text
from hudi_sync.table.write.metadata_table.indexes import (
    index_definitions_path,
    refuse_partitioned_record_index,
)

_log = logging.getLogger(__name__)

METADATA_FOLDER = ".hoodie/metadata"
FILES = "files"
SECONDARY_PREFIX = "secondary_index_"


def disabling_option(partition: str) -> OptionSpec[bool] | None:
    """Hudi's option that disables ``partition`` (``None``: no option does)."""
    if partition.startswith(SECONDARY_PREFIX):
        return cfg.METADATA_SECONDARY_INDEX
    return {
        "column_stats": cfg.METADATA_COLUMN_STATS,
        "partition_stats": cfg.METADATA_PARTITION_STATS,
        "record_index": cfg.METADATA_RECORD_INDEX,
        "bloom_filters": cfg.METADATA_BLOOM_FILTERS,
    }.get(partition)


def _disabled(partition: str, options: Mapping[str, str]) -> bool:
    spec = disabling_option(partition)
    return spec is not None and spec.given(options) and not spec.read(options)


@dataclass(frozen=True)
class MetadataPlan:
    """What the write does to the metadata table: ``partitions`` it keeps current
    (empty: the table has none, or it was deleted)."""

    partitions: tuple[str, ...]


def prepare_metadata_table(
    location: Location,
    version: int,
    listed: tuple[str, ...],
    options: Mapping[str, str],
    maintained: frozenset[str],
) -> MetadataPlan:
    """Before a write: delete the metadata table (``hoodie.metadata.enable=false``) or
    drop the partitions the options disable; refuse partitions not in ``maintained``
    that stay. ``listed`` is the table's ``hoodie.table.metadata.partitions``."""
    base = location.uri
    folder = location.join(METADATA_FOLDER)
    exists = bool(listed) or bool(location.names(folder))
    if not exists:
        return MetadataPlan(())
    if cfg.METADATA_ENABLE.given(options) and not cfg.METADATA_ENABLE.read(options):
        delete_metadata_table(location)
        _log.warning(
            "%s: deleted the metadata table (%s=false), as Hudi does",
            base,
            cfg.METADATA_ENABLE.key,
        )
        return MetadataPlan(())
    # Each partition the write keeps current or drops is a folder of the metadata table.
    source = location.uri_of(f".hoodie/{cfg.PROPERTIES_FILE}")
    for partition in listed:
        location.file_inside(METADATA_FOLDER, partition, source)
    refuse_partitions_being_built(
        base, cfg.METADATA_PARTITIONS_INFLIGHT.read(_read_properties(location))
    )
    if version < 8:
        raise BadInputError(
            f"{base}: the table keeps a Hudi 0.x metadata table ({cfg.METADATA_PARTITIONS.key}="
            f"{','.join(listed)}), which hudi_sync does not update: set "
            f"{cfg.METADATA_ENABLE.key}=false to delete it"
        )
    if FILES not in listed:
        raise BadInputError(
            f"{base}: the metadata table has no '{FILES}' partition ({cfg.METADATA_PARTITIONS.key}"
            f"={','.join(listed)}); set {cfg.METADATA_ENABLE.key}=false to delete it"
        )
    dropped = [p for p in listed if _disabled(p, options)]
    if "record_index" in listed and "record_index" not in dropped:
        refuse_partitioned_record_index(location, _read_properties(location))
    stale = [p for p in listed if p not in maintained and p not in dropped]
    if stale:
        hints = sorted(
            {f"{spec.key}=false" for p in stale if (spec := disabling_option(p)) is not None}
        )
        how = f" (disable with {', '.join(hints)})" if hints else ""
        raise BadInputError(
            f"{base}: hudi_sync cannot keep these metadata table partitions current: "
            f"{', '.join(stale)}{how}"
        )
    if dropped:
        drop_partitions(location, dropped)
        _log.warning(
            "%s: dropped metadata table partitions %s (disabled by the write options), as "
            "Hudi does",
            base,
            ", ".join(dropped),
        )
    return MetadataPlan(tuple(p for p in listed if p not in dropped))


def refuse_partitions_being_built(base: str, inflight: Sequence[str]) -> None:
    """Refuse a write while Hudi's asynchronous indexer builds a partition (``inflight``:
    ``hoodie.table.metadata.partitions.inflight``). Hudi's writers log their updates to
    it, and the indexer's catch-up skips every instant that has a metadata deltacommit,
    so a deltacommit without them would leave the finished index without the write;
    hudi_sync does not update a partition being built."""
    if inflight:
        raise BadInputError(
            f"{base}: metadata table partition {', '.join(inflight)} is being built by "
            f"Hudi's indexer ({cfg.METADATA_PARTITIONS_INFLIGHT.key}={','.join(inflight)}) and "
            "hudi_sync does not update a partition being built; write once the indexer finished"
        )


def drop_partitions(location: Location, partitions: list[str]) -> None:
    """As Hudi drops a disabled partition: the property first (readers stop using the
    partition), then the index definitions, then the folder."""
    props = _read_properties(location)
    # The names come from hoodie.properties: every folder and the definitions file are
    # known to be inside the table before anything changes.
    source = location.uri_of(f".hoodie/{cfg.PROPERTIES_FILE}")
    folders = [location.file_inside(METADATA_FOLDER, p, source) for p in partitions]
    definitions = location.inside(index_definitions_path(props), source)
    keep = [p for p in _split(props.get(cfg.METADATA_PARTITIONS.key)) if p not in partitions]
    inflight = [
        p for p in _split(props.get(cfg.METADATA_PARTITIONS_INFLIGHT.key)) if p not in partitions
    ]
    props[cfg.METADATA_PARTITIONS.key] = ",".join(keep)
    if cfg.METADATA_PARTITIONS_INFLIGHT.key in props:
        props[cfg.METADATA_PARTITIONS_INFLIGHT.key] = ",".join(inflight)
    _write_properties(location, props)
    _drop_index_definitions(location, definitions, partitions)
    for folder in folders:
        location.remove_tree(folder)


def delete_metadata_table(location: Location) -> None:
    """As Hudi deletes a disabled metadata table: the property cleared, then the folder."""
    props = _read_properties(location)
    props[cfg.METADATA_PARTITIONS.key] = ""
    if cfg.METADATA_PARTITIONS_INFLIGHT.key in props:
        props[cfg.METADATA_PARTITIONS_INFLIGHT.key] = ""
    _write_properties(location, props)
    location.remove_tree(location.join(METADATA_FOLDER))


def _split(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _read_properties(location: Location) -> dict[str, str]:
    path = location.join(".hoodie", cfg.PROPERTIES_FILE)
    return parse_java_properties(decode_properties(location.read_file(path), path))


def _write_properties(location: Location, props: Mapping[str, str]) -> None:
    path = location.join(".hoodie", cfg.PROPERTIES_FILE)
    location.write_file(path, java_properties_text(props).encode())


def _drop_index_definitions(location: Location, path: str, partitions: list[str]) -> None:
    try:
        data = location.read_file(path)
    except FileNotFoundError:
        return
    definitions = load_json(data, path, "index definitions file")
    entries = definitions.get("indexDefinitions", {}) if isinstance(definitions, dict) else None
    if not isinstance(entries, dict):
        raise CorruptTableError(f"{path}: not an index definitions file")
    kept = {name: d for name, d in entries.items() if name not in partitions}
    if len(kept) != len(entries):
        definitions["indexDefinitions"] = kept
        location.write_file(path, json.dumps(definitions, indent=2).encode())


def read_properties(location: Location) -> dict[str, str]:
    """The data table's ``hoodie.properties``, as raw keys and values."""
    return _read_properties(location)


def write_properties(location: Location, props: Mapping[str, str]) -> None:
    """Write the data table's ``hoodie.properties`` whole."""
    _write_properties(location, props)
