"""Record keys as Hudi's key generators build them from a record's key fields.

A table written without meta fields (``hoodie.populate.meta.fields=false``) stores
no ``_hoodie_record_key``: its log data blocks hold the bare records, and Hudi's
readers rebuild each key with the table's key generator (delete blocks carry the
built key). Merging such a table's logs needs the same keys, built here:

- one key field (``SimpleKeyGenerator``, ``NonpartitionedKeyGenerator``,
  ``TimestampBasedKeyGenerator``, ``CustomKeyGenerator``): the field's value as Java's
  ``toString`` gives it; null or empty is no key (Hudi refuses it);
- several (``ComplexKeyGenerator``, ``NonpartitionedKeyGenerator``, ``CustomKeyGenerator``):
  ``f1:v1,f2:v2``,
  ``__null__``/``__empty__`` standing for a null or empty value; every value null or
  empty is no key.

Only values whose text is certain are keyed: strings and integers (Java prints them
as Python does). Other key generators (a class of one's own), a complex key
generator over one field (its encoding changed between Hudi releases:
``hoodie.write.complex.keygen.new.encoding``) and key fields of other types are
refused in one line. The writer's key columns (``hudi_sync.spark.writing.keys``) share the
constants.

The writer keys a complex key generator over one field as Hudi does
(``names_single_key_field``): ``field:value`` (Hudi 0.14.0 and older, and 0.14.2,
0.15.1, 1.0.3 on; always on table version 9), or the value alone as Hudi 0.14.1 to
1.0.2 wrote it (kept on version 8 and below by
``hoodie.write.complex.keygen.new.encoding=true``); a key already stored in the table
decides, so one table never holds both forms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync import config as cfg
from hudi_sync.errors import CorruptTableError, HudiSyncError, UnsupportedTableError
from hudi_sync.table.config.properties import TableConfig

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Hudi's complex key format ``f1:v1,f2:v2`` and its stand-ins for a null or empty value
# (KeyGenerator's NULL_RECORDKEY_PLACEHOLDER and EMPTY_RECORDKEY_PLACEHOLDER).
KEY_PARTS_SEPARATOR = ","
KEY_VALUE_SEPARATOR = ":"
NULL_KEY_VALUE = "__null__"
EMPTY_KEY_VALUE = "__empty__"

# Key generators (class names without package and ``Avro``, or types) whose keys are
# built from the key fields' values alone.
_SIMPLE = {"SimpleKeyGenerator", "SIMPLE"}
_COMPLEX = {"ComplexKeyGenerator", "COMPLEX"}
_NON_PARTITIONED = {"NonpartitionedKeyGenerator", "NON_PARTITION"}
# Their record keys are a simple key generator's (TimestampBasedAvroKeyGenerator extends
# SimpleAvroKeyGenerator), or by the number of fields (CustomAvroKeyGenerator: simple
# over one, complex over several); only their partition paths are their own.
_TIMESTAMP = {"TimestampBasedKeyGenerator", "TIMESTAMP"}
_ONE_KEY_FIELD = _SIMPLE | _TIMESTAMP  # these key over one field only
_CUSTOM = {"CustomKeyGenerator", "CUSTOM"}


def _generator_name(raw: str | None) -> str | None:
    """A key generator's class or type name without package and ``Avro``."""
    name = None if raw is None else raw.strip().rsplit(".", 1)[-1]
    return None if name is None else name.removesuffix("_AVRO").replace("Avro", "")


def single_field_complex(
    generator: str | None, fields: Sequence[str], partitions: Sequence[str]
) -> bool:
    """A complex key generator over one record key field: named, or the one Hudi infers
    for one key field with several partition fields."""
    name = _generator_name(generator)
    return len(fields) == 1 and (name in _COMPLEX or (name is None and len(partitions) > 1))


def names_single_key_field(
    generator: str | None,
    fields: Sequence[str],
    partitions: Sequence[str],
    version: int,
    new_encoding: bool,
    stored_key: str | None,
) -> bool:
    """Whether the keys over the one record key field of ``fields`` are written
    ``field:value``: a complex key generator's (named, or the one Hudi infers for one key
    field with several partition fields), by ``stored_key`` (a key the table holds) when
    there is one, else by Hudi's rule (``KeyGenUtils
    .encodeSingleKeyFieldNameForComplexKeyGen``: table version 9, or not
    ``hoodie.write.complex.keygen.new.encoding``)."""
    if not single_field_complex(generator, fields, partitions):
        return False
    if stored_key is not None:
        return stored_key.startswith(f"{fields[0]}{KEY_VALUE_SEPARATOR}")
    return version >= 9 or not new_encoding


def key_fields(config: TableConfig, where: str) -> tuple[str, ...]:
    """The fields the table's keys are built from (see the module docstring); raises
    UnsupportedTableError (one line naming ``where``) for a key generator whose keys
    hudi_sync cannot rebuild."""
    fields = config.record_key_fields
    if not fields:
        raise UnsupportedTableError(
            f"{where}: {cfg.RECORD_KEY_FIELDS.key} is not set: no record key to merge by"
        )
    raw = config.key_generator
    name = _generator_name(raw)
    if name is None or name in _NON_PARTITIONED or name in _CUSTOM:
        return fields  # none named: Hudi infers simple (one field) or complex (several)
    if name in _ONE_KEY_FIELD and len(fields) == 1:
        return fields
    if name in _ONE_KEY_FIELD:
        raise UnsupportedTableError(
            f"{where}: key generator {raw} with several record key fields "
            f"({','.join(fields)}) is not supported"
        )
    if name in _COMPLEX:
        if len(fields) == 1:
            raise UnsupportedTableError(
                f"{where}: key generator {raw} over one record key field ({fields[0]}): "
                "its key encoding depends on the Hudi release that wrote it "
                "(hoodie.write.complex.keygen.new.encoding), so log records cannot be keyed"
            )
        return fields
    raise UnsupportedTableError(
        f"{where}: key generator {raw}: its record keys cannot be rebuilt from the key "
        "fields (only simple, complex, non-partitioned, timestamp-based and custom key "
        "generators)"
    )


def record_key(values: Sequence[Any], fields: Sequence[str], where: str) -> str:
    """The key of one record whose key fields ``fields`` hold ``values``."""
    texts = [_text(value, field, where) for value, field in zip(values, fields, strict=True)]
    if len(fields) == 1:
        if not texts[0]:
            raise CorruptTableError(f"{where}: a record's key field {fields[0]} is null or empty")
        return texts[0]
    if not any(texts):
        raise CorruptTableError(
            f"{where}: a record's key fields ({', '.join(fields)}) are all null or empty"
        )
    return KEY_PARTS_SEPARATOR.join(
        f"{field}{KEY_VALUE_SEPARATOR}"
        f"{NULL_KEY_VALUE if text is None else EMPTY_KEY_VALUE if text == '' else text}"
        for field, text in zip(fields, texts, strict=True)
    )


def record_keys(rows: pa.Table, fields: Sequence[str], where: str) -> pa.Array:
    """Each stored row's key (``built_keys``); the key fields must be string or integer
    columns of ``rows``, and a row without a key is a corrupt table."""
    check_key_types(rows.schema, fields, where)
    return built_keys(rows, fields, where, CorruptTableError)


def built_keys(
    rows: pa.Table,
    fields: Sequence[str],
    where: str,
    refuse: type[HudiSyncError],
    named: bool = False,
) -> pa.Array:
    """Each row's key as a string array, built column-wise by ``record_key``'s rules
    (values as Arrow casts them to text); rows without a key raise ``refuse`` naming
    ``where``: a writer's bad input, or a corrupt table. ``named``: one field is
    written ``field:value`` too (``names_single_key_field``)."""
    texts = [rows.column(f).cast(pa.string()).combine_chunks() for f in fields]
    blank = [pc.fill_null(pc.equal(t, ""), True) for t in texts]
    if len(fields) == 1 and not named:
        refused = pc.sum(blank[0]).as_py() or 0
        if refused:
            raise refuse(
                f"{where}: {refused} rows have a null or empty record key field {fields[0]}"
            )
        return texts[0]
    every = blank[0]
    for more in blank[1:]:
        every = pc.and_(every, more)
    refused = pc.sum(every).as_py() or 0
    if refused:
        raise refuse(
            f"{where}: {refused} rows have every record key field "
            f"({', '.join(fields)}) null or empty"
        )
    parts = []
    for name, text in zip(fields, texts, strict=True):
        shown = pc.fill_null(pc.if_else(pc.equal(text, ""), EMPTY_KEY_VALUE, text), NULL_KEY_VALUE)
        parts.append(pc.binary_join_element_wise(f"{name}{KEY_VALUE_SEPARATOR}", shown, ""))
    return pc.binary_join_element_wise(*parts, KEY_PARTS_SEPARATOR)


def check_key_types(schema: pa.Schema, fields: Sequence[str], where: str) -> None:
    """Refuses (one line) key fields ``schema`` lacks or whose text form in a key is
    not certain (anything but strings and integers)."""
    for field in fields:
        if field not in schema.names:
            raise UnsupportedTableError(f"{where}: record key field {field} is not a column")
        kind = schema.field(field).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)) and not (
            pa.types.is_integer(kind)
        ):
            raise UnsupportedTableError(
                f"{where}: record key field {field} is of type {kind}: only string and "
                "integer key fields can be keyed as Hudi's key generator writes them"
            )


def _text(value: Any, field: str, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise UnsupportedTableError(
        f"{where}: record key field {field} holds a {type(value).__name__}: only string "
        "and integer key fields can be keyed as Hudi's key generator writes them"
    )
