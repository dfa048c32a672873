"""Two tables, one warehouse name: ``backfill`` and ``watch --root`` name a table by its
path (``sales-eu`` and ``sales_eu`` both give ``sales_eu``), and an explicit sync names it
as told. The first table holds the name; the other is refused in one line naming both
(within a run), or because the objects' marker names another base (across runs), never
silently replacing the first's objects; ``--force`` replaces objects of another base."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.sync.backfill import backfill
from hudi_sync.sync.hook import DUCKDB_DATABASE, SYNC_TOOLS
from hudi_sync.sync.watch import WatchEvent, watch
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import SyncMarker
from tests.fixture_tables import fixture_tables

FIRST, SECOND = "cow/v6_nonpartitioned", "cow/v8_nonpartitioned"


def _copy(unpack_table, suffix: str, target: Path) -> Path:  # type: ignore[no-untyped-def]
    fixture = next(t for t in fixture_tables() if t.name.endswith(suffix))
    shutil.copytree(unpack_table(fixture), target)
    return target


def _base(database: Path, view: str) -> str | None:
    """The base path the view's marker names (None: no such view)."""
    with duckdb.connect(str(database)) as con:
        rows = con.execute(
            "SELECT comment FROM duckdb_views() WHERE lower(view_name) = lower(?)", [view]
        ).fetchall()
    marker = SyncMarker.parse(str(rows[0][0])) if rows else None
    return marker.base if marker else None


def _options(database: Path) -> dict[str, str]:
    return {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(database)}


@pytest.mark.parametrize(
    ("first", "second", "name"),
    [
        ("sales-eu", "sales_eu", "sales_eu"),
        ("t*", "t?", "t_"),
        ("a/b_c", "a_b/c", "a_b_c"),
        ("Sales", "sales", "sales"),  # DuckDB's names ignore case
        ("a", "a_history", "a_history"),  # a's history view is a_history
    ],
)
def test_backfill_refuses_the_second_table_of_a_name(  # type: ignore[no-untyped-def]
    first: str, second: str, name: str, unpack_table, tmp_path: Path
) -> None:
    root = tmp_path / "lake"
    held = _copy(unpack_table, FIRST, root / first)
    refused = _copy(unpack_table, SECOND, root / second)
    database = tmp_path / "w.duckdb"
    reports = dict(backfill(str(root), _options(database)))
    assert reports[str(held)].ok, reports[str(held)].errors
    (error,) = reports[str(refused)].errors.values()
    assert len(error.splitlines()) == 1 and str(held) in error and str(refused) in error
    assert _base(database, name) == str(held)


def test_a_name_held_by_another_base_needs_force(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Across runs (another root, or a table moved): the objects' marker names the other
    base, so the sync is refused naming both; ``--force`` replaces them."""
    database = tmp_path / "w.duckdb"
    held = _copy(unpack_table, FIRST, tmp_path / "one" / "sales_eu")
    other = _copy(unpack_table, SECOND, tmp_path / "two" / "sales-eu")
    assert all(r.ok for _, r in backfill(str(tmp_path / "one"), _options(database)))
    ((_, report),) = backfill(str(tmp_path / "two"), _options(database))
    (error,) = report.errors.values()
    assert len(error.splitlines()) == 1 and str(held) in error and str(other) in error
    assert "--force" in error and report.taken_at == (f"duckdb:{database}",)
    assert _base(database, "sales_eu") == str(held)
    ((_, forced),) = backfill(str(tmp_path / "two"), _options(database), replace_other_table=True)
    assert forced.ok, forced.errors
    assert _base(database, "sales_eu") == str(other)


def test_backfill_cli_force(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    database = tmp_path / "w.duckdb"
    held = _copy(unpack_table, FIRST, tmp_path / "one" / "t")
    other = _copy(unpack_table, SECOND, tmp_path / "two" / "t")
    conf = ["-c", "hoodie.meta.sync.client.tool.class=duckdb"]
    conf += ["-c", f"hoodie.duckdb.sync.database={database}", "--json"]
    assert CliRunner().invoke(app, ["backfill", str(tmp_path / "one"), *conf]).exit_code == 0
    refused = CliRunner().invoke(app, ["backfill", str(tmp_path / "two"), *conf])
    assert refused.exit_code == 1
    row, _summary = (json.loads(line) for line in refused.stdout.splitlines())
    assert str(held) in row["errors"] and _base(database, "t") == str(held)
    forced = CliRunner().invoke(app, ["backfill", str(tmp_path / "two"), *conf, "--force"])
    assert forced.exit_code == 0, forced.output
    assert _base(database, "t") == str(other)


def test_sync_cli_refuses_another_tables_objects_without_force(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    database = tmp_path / "w.duckdb"
    held = _copy(unpack_table, FIRST, tmp_path / "dev" / "trips")
    other = _copy(unpack_table, SECOND, tmp_path / "prod" / "trips")
    args = ["--database", str(database), "--table", "trips"]
    first = CliRunner().invoke(app, ["sync", "duckdb", str(held), *args])
    assert first.exit_code == 0, first.output
    refused = CliRunner().invoke(app, ["sync", "duckdb", str(other), *args])
    assert refused.exit_code != 0
    assert len(refused.output.strip().splitlines()) == 1, refused.output
    assert str(held) in refused.output and str(other) in refused.output
    assert _base(database, "trips") == str(held)
    forced = CliRunner().invoke(app, ["sync", "duckdb", str(other), *args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert _base(database, "trips") == str(other)


def test_watch_root_reports_the_second_table_every_poll(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """Under ``watch --root`` the holder syncs and the other table gets an error event at
    each of its polls: the views never flip between the two."""
    root = tmp_path / "lake"
    held = _copy(unpack_table, FIRST, root / "sales-eu")
    refused = _copy(unpack_table, SECOND, root / "sales_eu")
    database = tmp_path / "w.duckdb"
    events: list[WatchEvent] = []
    bases: list[str | None] = []
    stop = threading.Event()

    def on_event(event: WatchEvent) -> None:
        events.append(event)
        bases.append(_base(database, "sales_eu"))
        errors = sum(e.event == "error" for e in events)
        if errors >= 3 or sum(e.event == "sync" for e in events) >= 2:
            stop.set()  # three refusals (or a wrong second sync)

    watch(
        roots=[str(root)],
        options=_options(database),
        interval=0.01,
        max_backoff=0.01,
        stop=stop,
        on_event=on_event,
    )
    errors = [e for e in events if e.event == "error"]
    assert len(errors) == 3 and {e.table for e in errors} == {str(refused)}
    assert all(str(held) in (e.error or "") for e in errors)
    assert [e.table for e in events if e.event == "sync"] == [str(held)]
    assert set(bases[bases.index(str(held)) :]) == {str(held)}
    assert HudiTable.open(str(refused)).latest_instant() is not None


# -- Snowflake (emulated: fakesnow, external tables over moto S3) ------------------------


def _snowflake_options() -> dict[str, str]:
    from hudi_sync.warehouse.snowflake import PREFIX

    options = {"database": "hudi", "schema": "lake", "storage_integration": "hudi_s3"}
    return {SYNC_TOOLS: "snowflake", **{PREFIX + k: v for k, v in options.items()}}


def test_snowflake_names_discovered_tables_by_their_paths(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation, tmp_path: Path
) -> None:
    """``dev/trips`` and ``prod/trips`` have one ``hoodie.table.name``: each gets the view
    its path names, as in DuckDB and BigQuery, not the second replacing the first."""
    from tests.test_snowflake_target import _view_comment

    bucket = s3_server.make_bucket()
    uris = {}
    for env in ("dev", "prod"):
        local = _copy(unpack_table, FIRST, tmp_path / env / "trips")
        uris[env] = s3_server.upload_dir(local, bucket, f"lake/{env}/trips")
    names = {HudiTable.open(u, s3_server.storage_options).config.name for u in uris.values()}
    assert len(names) == 1  # one Hudi table name for both
    reports = backfill(f"s3://{bucket}/lake", _snowflake_options(), s3_server.storage_options)
    assert [r.ok for _, r in reports] == [True, True], [r.errors for _, r in reports]
    for env, uri in uris.items():
        assert f" base={uri}/ mode=view" in _view_comment(f"{env}_trips")


def test_snowflake_refuses_another_bases_view_without_force(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation, tmp_path: Path
) -> None:
    from hudi_sync.errors import BadInputError
    from hudi_sync.sync.job import sync_table
    from tests.test_snowflake_target import _target, _view_comment

    bucket = s3_server.make_bucket()
    tables = []
    for env, suffix in (("dev", FIRST), ("prod", SECOND)):
        local = _copy(unpack_table, suffix, tmp_path / env / "trips")
        uri = s3_server.upload_dir(local, bucket, f"lake/{env}/trips")
        tables.append(HudiTable.open(uri, s3_server.storage_options))
    held, other = tables
    assert sync_table(held, [_target()]).ok
    with pytest.raises(BadInputError) as refused:
        sync_table(other, [_target()])
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and held.uri in message and other.uri in message
    assert f" base={held.uri}/ mode=view" in _view_comment("trips")
    assert sync_table(other, [_target()], replace_other_table=True).ok
    assert f" base={other.uri}/ mode=view" in _view_comment("trips")
