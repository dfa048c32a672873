"""Time travel (RFC-07): accepted spellings, mapping to commits, and Hudi's refusals."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

from hudi_sync.errors import TimeTravelError
from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.time_travel import to_instant_time
from tests import hudi_oracle
from tests.test_spark_crash_and_concurrency import _child
from tests.test_spark_writer import frame, options
from tests.timeline_files import write_clean
from tests.warehouse_rows import hudi_rs_rows

UTC = dt.UTC
PLUS_TWO = dt.timezone(dt.timedelta(hours=2))


@pytest.mark.parametrize(
    ("value", "zone", "expected"),
    [
        ("20240418173550988", UTC, "20240418173550988"),
        ("20240418173550", UTC, "20240418173550"),
        ("2024-04-18 17:35:50.988", UTC, "20240418173550988"),
        ("2024-04-18 17:35:50", UTC, "20240418173550999"),
        ("2024-04-18", UTC, "20240418000000000"),
        ("2024-04-18T17:35:50.988Z", UTC, "20240418173550988"),
        ("2024-04-18T19:35:50.988+02:00", UTC, "20240418173550988"),
        ("2024-04-18T17:35:50.988+00:00", PLUS_TWO, "20240418193550988"),
        ("1713461750", UTC, "20240418173550000"),
        ("1713461750988", UTC, "20240418173550988"),
        ("1713461750988123", UTC, "20240418173550988"),
        ("1713461750988123456", UTC, "20240418173550988"),
    ],
)
def test_accepted_spellings(value: str, zone: dt.tzinfo, expected: str) -> None:
    assert to_instant_time(value, zone) == expected


@pytest.mark.parametrize(
    "value",
    ["yesterday", "2024-13-01", "20241301000000000", "2024-04-18T17:35:50", "12345", "2024/04/18"],
)
def test_rejected_spellings(value: str) -> None:
    with pytest.raises(TimeTravelError, match=repr(value).replace("(", r"\(")):
        to_instant_time(value, UTC)


def _slices(table: HudiTable, as_of: str) -> list[dict[str, object]]:
    return sorted((s.to_json() for s in table.file_slices(as_of=as_of)), key=lambda r: r["file_id"])  # type: ignore[arg-type, return-value]


def test_every_spelling_selects_the_commit_at_or_before_it(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.table.timeline.timezone=UTC\n")
    table = HudiTable.open(str(path))
    first, second = (i.requested_time for i in table.completed_commits())
    assert (first, second) == ("20240418172802262", "20240418172804498")
    at_first = hudi_oracle.slices(str(path), as_of=first)
    at_second = hudi_oracle.slices(str(path), as_of=second)
    assert at_first != at_second
    for value, expected in [
        ("2024-04-18 17:28:02.262", at_first),
        ("2024-04-18 17:28:03", at_first),  # .999 of second :03 is still before :04.498
        ("2024-04-18 17:28:04", at_second),  # missing millis mean .999 (Hudi)
        ("2024-04-18T17:28:04.497Z", at_first),
        ("2024-04-18T19:28:04.498+02:00", at_second),
        ("1713461284", at_first),
        ("1713461284498", at_second),
        ("2024-04-19", at_second),
    ]:
        got = sorted(
            (s.to_json() for s in table.file_slices(as_of=value)),
            key=lambda r: (r["partition_path"], r["file_id"]),
        )
        assert got == expected, value
    assert table.as_of_commit("2024-04-18 17:28:03") == first
    assert table.as_of_commit("2099-01-01") == second


def test_before_first_commit_is_empty(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    table = HudiTable.open(str(fixture_copy("cow/v8_complexkeygen_hivestyle")))
    assert table.file_slices(as_of="2020-01-01") == []
    assert table.as_of_commit("2020-01-01") is None


def test_at_or_after_a_pending_commit_is_refused(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v8_nonpartitioned")
    timeline = path / ".hoodie" / "timeline"
    (timeline / "20260101000000000.commit.requested").write_bytes(b"")
    (timeline / "20260101000000000.inflight").write_bytes(b"")
    table = HudiTable.open(str(path))
    with pytest.raises(
        TimeTravelError, match="earlier than the first incomplete commit 20260101000000000"
    ):
        table.file_slices(as_of="20260101000000000")
    with pytest.raises(TimeTravelError, match="first incomplete commit"):
        table.file_slices(as_of="2026-06-01")
    latest = table.completed_commits()[-1].requested_time
    assert table.file_slices(as_of="20251231235959999") == table.file_slices(as_of=latest)


def test_pending_clustering_does_not_block_time_travel(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v9_txns_simple_meta")
    (path / ".hoodie" / "timeline" / "20270101000000000.clustering.requested").write_bytes(b"")
    table = HudiTable.open(str(path))
    assert table.file_slices(as_of="2028-01-01") == table.file_slices()


def test_cleaned_instant_is_refused(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    timeline = path / ".hoodie" / "timeline"
    first, second = sorted(p.name.split("_")[0] for p in timeline.glob("*_*.commit"))
    write_clean(timeline, "20260101000000000", second, "20260101000000000_20260101000000500.clean")
    table = HudiTable.open(str(path))
    with pytest.raises(TimeTravelError, match=f"cleaner retains commits from {second}"):
        table.file_slices(as_of=first)
    assert table.file_slices(as_of=second) == table.file_slices()


def test_repeatable_reads(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """One ``as.of.instant`` read before, during and after concurrent commits (a writer in
    another process held with its files written and its commit inflight, a commit from
    this one meanwhile) and after a clean of file versions it does not need: the same rows
    from the same files every time, and hudi-rs's."""
    path, flag = tmp_path / "t", tmp_path / "go"
    seed = [{"id": i, "p": p, "name": f"n{i}", "ts": 1} for i, p in enumerate("aab")]
    write(frame(spark, seed, False), str(path), options("t", 6, "upsert"))
    as_of = write(
        frame(spark, [{"id": 1, "p": "a", "name": "v2", "ts": 2}], False),
        str(path),
        options("t", 6, "upsert"),
    ).instant
    write(
        frame(spark, [{"id": 0, "p": "a", "name": "v3", "ts": 3}], False),
        str(path),
        options("t", 6, "upsert"),
    )
    columns = ["_hoodie_commit_time", "_hoodie_file_name", "id", "p", "name", "ts"]

    def rows_as_of() -> list[tuple[object, ...]]:
        frame_ = read(spark, str(path), {"as.of.instant": as_of}).select(*columns)
        return sorted(tuple(r) for r in frame_.collect())

    def hudi_rs_as_of() -> list[tuple[object, ...]]:
        table = hudi_rs_rows(str(path), as_of=as_of).select(columns)
        return sorted(tuple(r.values()) for r in table.to_pylist())

    before = rows_as_of()
    assert before == hudi_rs_as_of()
    assert {r[2]: r[4] for r in before} == {0: "n0", 1: "v2", 2: "n2"}

    slow = _child(path, "slow", flag)  # upserts ids 1 and 9 in partition a
    deadline = time.monotonic() + 300
    while not Path(f"{flag}.ready").exists():
        assert slow.poll() is None, slow.communicate()[1][-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert HudiTable.open(str(path)).timeline.pending, "the other writer's commit is inflight"
    assert rows_as_of() == before
    write(
        frame(spark, [{"id": 2, "p": "b", "name": "v4", "ts": 4}], False),
        str(path),
        options("t", 6, "upsert"),
    )
    assert rows_as_of() == before
    flag.touch()
    _, err = slow.communicate(timeout=300)
    assert slow.returncode == 0, err[-2000:]
    assert rows_as_of() == before

    # Keep five commits: the clean retains commits from `as_of` on and deletes the file
    # versions only older queries read (the first commit's, rewritten by `as_of`).
    parquet_before = set(path.rglob("*.parquet"))
    write(
        frame(spark, [{"id": 0, "p": "a", "name": "v5", "ts": 5}], False),
        str(path),
        options("t", 6, "upsert", **{"hoodie.cleaner.commits.retained": 5}),
    )
    table = HudiTable.open(str(path))
    clean = table.timeline.latest_clean()
    assert clean is not None
    assert table.timeline.clean_metadata(clean).earliest_commit_to_retain == as_of
    assert parquet_before - set(path.rglob("*.parquet")), "the clean deleted file versions"
    assert rows_as_of() == before
    assert hudi_rs_as_of() == before
