"""The metadata table's own services (compaction, clean, archival) and its creation.

hudi-rs lists v8+ tables through the metadata table, so after every step it reading the
same rows as our table core shows the metadata table (its new HFile base files
included) lists the table right; the ``files`` records must also equal a direct
listing. Files and instants of the metadata table go only when Hudi's rules say so.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import fastavro

from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table.hfile_reader import read_hfile
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.metadata_table.records import decode_records
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.write.metadata_table.compaction import base_hfile
from tests.fixture_tables import fixture_tables
from tests.frames import rows_frame
from tests.metadata_checks import assert_readers_agree, listed_files, rows_by_key
from tests.test_metadata_table_write import _options

MDT = ".hoodie/metadata"


def mdt_files(path: Path) -> dict[str, list[str]]:
    """``partition -> files`` the metadata table's ``files`` partition lists."""
    records = MetadataTableReader.of(HudiTable.open(str(path))).read_partition("files")
    records.pop("__all_partitions__")
    return {k: sorted(r.live_files()) for k, r in records.items() if r.live_files()}


def test_base_hfiles_hudi_wrote_come_back_byte_for_byte(unpack_table) -> None:  # type: ignore[no-untyped-def]
    """Every HFile base file of the Hudi 1.1 fixtures' metadata tables, written again
    from its records (with its schema text and creation time): the same bytes, bloom
    filter and min/max keys included. Hudi 1.0's (v8) were written by HBase's writer:
    there the bloom filter alone is compared."""
    checked = 0
    for fixture in fixture_tables():
        if "meta" not in fixture.name and "v8_trips" not in fixture.name:
            continue
        base = unpack_table(fixture)
        version = 8 if "v8_" in fixture.name else 9
        for path in sorted((base / MDT).glob("*/*.hfile")):
            data = path.read_bytes()
            content = read_hfile(data, str(path))
            records = decode_records(content, str(path))
            created = int.from_bytes(content.file_info[b"hfile.CREATE_TIME_TS"], "big")
            schema = content.file_info[b"schema"].decode()
            ours = base_hfile(records, version, schema, created)
            if version == 9:
                assert ours == data, path
            else:
                theirs = read_hfile(ours, "ours")
                assert theirs.meta_blocks == content.meta_blocks, path
            checked += 1
    assert checked >= 80


def _plan(path: Path, instant: str) -> list[dict[str, Any]]:
    data = (path / MDT / ".hoodie/timeline" / f"{instant}.compaction.requested").read_bytes()
    record = next(iter(fastavro.reader(io.BytesIO(data))))
    assert isinstance(record, dict)
    return list(record["operations"])


def _mdt_timeline(path: Path) -> list[str]:
    return sorted(p.name for p in (path / MDT / ".hoodie/timeline").iterdir() if p.is_file())


def test_compaction_clean_and_archival_of_the_metadata_table(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    model = rows_by_key(read_snapshot(table), "txn_id")
    columns = list(next(iter(model.values())))
    schema = read(spark, str(path)).select(*columns).schema
    options = {
        **_options(table, "upsert"),
        "hoodie.metadata.compact.max.delta.commits": "7",
        "hoodie.cleaner.commits.retained": "2",
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "4",
    }
    files_dir = path / MDT / "files"
    hudi_base = files_dir / "files-0000-0_13-170-402_20260307162449278.hfile"
    old_logs: list[Path] = []
    compacted: str | None = None
    seen_cleaned = False
    for step in range(8):
        key = min(model)
        row = dict(model[key], merchant_name=f"step {step}", txn_ts=model[key]["txn_ts"] + 1)
        df = rows_frame(spark, [row], schema)
        result = write(df, str(path), options)
        model[key] = row
        assert_readers_agree(path, "txn_id", model)
        assert mdt_files(path) == listed_files(path)
        names = _mdt_timeline(path)
        compactions = sorted(n.split("_")[0] for n in names if n.endswith(".commit"))
        if compacted is None and len(compactions) > 1:
            compacted = compactions[-1]
            # Requested (the plan), inflight (empty), completed as a commit; the plan
            # compacts the files group's slice: Hudi's base file and the logs after it.
            assert f"{compacted}.compaction.requested" in names
            assert (
                path / MDT / f".hoodie/timeline/{compacted}.compaction.inflight"
            ).stat().st_size == 0
            (op,) = [o for o in _plan(path, compacted) if o["partitionPath"] == "files"]
            assert op["dataFilePath"] == hudi_base.name
            assert op["baseInstantTime"] == "20260307162449278"
            assert op["deltaFilePaths"] and all("_2026" in d for d in op["deltaFilePaths"])
            old_logs = [files_dir / name for name in op["deltaFilePaths"]]
            (new_base,) = files_dir.glob(f"files-0000-0_*_{compacted}.hfile")
            content = read_hfile(new_base.read_bytes(), str(new_base))
            assert {b"bloomFilterTypeCode", b"minRecordKey", b"maxRecordKey"} <= set(
                content.file_info
            )
            assert base64.b64decode(content.meta_blocks[b"bloomFilter"])[:4] == b"\xff" * 4
            # The compaction instant is newer than the data instant whose deltacommit
            # followed it (Hudi's order: services first, then the deltacommit).
            assert compacted > result.instant
            # Just compacted: nothing of the old slice is cleaned yet.
            assert hudi_base.exists() and all(log.exists() for log in old_logs)
        cleans = sorted(n.split("_")[0] for n in names if n.endswith(".clean"))
        if compacted is not None and not hudi_base.exists() and not seen_cleaned:
            seen_cleaned = True
            # Cleaned by an MDT clean that came at least 3 completed instants after the
            # compaction (Hudi's grace for readers of the old slice), with the logs of
            # the old slice.
            (clean,) = [c for c in cleans if c > compacted]
            between = [
                n
                for n in names
                if compacted < n.split("_")[0] < clean and "_" in n and n.count(".") == 1
            ]
            assert len(between) >= 3, between
            assert not any(log.exists() for log in old_logs)
        if compacted is None:
            assert hudi_base.exists()
    assert compacted is not None and seen_cleaned
    # Archival of the metadata table: the Hudi-written instants moved to the LSM
    # history; its latest compaction and every deltacommit after it stay active.
    names = _mdt_timeline(path)
    assert not any(n.startswith(("0000000000000000", "2026030716")) for n in names)
    assert list((path / MDT / ".hoodie/timeline/history").glob("*.parquet"))
    latest = max(n.split("_")[0] for n in names if n.endswith(".commit"))
    table = HudiTable.open(str(path))
    mdt = MetadataTableReader.of(table).timeline
    after = [i for i in mdt.instants if i.is_completed and i.requested_time > latest]
    data_after = [i for i in table.timeline.completed_writes if i.requested_time > latest]
    assert {i.requested_time for i in data_after} <= {i.requested_time for i in after}


def _write(spark, path: Path, rows: list[dict[str, Any]], **extra: object):  # type: ignore[no-untyped-def]
    from tests.test_spark_writer import frame, options

    opts = {k: str(v) for k, v in options("created", 9, "upsert", **extra).items()}
    return write(frame(spark, rows, False), str(path), opts)


def _readers_agree(path: Path, expected: dict[int, str]) -> None:
    ours = read_snapshot(HudiTable.open(str(path))).to_pylist()
    from tests.warehouse_rows import hudi_rs_rows

    theirs = hudi_rs_rows(str(path)).to_pylist()
    assert {r["id"]: r["name"] for r in ours} == expected
    assert {r["id"]: r["name"] for r in theirs} == expected


def _rows_of(ids: range, name: str) -> list[dict[str, Any]]:
    return [{"id": i, "p": "abc"[i % 3], "name": f"{name}{i}", "ts": 1} for i in ids]


def test_metadata_enable_true_creates_the_metadata_table_on_a_new_table(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "fresh"
    result = _write(spark, path, _rows_of(range(6), "v"), **{"hoodie.metadata.enable": "true"})
    props = (path / ".hoodie/hoodie.properties").read_text()
    assert "hoodie.table.metadata.partitions=files" in props
    mdt_props = (path / MDT / ".hoodie/hoodie.properties").read_text()
    for line in (
        "hoodie.table.name=created_metadata",
        "hoodie.table.type=MERGE_ON_READ",
        "hoodie.table.base.file.format=HFILE",
        "hoodie.populate.meta.fields=false",
        "hoodie.table.version=9",
        "hoodie.table.keygenerator.type=HOODIE_TABLE_METADATA",
    ):
        assert line in mdt_props
    names = _mdt_timeline(path)
    init = "00000000000000000"
    assert f"{init}.deltacommit.requested" in names and f"{init}.deltacommit.inflight" in names
    assert (path / MDT / f".hoodie/timeline/{init}.deltacommit.inflight").stat().st_size == 0
    assert any(n.startswith(f"{init}_") and n.endswith(".deltacommit") for n in names)
    assert any(n.startswith(f"{result.instant}_") for n in names)
    # Hudi's initial file group: an empty delete block's log, a base file of the (empty)
    # listing, then the first commit's log.
    files = sorted(p.name for p in (path / MDT / "files").iterdir())
    assert f".files-0000-0_{init}.log.1_0-0-0" in files
    assert f"files-0000-0_0-0-0_{init}.hfile" in files
    base = read_hfile((path / MDT / f"files/files-0000-0_0-0-0_{init}.hfile").read_bytes(), "b")
    assert [k for k, _ in base.entries] == [b"__all_partitions__"]
    _readers_agree(path, {i: f"v{i}" for i in range(6)})
    assert mdt_files(path) == listed_files(path)
    _write(spark, path, _rows_of(range(3, 9), "w"))
    _readers_agree(path, {i: f"v{i}" if i < 3 else f"w{i}" for i in range(9)})
    assert mdt_files(path) == listed_files(path)


def test_metadata_enable_true_bootstraps_an_existing_table_from_a_listing(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    import shutil

    path = tmp_path / "existing"
    _write(spark, path, _rows_of(range(6), "v"))
    _write(spark, path, _rows_of(range(2), "u"))
    assert not (path / MDT).exists()  # hudi_sync creates none unless asked
    expected = {i: f"u{i}" if i < 2 else f"v{i}" for i in range(6)}
    _write(spark, path, _rows_of(range(6, 8), "n"), **{"hoodie.metadata.enable": "true"})
    expected |= {6: "n6", 7: "n7"}
    # hudi-rs lists through the metadata table now: the rows of the two earlier commits
    # come from the bootstrap's listing, the last from its deltacommit.
    _readers_agree(path, expected)
    assert mdt_files(path) == listed_files(path)
    # Proof that hudi-rs reads our listing: the same table with the bootstrap's base file
    # listing nothing shows only the rows of the files the later deltacommit records.
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    (base,) = (copy / MDT / "files").glob("files-0000-0_*_00000000000000000.hfile")
    schema = read_hfile(base.read_bytes(), str(base)).file_info[b"schema"].decode()
    from hudi_sync.table.write.metadata_table.codec import files_metadata_record
    from hudi_sync.table.write.metadata_table.files_records import added_files_records

    empty = [files_metadata_record(r) for r in added_files_records({})]
    base.write_bytes(base_hfile(empty, 9, schema))
    from tests.warehouse_rows import hudi_rs_rows

    assert {r["id"] for r in hudi_rs_rows(str(copy)).to_pylist()} < set(expected)


def _all_partitions(path: Path) -> dict[str, Any]:
    reader = MetadataTableReader.of(HudiTable.open(str(path)))
    names = sorted(p.name for p in (path / MDT).iterdir() if p.is_dir() and p.name != ".hoodie")
    return {name: reader.read_partition(name) for name in names}


def test_a_compaction_a_crash_left_pending_is_finished_first_and_keeps_every_record(
    fixture_copy,  # type: ignore[no-untyped-def]
) -> None:
    from hudi_sync.storage import open_location
    from hudi_sync.table.write.metadata_table.compaction import plan_bytes, plan_operations
    from hudi_sync.table.write.metadata_table.services import (
        MetadataServicesSettings,
        run_table_services,
    )
    from hudi_sync.table.write.timeline import TimelineWriter
    from tests.warehouse_rows import hudi_rs_rows

    path = fixture_copy("cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    rows = rows_by_key(read_snapshot(table), "txn_id")
    before = _all_partitions(path)
    location = open_location(str(path))
    writer = TimelineWriter(location, str(path / MDT / ".hoodie/timeline"), 9)
    instant = writer.new_instant_time()
    operations = plan_operations(MetadataTableReader.of(table), instant)
    # File groups of every partition have logs after Hudi's compaction.
    assert {op["partitionPath"] for op in operations} == set(before)
    assert all(op["deltaFilePaths"] for op in operations)
    writer.request_compaction(instant, plan_bytes(operations))
    writer.mark_compaction_inflight(instant)
    number = next(i for i, op in enumerate(operations) if op["partitionPath"] == "files")
    partial = path / MDT / "files" / f"files-0000-0_{number}-0-{number}_{instant}.hfile"
    partial.write_bytes(b"half a file")  # the crash
    # Readers ignore the pending compaction's file.
    assert rows_by_key(hudi_rs_rows(str(path)), "txn_id") == rows
    assert mdt_files(path) == listed_files(path)
    run = run_table_services(
        location, table.timeline, writer, 9, MetadataServicesSettings(max_delta_commits=100)
    )
    assert run.compacted is None and run.cleaned is None  # finished, nothing new
    assert len(list((path / MDT / ".hoodie/timeline").glob(f"{instant}_*.commit"))) == 1
    assert read_hfile(partial.read_bytes(), str(partial)).entries
    # The compaction kept every record of every partition, and both readers list the
    # table through its new base files.
    assert _all_partitions(path) == before
    assert rows_by_key(read_snapshot(HudiTable.open(str(path))), "txn_id") == rows
    assert rows_by_key(hudi_rs_rows(str(path)), "txn_id") == rows
    assert mdt_files(path) == listed_files(path)


def test_the_compaction_instant_stays_before_a_data_instant_its_metadata_completed(
    fixture_copy,  # type: ignore[no-untyped-def]
) -> None:
    import shutil

    from hudi_sync.storage import open_location
    from hudi_sync.table.write.metadata_table.compaction import compaction_instant
    from hudi_sync.table.write.timeline import TimelineWriter

    path = fixture_copy("cow/v9_txns_simple_meta")
    location = open_location(str(path))
    mdt_folder = path / MDT / ".hoodie/timeline"
    writer = TimelineWriter(location, str(mdt_folder), 9)

    def instant() -> str | None:
        table = HudiTable.open(str(path))
        return compaction_instant(MetadataTableReader.of(table).timeline, table.timeline, writer)

    fresh = instant()
    assert fresh is not None and fresh > "20260307162458923"  # a new instant time
    # A data write whose metadata deltacommit completed, still pending on the data
    # timeline (it died in between): the compaction goes 1 ms before it.
    stuck = "20260307170000000"
    (path / ".hoodie/timeline" / f"{stuck}.commit.requested").write_bytes(b"")
    source = mdt_folder / "20260307162457540_20260307162458923.deltacommit"
    shutil.copy(source, mdt_folder / f"{stuck}_20260307170000500.deltacommit")
    assert instant() == "20260307165959999"
    # ... and none when a compaction of that time already completed.
    shutil.copy(source, mdt_folder / "20260307165959999_20260307170000600.commit")
    assert instant() is None


def test_our_compaction_plan_has_hudis_fields(unpack_table) -> None:  # type: ignore[no-untyped-def]
    """The MDT compaction plans Hudi wrote in the fixtures, written again by us, read back
    the same; our schema names the same fields (our operations carry the same metrics)."""
    import json

    from hudi_sync.table.write.metadata_table.compaction import plan_bytes

    checked = 0
    for fixture in fixture_tables():
        if "meta" not in fixture.name and "v8_trips" not in fixture.name:
            continue
        timeline = unpack_table(fixture) / MDT / ".hoodie/timeline"
        for plan_file in timeline.glob("*.compaction.requested"):
            reader = fastavro.reader(io.BytesIO(plan_file.read_bytes()))
            theirs = next(iter(reader))
            assert isinstance(theirs, dict)
            ours_bytes = plan_bytes(theirs["operations"])
            ours_reader = fastavro.reader(io.BytesIO(ours_bytes))
            assert next(iter(ours_reader)) == {**theirs, "extraMetadata": {}}
            their_fields = [f["name"] for f in json.loads(reader.metadata["avro.schema"])["fields"]]
            our_fields = [
                f["name"] for f in json.loads(ours_reader.metadata["avro.schema"])["fields"]
            ]
            assert our_fields == their_fields
            for op in theirs["operations"]:
                assert set(op["metrics"]) == {
                    "TOTAL_LOG_FILES",
                    "TOTAL_IO_MB",
                    "TOTAL_IO_READ_MB",
                    "TOTAL_LOG_FILES_SIZE",
                    "TOTAL_IO_WRITE_MB",
                }
            checked += 1
    assert checked >= 2
