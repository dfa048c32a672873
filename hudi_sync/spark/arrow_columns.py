"""Arrow columns as a DataFrame takes them: one schema, every column Spark's type."""

from __future__ import annotations

import pyarrow as pa

from hudi_sync.spark.compat import from_arrow_schema, to_arrow_schema


def align(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: missing (newer, nullable) columns
    become nulls, types are cast (e.g. a session's timestamp zone to UTC)."""
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            if column.type != field.type:
                column = column.cast(field.type)
            columns.append(column)
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def spark_ready(schema: pa.Schema) -> pa.Schema:
    """Every column nullable and typed as Spark hands it to Python."""
    nullable = pa.schema([field.with_nullable(True) for field in schema])
    return to_arrow_schema(from_arrow_schema(nullable))
