"""Tables whose partition metafiles are Parquet (``hoodie.partition.metafile.use.base.format``).

Hudi's BigQuery page asks view-mode writers for that option; each partition then holds
``.hoodie_partition_metadata.parquet`` (no rows, one optional int64 ``dummyint``, the
properties in the footer) instead of the properties text. The file is a ``.parquet`` in
the partition folder, where the history objects read every base file version: these tests
place the files as Hudi writes them in a real fixture table and check that the table core,
the manifests and each target's history keep to the base files, rows as hudi-rs reads them.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.spark import write_arrow
from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget
from hudi_sync.warehouse.duckdb import DuckDBTarget
from hudi_sync.warehouse.duckdb.files import partition_globs
from hudi_sync.warehouse.snowflake import BASE_FILE_PATTERN
from tests.bigquery_emulator import materialise
from tests.fixture_tables import fixture_tables, set_properties, unpack, without_metadata_table
from tests.objectstores import GcsStore
from tests.test_bigquery_target import _hive_columns_at_creation, _maps_as_dicts
from tests.test_snowflake_target import _hudi_rs, _target, _upload, _view_rows
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

METAFILE = ".hoodie_partition_metadata"
PARQUET_METAFILE = METAFILE + ".parquet"
OPTION = "hoodie.partition.metafile.use.base.format"
# Hive-style, two partition levels, four base file versions of three file groups.
FIXTURE = next(t for t in fixture_tables() if t.name.endswith("cow/v6_complexkeygen_hivestyle"))


def with_parquet_metafiles(tmp_path: Path) -> Path:
    """The fixture table as a writer with the option leaves it: each partition's text
    metafile replaced by the Parquet one Hudi's ``HoodiePartitionMetadata`` writes (message
    ``dummy`` with an optional int64 ``dummyint``, no rows, uncompressed, ``commitTime`` and
    ``partitionDepth`` in the footer), and the option kept in ``hoodie.properties``, as
    Hudi keeps it (a table config). Without the metadata table, so every reader lists the
    partition folders themselves."""
    root = unpack(FIXTURE, tmp_path)
    without_metadata_table(root)
    set_properties(root, {OPTION: "true"})
    for text in sorted(root.rglob(METAFILE)):
        assert ".hoodie" not in text.relative_to(root).parts[:-1]
        lines = text.read_text().splitlines()
        props = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
        schema = pa.schema([pa.field("dummyint", pa.int64())])
        target = text.with_name(PARQUET_METAFILE)
        with pq.ParquetWriter(target, schema, compression="NONE", store_schema=False) as out:
            out.add_key_value_metadata(props)
        text.unlink()
    return root


def _metafiles(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob(PARQUET_METAFILE))


def _base_file_rows(root: Path) -> int:
    """Rows in every base file version (what a history object holds)."""
    files = [p for p in root.rglob("*.parquet") if not p.name.startswith(".")]
    files = [p for p in files if ".hoodie" not in p.relative_to(root).parts]
    return sum(pq.ParquetFile(p).metadata.num_rows for p in files)


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    root = with_parquet_metafiles(tmp_path)
    metafiles = _metafiles(root)
    assert len(metafiles) == 3 and not list(root.rglob(METAFILE))
    footer = pq.ParquetFile(root / metafiles[0])
    assert footer.metadata.num_rows == 0 and footer.schema_arrow.names == ["dummyint"]
    assert {b"commitTime", b"partitionDepth"} <= set(footer.metadata.metadata or {})
    return root


def test_writer_refuses_the_option_and_tables_that_keep_it(table_dir: Path) -> None:
    """Stated true, or kept by the table's hoodie.properties, the option is refused in one
    line naming it; false (Hudi's default, what the writer writes) passes."""
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region",
    }
    for check in (WriteOptions.precheck, WriteOptions.parse):
        with pytest.raises(BadInputError) as refused:
            check({**options, OPTION: "true"})
        assert f"{OPTION}=true" in str(refused.value) and "\n" not in str(refused.value)
        check({**options, OPTION: "false"})
    kept = HudiTable.open(str(table_dir)).config
    unset = TableConfig.from_mapping({k: v for k, v in kept.raw.items() if k != OPTION}, "t")
    parsed = WriteOptions.parse({}, kept)
    with pytest.raises(BadInputError, match=f"^t: hoodie.properties: {OPTION}=true"):
        parsed.check_table(kept, "t")
    parsed.check_table(unset, "t")
    # Through the writer: refused before anything is written, new table or existing.
    rows = pa.table({"id": ["1"], "region": ["eu"]})
    fresh = table_dir.parent / "fresh"
    with pytest.raises(BadInputError, match=f"{OPTION}=true"):
        write_arrow(rows, str(fresh), {**options, OPTION: "true"})
    assert not fresh.exists()
    before = sorted(p.relative_to(table_dir) for p in table_dir.rglob("*"))
    stored = pq.read_table(next(p for p in table_dir.rglob("*.parquet") if p.name[0] != "."))
    upsert = stored.select([n for n in stored.column_names if not n.startswith("_hoodie")])
    with pytest.raises(BadInputError, match=f"{OPTION}=true"):
        write_arrow(
            upsert.slice(0, 1), str(table_dir), {"hoodie.datasource.write.operation": "upsert"}
        )
    assert sorted(p.relative_to(table_dir) for p in table_dir.rglob("*")) == before


def test_duckdb_history_view_and_manifest_keep_to_base_files(
    table_dir: Path, tmp_path: Path
) -> None:
    database = tmp_path / "w.duckdb"
    report = sync_table(str(table_dir), [DuckDBTarget(str(database), "t")])
    assert [r.action for r in report.results] == ["create"]
    manifest = (table_dir / ".hoodie/manifest/snapshots" / report.instant / "files.csv").read_text()
    assert manifest and METAFILE not in manifest
    slices = HudiTable.open(str(table_dir)).file_slices()
    paths = sorted(str(s.relative_base_path) for s in slices)
    assert len(paths) == 3 and not [p for p in paths if "/." in p], paths
    with duckdb.connect(str(database)) as con:
        view = con.sql('SELECT * FROM "t"').to_arrow_table()
        history = con.execute('SELECT count(*) FROM "t_history"').fetchone()
        # The history's globs (every level [!.]*) list the base files and no metafile.
        globbed = {
            Path(str(row[0])).name
            for pattern in partition_globs(str(table_dir), [2])
            for row in con.execute("SELECT file FROM glob(?)", [pattern]).fetchall()
        }
    assert globbed and not [name for name in globbed if name.startswith(".")]
    ours, theirs = same_columns(view, hudi_rs_rows(str(table_dir)))
    assert theirs.num_rows > 0 and canonical(ours) == canonical(theirs)
    assert history == (_base_file_rows(table_dir),)


def test_bigquery_history_uris_never_match_the_metafile(  # type: ignore[no-untyped-def]
    table_dir, gcs_server: GcsStore, client, dataset, monkeypatch
) -> None:
    """Before, ``<base>/b*.parquet`` matched ``byteField=10/.../.hoodie_partition_metadata
    .parquet`` (``*`` crosses folders and dots). The emulator reads no files through an
    external table (``tests/bigquery_emulator.py``): the rows are checked over copies its
    load jobs make from the same URIs, and how real BigQuery would meet the metafile under
    the declared schema (an error or no rows) is not shown here; the URIs now exclude it."""
    uri = gcs_server.upload_dir(table_dir, gcs_server.make_bucket(), "lake/t")
    objects = sorted(f"gs://{p}" for p in gcs_server.fs().find(uri))
    metafiles = [o for o in objects if o.endswith(PARQUET_METAFILE)]
    assert len(metafiles) == 3
    materialised = _hive_columns_at_creation(monkeypatch, client)
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t"}
    )
    report = sync_table(
        HudiTable.open(uri, gcs_server.storage_options), [BigQueryTarget(config, client)]
    )
    assert [r.action for r in report.results] == ["create"]
    history_id = f"{client.project}.{dataset}.t_history"
    uris = materialised[history_id]["sourceUris"]
    assert all(u.count("*") == 1 for u in uris)
    assert not [m for m in metafiles if any(fnmatch.fnmatchcase(m, u) for u in uris)]
    base_files = [o for o in objects if o.endswith(".parquet") and "/." not in o[len(uri) :]]
    assert all(any(fnmatch.fnmatchcase(o, u) for u in uris) for o in base_files)
    materialise(client, f"{client.project}.{dataset}.t_manifest")
    rows = client.query_and_wait(f"SELECT * FROM `{client.project}.{dataset}.t`").to_arrow()
    ours, theirs = same_columns(rows, hudi_rs_rows(str(table_dir)))
    normalise = _maps_as_dicts(theirs)  # BigQuery has no map type
    assert theirs.num_rows > 0 and canonical(ours, normalise) == canonical(theirs, normalise)
    count = client.query_and_wait(f"SELECT count(*) FROM `{history_id}`").to_arrow()
    assert count.column(0)[0].as_py() == _base_file_rows(table_dir)


def test_snowflake_history_pattern_skips_the_metafile(  # type: ignore[no-untyped-def]
    table_dir, s3_server, emulation
) -> None:
    for metafile in _metafiles(table_dir):
        assert re.match(BASE_FILE_PATTERN, "/" + metafile) is None, metafile
    table = _upload(s3_server, table_dir)
    report = sync_table(table, [_target()])
    assert report.ok and report.results[0].action == "create"
    expected = _hudi_rs(table, table_dir)
    assert len(expected) > 0 and _view_rows(table) == expected
