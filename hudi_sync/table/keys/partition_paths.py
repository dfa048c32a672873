"""Each row's partition path, as Hudi's key generators build it, computed on Arrow columns.

The one place paths are composed: the driver-side Arrow writes (the bucket index, the
Debezium ingest) call ``partition_paths`` on their rows, and Spark's writes call it
from a vectorised UDF (``hudi_sync.spark.writing.keys``) when a field is
timestamp-formatted (simple fields alone are Spark expressions there, by the same rules):

- a simple field's value as text (null or empty: Hudi's default partition);
- a timestamp field's value printed by ``timestamp_keygen`` (a null is a date there);
- each url-escaped when the table url-encodes, ``field=``-prefixed when hive-style,
  joined by ``/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync.errors import BadInputError
from hudi_sync.table.keys.partition_encoding import ESCAPED, escape
from hudi_sync.table.keys.record_keys import DEFAULT_PARTITION
from hudi_sync.table.keys.timestamp_keygen import TimestampPartition

SIMPLE = "SIMPLE"
TIMESTAMP = "TIMESTAMP"
PARTITION_KINDS = (SIMPLE, TIMESTAMP)
# A CUSTOM key generator's partition field spec: field:SIMPLE, field:TIMESTAMP.
KIND_SEPARATOR = ":"


@dataclass(frozen=True)
class PartitionScheme:
    """How a table's partition path is built from its partition fields."""

    fields: tuple[str, ...]
    kinds: tuple[str, ...]  # SIMPLE or TIMESTAMP, one a field
    hive_style: bool
    url_encode: bool
    timestamp: TimestampPartition | None = None

    @property
    def formats_time(self) -> bool:
        return TIMESTAMP in self.kinds


def field_names(specs: Sequence[str]) -> list[str]:
    """The field names of partition specs (``ts:TIMESTAMP`` -> ``ts``)."""
    return [spec.split(KIND_SEPARATOR)[0].strip() for spec in specs]


def stored_kinds(specs: Sequence[str]) -> tuple[str, ...]:
    """The kinds a CUSTOM table of version 8+ keeps with its fields
    (``region:simple,ts:timestamp``), or () when they are not kept."""
    if not specs or not all(KIND_SEPARATOR in spec for spec in specs):
        return ()
    return tuple(spec.split(KIND_SEPARATOR)[1].strip().upper() for spec in specs)


def partition_specs(
    specs: Sequence[str], custom: bool, option: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The field names and kinds of ``hoodie.datasource.write.partitionpath.field``: a
    CUSTOM key generator's ``field:TYPE`` specs (each must have one, as Hudi requires),
    other key generators' bare names."""
    names, kinds = [], []
    for spec in specs:
        parts = spec.split(KIND_SEPARATOR)
        if not custom:
            if len(parts) > 1:
                raise BadInputError(
                    f"{option}={','.join(specs)}: field:type partition specs are the CUSTOM key "
                    "generator's (hoodie.datasource.write.keygenerator.type=CUSTOM)"
                )
            names.append(spec)
            kinds.append(SIMPLE)
            continue
        if len(parts) != 2 or parts[1].strip().upper() not in PARTITION_KINDS or not parts[0]:
            raise BadInputError(
                f"{option}={','.join(specs)}: the CUSTOM key generator takes partition fields "
                "as field:SIMPLE or field:TIMESTAMP (e.g. region:SIMPLE,ts:TIMESTAMP)"
            )
        names.append(parts[0].strip())
        kinds.append(parts[1].strip().upper())
    return tuple(names), tuple(kinds)


def partition_paths(
    data: pa.Table, scheme: PartitionScheme, where: str, numeric_text: Sequence[str] = ()
) -> pa.Array:
    """Each row's partition path (see the module docstring). ``numeric_text``: timestamp
    fields whose numbers come as text (Spark hands integers and decimals over so,
    exactly)."""
    if not scheme.fields:
        return pa.array([""] * data.num_rows, pa.string())
    parts = []
    for name, kind in zip(scheme.fields, scheme.kinds, strict=True):
        column = data.column(name)
        if kind == TIMESTAMP:
            if scheme.timestamp is None:
                raise BadInputError(f"{where}: no timestamp settings for partition field {name}")
            value = scheme.timestamp.values(
                column, f"{where}: partition field {name}", name in numeric_text
            )
            value = _escaped(value) if scheme.url_encode else value
        else:
            value = column.cast(pa.string())
            if isinstance(value, pa.ChunkedArray):
                value = value.combine_chunks()
            value = _escaped(value) if scheme.url_encode else value
            value = pc.if_else(pc.equal(pc.fill_null(value, ""), ""), DEFAULT_PARTITION, value)
        if scheme.hive_style:
            value = pc.binary_join_element_wise(f"{name}=", value, "")
        parts.append(value)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "/")


def _escaped(value: pa.Array) -> pa.Array:
    """``partition_encoding.escape_value`` of each value: ``%`` first."""
    for character in ESCAPED:
        value = pc.replace_substring(value, character, escape(character))
    return value
