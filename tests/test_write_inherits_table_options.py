"""A write into an existing table takes what its options leave unsaid from the table's
``hoodie.properties``, as Hudi's Spark writer does (``mergeParamsAndGetHoodieConfig``
fills the record key, partition path, key generator, ordering field and table type, and
lays the table's other properties, e.g. ``hoodie.table.name``, hive-style partitioning
and url-encoding, under the options); a stated value that disagrees stays refused in one
line naming the option (``HoodieWriterUtils.validateTableConfig``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError
from hudi_sync.spark import read, write, write_arrow
from hudi_sync.table import HudiTable
from tests import hudi_oracle
from tests.frames import rows_frame
from tests.warehouse_rows import hudi_rs_rows

OPERATION = "hoodie.datasource.write.operation"
NAME = "hoodie.table.name"
RECORD_KEY = "hoodie.datasource.write.recordkey.field"
PARTITION_PATH = "hoodie.datasource.write.partitionpath.field"
ORDERING = "hoodie.datasource.write.precombine.field"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
URL_ENCODE = "hoodie.datasource.write.partitionpath.urlencode"
TABLE_TYPE = "hoodie.datasource.write.table.type"
KEY_GENERATOR = "hoodie.datasource.write.keygenerator.class"
KEY_GENERATOR_TYPE = "hoodie.datasource.write.keygenerator.type"
# Columns that differ between two writes of the same rows (the instant, file names).
PER_COMMIT = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name")


def stated_options(path: Path) -> dict[str, object]:
    """Every option the table fixes, stated as the table has it."""
    config = HudiTable.open(str(path)).config
    stated: dict[str, object] = {
        NAME: config.name,
        RECORD_KEY: ",".join(config.record_key_fields),
        PARTITION_PATH: ",".join(config.partition_fields),
        HIVE_STYLE: str(config.hive_style_partitioning).lower(),
        URL_ENCODE: str(config.url_encode_partitions).lower(),
        TABLE_TYPE: config.table_type.value,
    }
    # Version 6 names the key generator's class, later versions its type.
    if "hoodie.table.keygenerator.type" in config.raw:
        stated[KEY_GENERATOR_TYPE] = config.raw["hoodie.table.keygenerator.type"]
    else:
        stated[KEY_GENERATOR] = config.raw["hoodie.table.keygenerator.class"]
    if config.ordering_fields:
        stated[ORDERING] = config.ordering_fields[0]
    return stated


def comparable(path: Path) -> list[dict[str, Any]]:
    """hudi-rs's snapshot without what names the commit, by key."""
    rows = hudi_rs_rows(str(path)).drop_columns(list(PER_COMMIT)).to_pylist()
    return sorted(rows, key=lambda r: (r["_hoodie_partition_path"], r["_hoodie_record_key"]))


def renamed_key(key: str, old: int, new: int) -> str:
    """A Hudi record key with field ``id``'s value changed: ``1`` or ``id:1,name:a``."""
    if key == str(old):
        return str(new)
    parts = [f"id:{new}" if part == f"id:{old}" else part for part in key.split(",")]
    assert f"id:{new}" in parts, key
    return ",".join(parts)


def changes(spark: SparkSession, path: Path) -> tuple[DataFrame, list[dict[str, Any]]]:
    """Two stored rows updated (a higher ordering value, a new intField) and two new keys
    copied from them, and hudi-rs's rows they came from."""
    config = HudiTable.open(str(path)).config
    ordering = config.ordering_fields[0]
    loaded = read(spark, str(path))
    data = [c for c in loaded.columns if not c.startswith("_hoodie_")]
    chosen = loaded.select(*data).orderBy("id").limit(2)
    updated = chosen.withColumn(ordering, F.col(ordering) + 1).withColumn(
        "intField", F.col("intField") + 1000
    )
    inserted = chosen.withColumn("id", F.col("id") + 1000)
    ids = {r["id"] for r in chosen.collect()}
    sources = [r for r in hudi_rs_rows(str(path)).to_pylist() if r["id"] in ids]
    return updated.unionByName(inserted), sources


@pytest.mark.parametrize(
    "suffix",
    [
        "cow/v6_nonpartitioned",  # hive-style true, no partition: refused before
        "cow/v6_simplekeygen_nonhivestyle",
        "cow/v8_complexkeygen_hivestyle",
        "cow/v8_nonpartitioned",
        "mor/parquet/v6_complexkeygen_hivestyle",  # a map<string,struct> into a log block
    ],
)
def test_a_hudi_written_table_takes_the_options_left_unsaid(  # type: ignore[no-untyped-def]
    spark, fixture_copy, tmp_path, suffix
) -> None:
    """Only the operation stated: the same table as stating every option as the table
    has it (hudi-rs reads the same rows), new keys laid out as Hudi laid out the rows
    they were copied from (record key format, partition path), updates applied."""
    unsaid = fixture_copy(suffix)
    stated = Path(shutil.copytree(unsaid, tmp_path / "stated"))
    before = len(hudi_rs_rows(str(unsaid)))
    rows, sources = changes(spark, unsaid)

    write(rows, str(unsaid), {OPERATION: "upsert"})
    write(rows, str(stated), {**stated_options(stated), OPERATION: "upsert"})

    assert comparable(unsaid) == comparable(stated)
    assert {s["partition_path"] for s in hudi_oracle.slices(str(unsaid))} == {
        s["partition_path"] for s in hudi_oracle.slices(str(stated))
    }
    after = {r["_hoodie_record_key"]: r for r in hudi_rs_rows(str(unsaid)).to_pylist()}
    assert len(after) == before + 2
    ordering = HudiTable.open(str(unsaid)).config.ordering_fields[0]
    for source in sources:
        updated = after[source["_hoodie_record_key"]]
        assert updated["intField"] == source["intField"] + 1000
        kept = [c for c in source if c not in (*PER_COMMIT, "intField", ordering)]
        assert {c: updated[c] for c in kept} == {c: source[c] for c in kept}  # maps too
        assert updated["_hoodie_partition_path"] == source["_hoodie_partition_path"]
        new_key = renamed_key(source["_hoodie_record_key"], source["id"], source["id"] + 1000)
        assert after[new_key]["id"] == source["id"] + 1000
        assert after[new_key]["_hoodie_partition_path"] == source["_hoodie_partition_path"]
    table = HudiTable.open(str(unsaid))
    action = "deltacommit" if table.config.is_mor else "commit"
    assert table.timeline.completed_writes[-1].action == action


def _our_table(spark: SparkSession, path: Path) -> dict[str, object]:
    """A Merge-on-Read table of ours with every layout option away from its default:
    hive-style, url-encoded, two partition fields, a two-field key, an ordering field."""
    options: dict[str, object] = {
        NAME: "ours",
        RECORD_KEY: "id,name",
        PARTITION_PATH: "p,q",
        ORDERING: "ts",
        HIVE_STYLE: "true",
        URL_ENCODE: "true",
        TABLE_TYPE: "MERGE_ON_READ",
        OPERATION: "insert",
    }
    rows = [(1, "a", "x/y", "1", 5), (2, "b", "z", "2", 5)]
    write(_frame(spark, rows), str(path), options)
    return options


def _frame(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return rows_frame(spark, rows, "id int, name string, p string, q string, ts long")


def test_our_table_takes_the_options_left_unsaid(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An upsert stating nothing but its operation: a deltacommit into the hive-style,
    url-encoded folders, complex keys, and the table's ordering field decides (a lower
    ordering value does not replace the stored row)."""
    path = tmp_path / "t"
    _our_table(spark, path)
    rows = [(1, "a", "x/y", "1", 9), (2, "b", "z", "2", 1), (3, "c", "x/y", "1", 1)]
    result = write(_frame(spark, rows), str(path), {OPERATION: "upsert"})
    assert result.action == "deltacommit"
    stored = {
        r["_hoodie_record_key"]: (r["_hoodie_partition_path"], r["ts"])
        for r in hudi_rs_rows(str(path)).to_pylist()
    }
    assert stored == {
        "id:1,name:a": ("p=x%2Fy/q=1", 9),
        "id:2,name:b": ("p=z/q=2", 5),  # ts 1 < 5: the stored row stays
        "id:3,name:c": ("p=x%2Fy/q=1", 1),
    }
    folders = {p.relative_to(path).as_posix() for p in path.glob("p=*/q=*")}
    assert folders == {"p=x%2Fy/q=1", "p=z/q=2"}


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        (NAME, "other", "hoodie.table.name=other (table: ours)"),
        (RECORD_KEY, "id", f"{RECORD_KEY}=id (table: id,name)"),
        (PARTITION_PATH, "p", f"{PARTITION_PATH}=p (table: p,q)"),
        (ORDERING, "id", f"{ORDERING}=id (table: ts)"),
        (HIVE_STYLE, "false", f"{HIVE_STYLE}=false (table: true)"),
        (URL_ENCODE, "false", f"{URL_ENCODE}=false (table: true)"),
        (TABLE_TYPE, "COPY_ON_WRITE", f"{TABLE_TYPE}=COPY_ON_WRITE (table: MERGE_ON_READ)"),
        (
            KEY_GENERATOR_TYPE,
            "SIMPLE",
            f"{KEY_GENERATOR_TYPE}=SIMPLE (table: org.apache.hudi.keygen.ComplexKeyGenerator)",
        ),
        (
            KEY_GENERATOR,
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            f"{KEY_GENERATOR}=org.apache.hudi.keygen.NonpartitionedKeyGenerator "
            "(table: org.apache.hudi.keygen.ComplexKeyGenerator)",
        ),
    ],
)
def test_a_stated_option_the_table_contradicts_is_refused(  # type: ignore[no-untyped-def]
    spark, tmp_path, option, value, named
) -> None:
    """One line naming the option, its value and the table's; nothing written."""
    path = tmp_path / "t"
    _our_table(spark, path)
    instants = len(HudiTable.open(str(path)).timeline.instants)
    rows = _frame(spark, [(1, "a", "z", "2", 9)])
    with pytest.raises(BadInputError) as caught:
        write(rows, str(path), {OPERATION: "upsert", option: value})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: options do not match the table: "), message
    assert named in message
    assert len(HudiTable.open(str(path)).timeline.instants) == instants


def test_stating_the_tables_own_key_generator_is_accepted(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """By class (Spark's or Avro's) or by type, whichever the table stores."""
    path = tmp_path / "t"
    _our_table(spark, path)
    for stated in (
        {KEY_GENERATOR: "org.apache.hudi.keygen.ComplexKeyGenerator"},
        {KEY_GENERATOR: "org.apache.hudi.keygen.ComplexAvroKeyGenerator"},
        {KEY_GENERATOR_TYPE: "complex"},
    ):
        rows = _frame(spark, [(1, "a", "z", "2", 9)])
        write(rows, str(path), {OPERATION: "upsert", **stated})
    assert len(HudiTable.open(str(path)).timeline.completed_writes) == 4


@pytest.mark.parametrize(
    ("stated", "refused"),
    [
        (
            # a user's class (TIMESTAMP and CUSTOM are built: test_timestamp_keygen_writes)
            {KEY_GENERATOR: "com.example.OwnKeyGenerator"},
            f"{KEY_GENERATOR}=com.example.OwnKeyGenerator: the writer",
        ),
        ({KEY_GENERATOR_TYPE: "COMPLEX"}, f"{KEY_GENERATOR_TYPE}=COMPLEX: the writer"),
    ],
)
def test_a_new_table_refuses_a_key_generator_the_writer_does_not_build(  # type: ignore[no-untyped-def]
    spark, tmp_path, stated, refused
) -> None:
    """One key field, one partition field: the writer builds SIMPLE keys; a table stored
    as another key generator would not be what Hudi writes. Nothing is created."""
    path = tmp_path / "t"
    options = {NAME: "t", RECORD_KEY: "id", PARTITION_PATH: "p", OPERATION: "insert", **stated}
    rows = rows_frame(spark, [(1, "a")], "id int, p string")
    with pytest.raises(BadInputError, match=refused) as caught:
        write(rows, str(path), options)
    assert "(hoodie.datasource.write.recordkey.field=id, " in str(caught.value)
    assert not path.exists()
    for spec in stated:
        del options[spec]
    write(rows, str(path), {**options, KEY_GENERATOR_TYPE: "SIMPLE"})
    stored = HudiTable.open(str(path)).config.key_generator
    assert stored == "org.apache.hudi.keygen.SimpleKeyGenerator"


def test_creating_a_table_still_needs_a_name_and_a_record_key(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = rows_frame(spark, [(1, "a")], "id int, p string")
    with pytest.raises(BadInputError, match=r"^hoodie\.table\.name is required to create"):
        write(rows, str(tmp_path / "t"), {RECORD_KEY: "id"})
    with pytest.raises(BadInputError, match=rf"^{RECORD_KEY} is required to create a table"):
        write(rows, str(tmp_path / "t"), {NAME: "t"})
    assert not (tmp_path / "t").exists()


def _bucket_rows(rows: list[tuple[int, str, str, int]]) -> pa.Table:
    names = ["id", "name", "p", "ts"]
    return pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows])


def test_a_bucket_write_orders_its_rows_by_the_tables_ordering_field(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two rows of one key in a batch: the higher ordering value wins even when the write
    does not name the ordering field (the batch used to keep the row that came last)."""
    path = str(tmp_path / "t")
    created = {
        NAME: "t",
        RECORD_KEY: "id",
        PARTITION_PATH: "p",
        ORDERING: "ts",
        TABLE_TYPE: "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        OPERATION: "upsert",
    }
    write_arrow(_bucket_rows([(1, "first", "a", 1)]), path, created)
    late_then_early = _bucket_rows([(1, "late", "a", 5), (1, "early", "a", 3)])
    # The name, key and partition stated (as a write had to), the ordering field not.
    stated = {NAME: "t", RECORD_KEY: "id", PARTITION_PATH: "p", OPERATION: "upsert"}
    write_arrow(late_then_early, path, stated)
    (row,) = hudi_rs_rows(path).to_pylist()
    assert (row["name"], row["ts"]) == ("late", 5)


def test_the_cli_writes_into_a_table_stating_no_option(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``hudi-sync write TABLE FILE`` without --conf into an existing table: its
    options; a table that does not exist yet still needs them (exit 2, one line)."""
    table, data = tmp_path / "t", tmp_path / "rows.jsonl"
    data.write_text('{"id": 1, "p": "a", "ts": 1}\n{"id": 2, "p": "b", "ts": 1}\n')
    conf = {NAME: "t", RECORD_KEY: "id", PARTITION_PATH: "p", ORDERING: "ts", HIVE_STYLE: "true"}
    flags = [arg for k, v in conf.items() for arg in ("--conf", f"{k}={v}")]
    created = CliRunner().invoke(app, ["write", str(table), str(data), *flags])
    assert created.exit_code == 0, created.output
    data.write_text('{"id": 1, "p": "a", "ts": 7}\n{"id": 3, "p": "c", "ts": 1}\n')
    result = CliRunner().invoke(app, ["write", str(table), str(data)])
    assert result.exit_code == 0, result.output
    stored = {
        r["id"]: (r["_hoodie_partition_path"], r["ts"])
        for r in hudi_rs_rows(str(table)).to_pylist()
    }
    assert stored == {1: ("p=a", 7), 2: ("p=b", 1), 3: ("p=c", 1)}
    missing = CliRunner().invoke(app, ["write", str(tmp_path / "new"), str(data)])
    assert missing.exit_code == 2
    assert missing.stderr == "error: hoodie.table.name is required to create a table\n"
