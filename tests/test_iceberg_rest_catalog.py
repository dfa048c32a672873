"""The ``iceberg`` target through an Iceberg REST catalog
(``hudi_sync.warehouse.iceberg.rest_catalog`` and ``rest_sync``).

No REST catalog server can run here (the real ones need Java or a service), so the
server is a stand-in: ``tests/iceberg_rest_server.py`` serves the REST spec's routes over
pyiceberg's real ``SqlCatalog``, parsing each commit with pyiceberg's own request,
requirement and update models and applying it with ``SqlCatalog.commit_table``. So the
commit rules a sync must satisfy are pyiceberg's, and the reader is pyiceberg's own
``RestCatalog`` client: after each sync it loads the table from the server and reads
it, and what it reads must be the rows of the Hudi table written (a model of the
writes), snapshot for snapshot as the store published them.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog
from typer.testing import CliRunner

from hudi_sync import config as cfg
from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.manifest.iceberg.metadata import TableMetadata
from hudi_sync.manifest.iceberg.store import IcebergStore
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.sync.hook import checked_target_names, run_post_commit_hook
from hudi_sync.sync.job import publish_manifest, sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import OtherTableError
from hudi_sync.warehouse.iceberg import CatalogConflictError, IcebergTarget, RestCatalog, TableId
from hudi_sync.warehouse.iceberg.rest_catalog import requirements, updates
from tests.iceberg_readers import pyiceberg_rows
from tests.iceberg_rest_server import ServerState, rest_catalog_server

runner = CliRunner()
TOKEN = "tok-3f9a-secret"
METADATA = Path(".hoodie") / "manifest" / "iceberg" / "metadata"


def _options() -> dict[str, object]:
    return {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.metadata.enable": "false",
    }


class Model:
    """The table as written: id -> its latest row (a wrong publication reads otherwise)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[int, tuple[str, str | None]] = {}

    def write(self, ids: list[int], ts: int, extra: bool = False) -> str:
        columns: dict[str, pa.Array] = {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([f"p{i % 3}" for i in ids]),
            "v": pa.array([f"v{ts}-{i}" for i in ids]),
            "ts": pa.array([ts] * len(ids), pa.int64()),
        }
        if extra:  # a column added by a later write (schema evolution)
            columns["w"] = pa.array([f"w{i}" for i in ids])
        for i in ids:
            self.rows[i] = (f"v{ts}-{i}", f"w{i}" if extra else None)
        return write_arrow(pa.table(columns), str(self.path), _options()).instant

    def expected(self, with_w: bool) -> list[tuple[Any, ...]]:
        return sorted((i, v, *((w,) if with_w else ())) for i, (v, w) in self.rows.items())


def _rows(rows: pa.Table) -> list[tuple[Any, ...]]:
    names = [n for n in ("id", "v", "w") if n in rows.column_names]
    return sorted(zip(*(rows.column(n).to_pylist() for n in names), strict=True))


def _client(url: str, token: str | None = TOKEN) -> PyIcebergRestCatalog:
    """pyiceberg's own REST client on the stand-in server."""
    return PyIcebergRestCatalog("reader", uri=url, **({"token": token} if token else {}))


def _sync(target: IcebergTarget, path: Path, keep: int, **kwargs: Any) -> tuple[Any, Any]:
    """One sync to ``target`` alone (``sync_table``): its plan and result; a failure
    raises as the CLI's does."""
    report = sync_table(HudiTable.open(str(path)), [target], keep=keep, **kwargs)
    return report.plans[0], report.results[0]


def _ours(path: Path, result: Any) -> TableMetadata:
    location = result.iceberg["metadata_location"]
    return TableMetadata.read((path / METADATA / location.rsplit("/", 1)[-1]).read_bytes(), "m")


def test_register_then_commits_read_by_pyiceberg_rest_client(tmp_path: Path) -> None:
    """Register, then five syncs (one adds a column, one reruns the same instant), with
    two snapshots kept: after each pyiceberg's REST client loads the table and reads the
    model's rows; the catalog holds exactly the snapshots our metadata keeps (the ones
    our publication expired are gone there too), ``main`` is ours, each snapshot's
    ``hudi.instant`` its write's, and the previous snapshot reads as it was."""
    path = tmp_path / "t"
    model = Model(path)
    keep = 2
    with rest_catalog_server(tmp_path, token=TOKEN) as (url, state):
        target = IcebergTarget(str(path), url, table_name="trips", token=TOKEN)
        previous: tuple[int, list[tuple[Any, ...]]] | None = None
        for step in range(5):
            extra = step >= 3
            if step != 4:  # the last sync reruns the previous instant
                instant = model.write([step * 2 + k for k in range(4)], step, extra=extra)
            commits = state.commits
            plan, result = _sync(target, path, keep)
            ours = _ours(path, result)
            assert ours.current_snapshot is not None
            if step == 0:
                assert plan.action == "create" and any("/register" in s for s in plan.steps)
            elif step == 4:
                assert plan.action == "noop" and state.commits == commits
            else:
                assert plan.action == "update" and state.commits == commits + 1
                assert (
                    f"assert-ref-snapshot-id main={previous[0] if previous else None}"
                    in (plan.steps[0])
                )
            if step == 3:  # the column ``w`` arrives: a new schema
                assert "add-schema" in plan.steps[0] and "set-current-schema" in plan.steps[0]
            loaded = _client(url).load_table(("default", "trips"))
            assert loaded.metadata_location == result.iceberg["catalog_metadata_location"]
            assert loaded.metadata.table_uuid.hex == ours.uuid.replace("-", "")
            assert loaded.metadata.current_snapshot_id == ours.current_snapshot_id
            assert {s.snapshot_id for s in loaded.metadata.snapshots} == {
                s.snapshot_id for s in ours.snapshots
            }
            assert len(ours.snapshots) == min(step + 1, keep, 4)
            current = loaded.current_snapshot()
            assert current is not None and current.summary is not None
            assert current.summary["hudi.instant"] == instant
            expected = model.expected(with_w=extra)
            assert _rows(loaded.scan().to_arrow()) == expected
            assert _rows(pyiceberg_rows(result.iceberg["metadata_location"])) == expected
            if previous is not None and previous[0] != current.snapshot_id:
                back = loaded.scan(snapshot_id=previous[0]).to_arrow()
                assert _rows(back.select([c for c in back.column_names if c != "w"])) == [
                    r[:2] for r in previous[1]
                ]
            previous = (current.snapshot_id, expected)
        # Every request carried the token; the configured prefix and warehouse were used.
        assert all(auth == f"Bearer {TOKEN}" for _, _, auth in state.requests)
        assert ("GET", "/v1/config?warehouse=hudi_sync", f"Bearer {TOKEN}") in state.requests
        assert all(p.startswith(("/v1/config", "/v1/lake/")) for _, p, _ in state.requests)
    # The catalog wrote its metadata files in the store's metadata folder, not the table's.
    assert not (path / "metadata").exists()


def _other_sync_commit(url: str, path: Path, location: str) -> None:
    """What a slower sync of an older instant commits: the catalog's table to the
    metadata ``location`` the store published for it."""
    catalog = RestCatalog(url, token=TOKEN)
    table_id = TableId("hudi_sync", "default", "trips")
    loaded = catalog.load(table_id)
    assert loaded is not None
    ours = TableMetadata.read((path / METADATA / location.rsplit("/", 1)[-1]).read_bytes(), "m")
    folder = HudiTable.open(str(path)).location.uri_of(METADATA.as_posix())
    catalog.commit(table_id, requirements(loaded), updates(loaded, ours, folder))


def test_a_race_with_an_older_sync_of_ours_is_retried_once(tmp_path: Path) -> None:
    """Between this sync's read (main = snapshot 1) and its commit, a slower sync of the
    previous instant commits snapshot 2: the commit gets 409, re-reads, sees an older
    snapshot of ours and retries once from it; the catalog ends on snapshot 3."""
    path = tmp_path / "t"
    model = Model(path)
    with rest_catalog_server(tmp_path, token=TOKEN) as (url, state):
        target = IcebergTarget(str(path), url, table_name="trips", token=TOKEN)
        model.write([1, 2, 3], 1)
        _sync(target, path, 5)
        model.write([3, 4], 2)
        table = HudiTable.open(str(path))
        second = IcebergStore(table, 5).publish(publish_manifest(table, keep=5))
        model.write([4, 5], 3)
        state.before_commit = lambda: _other_sync_commit(url, path, second.metadata_location)
        plan, _ = _sync(target, path, 5)
        assert state.conflicts == 1 and plan.action == "update"
        assert plan.reason == "retried once after another sync's commit"
        assert "assert-ref-snapshot-id main=2" in plan.steps[0]  # the retry's
        loaded = _client(url).load_table(("default", "trips"))
        assert [s.snapshot_id for s in loaded.metadata.snapshots] == [1, 2, 3]
        assert loaded.metadata.current_snapshot_id == 3
        assert _rows(loaded.scan().to_arrow()) == model.expected(with_w=False)
        # Another sync of the very snapshot this one commits wins the race: the re-read
        # finds it on main, and nothing is left to do.
        model.write([6], 4)
        table = HudiTable.open(str(path))
        fourth = IcebergStore(table, 5).publish(publish_manifest(table, keep=5))
        state.before_commit = lambda: _other_sync_commit(url, path, fourth.metadata_location)
        plan, _ = _sync(target, path, 5)
        assert state.conflicts == 2 and plan.action == "noop"
        loaded = _client(url).load_table(("default", "trips"))
        assert loaded.metadata.current_snapshot_id == 4
        assert _rows(loaded.scan().to_arrow()) == model.expected(with_w=False)


def _append_by_another_writer(url: str) -> None:
    """pyiceberg, another writer, appends a row to the catalog's table."""
    table = _client(url).load_table(("default", "trips"))
    rows = table.scan(limit=1).to_arrow()
    table.append(rows.cast(table.schema().as_arrow()))


def test_another_writers_commit_is_refused_then_replaced_only_by_force(tmp_path: Path) -> None:
    """pyiceberg appends to the catalog's table between this sync's read and commit:
    the 409 is re-read, main shows another writer's snapshot, and the commit is refused
    in one line (the catalog stays as the other writer left it). The next sync is
    refused before it commits anything; ``force`` drops the entry and registers ours."""
    path = tmp_path / "t"
    model = Model(path)
    with rest_catalog_server(tmp_path, token=TOKEN) as (url, state):
        target = IcebergTarget(str(path), url, table_name="trips", token=TOKEN)
        model.write([1, 2], 1)
        _sync(target, path, 5)
        model.write([2, 3], 2)
        state.before_commit = lambda: _append_by_another_writer(url)
        with pytest.raises(CatalogConflictError) as refused:
            _sync(target, path, 5)
        message = str(refused.value)
        assert "\n" not in message and "another writer's snapshot" in message
        assert url in message and TOKEN not in message
        loaded = _client(url).load_table(("default", "trips"))
        theirs = loaded.metadata.current_snapshot_id
        assert theirs not in (1, 2) and loaded.scan().to_arrow().num_rows == 3
        model.write([5], 3)
        with pytest.raises(OtherTableError) as other:
            _sync(target, path, 5)
        assert "\n" not in str(other.value) and f"snapshot {theirs}" in str(other.value)
        # The catalog is left as the other writer left it (the table's own Iceberg
        # metadata, like its manifest, is published before any target runs).
        assert _client(url).load_table(("default", "trips")).metadata.current_snapshot_id == theirs
        plan, _ = _sync(target, path, 5, force=True)
        assert plan.action == "recreate" and plan.steps[0].startswith("DELETE ")
        loaded = _client(url).load_table(("default", "trips"))
        assert _rows(loaded.scan().to_arrow()) == model.expected(with_w=False)


def test_dry_run_plans_without_committing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    model = Model(path)
    with rest_catalog_server(tmp_path) as (url, state):
        target = IcebergTarget(str(path), url, table_name="trips")
        model.write([1], 1)
        plan, _ = _sync(target, path, 5, dry_run=True)
        assert plan.action == "create" and "/register" in plan.steps[-1]
        assert not any(m == "POST" for m, _, _ in state.requests)
        _sync(target, path, 5)
        model.write([2], 2)
        posts = sum(m == "POST" for m, _, _ in state.requests)
        plan, result = _sync(target, path, 5, dry_run=True)
        assert result.action == "dry-run" and "assert-ref-snapshot-id main=1" in plan.steps[0]
        assert sum(m == "POST" for m, _, _ in state.requests) == posts


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("http://", "http(s)://host"),
        ("https://user:pw@catalog.example/api", "credentials in the catalog URI"),
        ("http://catalog.example/api?x=1", "no query"),
        ("http://catalog.example:99999/", "not a valid port"),
    ],
)
def test_a_bad_rest_uri_is_refused_in_one_line(uri: str, expected: str) -> None:
    key = cfg.ICEBERG_CATALOG_URI.key
    with pytest.raises(BadInputError) as refused:
        IcebergTarget("/t", uri, table_name="t")
    message = str(refused.value)
    assert expected in message and key in message and "\n" not in message
    assert "user:pw" not in message
    with pytest.raises(BadInputError, match="catalog"):
        checked_target_names({cfg.SYNC_TOOLS.key: "iceberg", key: uri})


def test_http_errors_and_tokens_are_one_line(tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "t"
    Model(path).write([1], 1)
    key_file, key_env = cfg.ICEBERG_CATALOG_TOKEN_FILE.key, cfg.ICEBERG_CATALOG_TOKEN_ENV.key
    table = HudiTable.open(str(path))
    with rest_catalog_server(tmp_path, token=TOKEN) as (url, state):
        base = {cfg.ICEBERG_CATALOG_URI.key: url}
        # A wrong token: 401, one line naming the catalog and the status, no token.
        monkeypatch.setenv("WRONG_TOKEN", "not-the-token")
        target = IcebergTarget.from_options({**base, key_env: "WRONG_TOKEN"}, table)
        with pytest.raises(HudiSyncError) as refused:
            _sync(target, path, 5)
        message = str(refused.value)
        assert "HTTP 401" in message and url in message and "\n" not in message
        assert "not-the-token" not in message
        # The token from a file works; the file's token never shows in the plan.
        token_file = tmp_path / "token"
        token_file.write_text(TOKEN + "\n")
        target = IcebergTarget.from_options({**base, key_file: str(token_file)}, table)
        plan, _ = _sync(target, path, 5)
        assert plan.action == "create" and TOKEN not in json.dumps(plan.steps)
        assert TOKEN not in repr(target.rest)
        # HTTP 500: one line naming the catalog, the request and the status.
        state.force_status = 500
        with pytest.raises(HudiSyncError) as failed:
            _sync(target, path, 5)
        message = str(failed.value)
        assert "HTTP 500" in message and url in message and "\n" not in message
        assert "the server failed on purpose" in message
    # Nothing listens any more: one line saying the catalog cannot be reached.
    with pytest.raises(HudiSyncError) as unreachable:
        _sync(IcebergTarget(str(path), url, table_name="trips"), path, 5)
    assert "is it reachable?" in str(unreachable.value) and url in str(unreachable.value)
    # Token options: a missing variable, an empty file, both, a token for SQL.
    cases = [
        ({**base, key_env: "NO_SUCH_VARIABLE_H7"}, "no such environment variable"),
        ({**base, key_file: str(tmp_path / "missing")}, "cannot read"),
        ({**base, key_file: str(token_file), key_env: "X"}, "both set"),
        (
            {cfg.ICEBERG_CATALOG_URI.key: "sqlite:///c.db", key_file: str(token_file)},
            "REST catalog",
        ),
    ]
    (tmp_path / "empty").write_text("\n")
    cases.append(({**base, key_file: str(tmp_path / "empty")}, "holds no token"))
    monkeypatch.setenv("H7_ODD_TOKEN", "t\u00f8ken with space")  # no header carries it
    cases.append(({**base, key_env: "H7_ODD_TOKEN"}, "holds no token"))
    for options, expected in cases:
        with pytest.raises(BadInputError) as bad:
            IcebergTarget.from_options(options, table)
        assert expected in str(bad.value) and "\n" not in str(bad.value)
        assert TOKEN not in str(bad.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_cli_sync_iceberg_to_a_rest_catalog(tmp_path: Path, monkeypatch: Any) -> None:
    """``hudi-sync sync iceberg URI --catalog-uri http://... --json`` registers, then
    commits; the report names the published metadata and the catalog's; pyiceberg reads
    the model's rows; ``--as-of`` registers its own table; the token never prints."""
    path = tmp_path / "t"
    model = Model(path)
    monkeypatch.setenv("H7_CATALOG_TOKEN", TOKEN)
    with rest_catalog_server(tmp_path, prefix="warehouse/a", token=TOKEN) as (url, _state):
        args = ["sync", "iceberg", str(path), "--catalog-uri", url]
        args += ["--catalog-token-env", "H7_CATALOG_TOKEN", "--table", "cli_trips", "--json"]
        first = model.write([1, 2], 1)
        locations = []
        for ids, ts in (([], 0), ([2, 3], 2)):
            if ids:
                model.write(ids, ts)
            result = runner.invoke(app, args)
            assert result.exit_code == 0, result.output
            assert TOKEN not in result.output
            report = json.loads(result.stdout)["iceberg"]
            loaded = _client(url).load_table(("default", "cli_trips"))
            assert loaded.metadata_location == report["catalog_metadata_location"]
            assert _rows(loaded.scan().to_arrow()) == model.expected(with_w=False)
            locations.append(report["metadata_location"])
        assert locations[0] != locations[1]
        result = runner.invoke(app, [*args, "--as-of", first])
        assert result.exit_code == 0, result.output
        as_of = _client(url).load_table(("default", f"cli_trips_as_of_{first}"))
        assert sorted(as_of.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    closed = f"http://127.0.0.1:{_free_port()}"
    result = runner.invoke(app, ["sync", "iceberg", str(path), "--catalog-uri", closed])
    assert result.exit_code != 0
    assert len(result.stderr.strip().splitlines()) == 1 and closed in result.stderr


def test_the_hook_commits_to_the_rest_catalog(tmp_path: Path, monkeypatch: Any) -> None:
    """The post-commit hook (as ``watch`` and ``backfill`` build it) reads the REST
    catalog and its token from the options and commits each write."""
    path = tmp_path / "t"
    model = Model(path)
    monkeypatch.setenv("H7_HOOK_TOKEN", TOKEN)
    with rest_catalog_server(tmp_path, token=TOKEN) as (url, _state):
        options = {
            cfg.SYNC_TOOLS.key: "iceberg",
            cfg.ICEBERG_CATALOG_URI.key: url,
            cfg.ICEBERG_CATALOG_TOKEN_ENV.key: "H7_HOOK_TOKEN",
            cfg.ICEBERG_NAMESPACE.key: "hooked",
        }
        for ts in (1, 2):
            model.write([ts, ts + 1], ts)
            report = run_post_commit_hook(str(path), options)
            assert report.ok, report.errors
            loaded = _client(url).load_table(("hooked", "trips"))
            assert (
                loaded.metadata_location == report.to_json()["iceberg"]["catalog_metadata_location"]
            )
            assert _rows(loaded.scan().to_arrow()) == model.expected(with_w=False)


def test_the_client_reads_401_and_404_as_the_spec_means_them(tmp_path: Path) -> None:
    """A request without the token is refused (401, one line); a table that is not
    registered is no table (404), not an error."""
    with rest_catalog_server(tmp_path, token=TOKEN) as (url, state):
        assert isinstance(state, ServerState)
        catalog = RestCatalog(url, token=None)
        with pytest.raises(HudiSyncError, match="HTTP 401"):
            catalog.load(TableId("c", "default", "x"))
        catalog = RestCatalog(url, token=TOKEN)
        assert catalog.load(TableId("c", "default", "x")) is None  # 404: not registered


def test_without_requests_the_cli_names_the_iceberg_extra(tmp_path: Path, monkeypatch: Any) -> None:
    """A plain install has no ``requests``: a sync to a REST catalog says in one line to
    install the iceberg extra (scripts/install_check.sh proves it in a real plain venv)."""
    path = tmp_path / "t"
    Model(path).write([1], 1)
    monkeypatch.setitem(sys.modules, "requests", None)  # import requests fails
    result = runner.invoke(
        app, ["sync", "iceberg", str(path), "--catalog-uri", "http://127.0.0.1:9/"]
    )
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("pip install 'hudi-sync[iceberg]'"), lines
    assert not (path / METADATA).exists()  # refused before anything is published
