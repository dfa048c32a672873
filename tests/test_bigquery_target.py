"""BigQuery target against the local-bigquery emulator and fake-gcs-server.

What the emulator cannot do, and how these tests get around it:

- External tables store their configuration exactly but read no files. So each test
  asserts the stored external configuration exactly, then *materialises* it: the external
  table is replaced by a native table of the same name, loaded by the emulator's own
  load job from the same source URIs, schema and hive options. The view we created is
  then queried through the emulator, unchanged, and must show hudi-rs's snapshot.
- Manifest-file tables (``NEW_LINE_DELIMITED_MANIFEST``) are loaded from the URIs the
  published manifest lists (a load job ignores the file-set type).
- The ``_FILE_NAME`` pseudo column does not exist, so tables without meta fields are
  checked by their stored configuration and view text only.
- The emulator accepts several wildcards per URI and any hive layout; BigQuery does not,
  so the URIs are also checked against BigQuery's rules here (one ``*``, never ``.hoodie``).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.manifest.snapshot import ManifestStore
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery import (
    MANIFEST_FILE_SET,
    BigQuerySyncConfig,
    BigQueryTarget,
)
from tests.bigquery_emulator import materialise
from tests.fixture_tables import fixture_tables
from tests.growing_timeline import growing_timeline
from tests.objectstores import GcsStore
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

NON_EMPTY = [t for t in fixture_tables() if "empty" not in t.name]
WITH_META = [t for t in NON_EMPTY if "no_metafields" not in t.name]


class Uploaded:
    """A fixture table copied to fake GCS: its local copy, gs:// URI and opened table."""

    def __init__(self, local: Path, uri: str, gcs: GcsStore) -> None:
        self.local = local
        self.uri = uri
        self.gcs = gcs

    def open(self) -> HudiTable:
        return HudiTable.open(self.uri, self.gcs.storage_options)

    def objects(self) -> list[str]:
        """Every object under the table, as gs:// URIs."""
        return sorted(f"gs://{p}" for p in self.gcs.fs().find(self.uri))


@pytest.fixture
def upload(gcs_server: GcsStore, unpack_table: Any):  # type: ignore[no-untyped-def]
    def _upload(fixture: Any) -> Uploaded:
        local = unpack_table(fixture)
        uri = gcs_server.upload_dir(local, gcs_server.make_bucket(), "lake/t")
        return Uploaded(local, uri, gcs_server)

    return _upload


def _target(client: Any, dataset: str, **options: Any) -> BigQueryTarget:
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t", **options}
    )
    return BigQueryTarget(config, client)


def _external(client: Any, table_id: str) -> dict[str, Any]:
    return dict(client.get_table(table_id).external_data_configuration.to_api_repr())


def _query(client: Any, sql: str) -> pa.Table:
    return client.query_and_wait(sql).to_arrow()


def _maps_as_dicts(table: pa.Table) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """BigQuery has no map type: a parquet map reads as ``key_value`` records (our schema)
    or, in the emulator's schema-less load, a JSON string. hudi-rs gives (key, value)
    pairs. All three become a dict so the rows compare by value."""
    maps = {f.name for f in table.schema if pa.types.is_map(f.type)}

    def normalise(row: dict[str, Any]) -> dict[str, Any]:
        for name in maps & set(row):
            value = row[name]
            if isinstance(value, str):
                value = json.loads(value)
            elif isinstance(value, dict) and "key_value" in value:
                value = {kv["key"]: kv["value"] for kv in value["key_value"]}
            elif isinstance(value, list):
                value = dict(value)
            row[name] = value
        return row

    return normalise


def _assert_history_uris_follow_bigquerys_rules(uris: list[str], uploaded: Uploaded) -> None:
    """One wildcard each; they match every base file and nothing under ``.hoodie``."""
    objects = uploaded.objects()
    base_files = [
        o for o in objects if o.endswith(".parquet") and "/.hoodie" not in o[len(uploaded.uri) :]
    ]
    assert all(u.count("*") == 1 for u in uris)
    assert {o for o in base_files if any(fnmatch.fnmatchcase(o, u) for u in uris)} == set(
        base_files
    )
    hidden = [o for o in objects if "/." in o[len(uploaded.uri) :]]
    assert not [o for o in hidden if any(fnmatch.fnmatchcase(o, u) for u in uris)]


def _hive_columns_at_creation(
    monkeypatch: pytest.MonkeyPatch, client: Any
) -> dict[str, dict[str, Any]]:
    """BigQuery adds a hive-partitioned external table's partition keys to its columns;
    the emulator does not, and checks a view's query when it is created, so the
    snapshot view (which names them) would be refused. The history table is
    materialised right after it is created, as BigQuery would show it; its stored
    external configuration is returned by table id."""
    apply = BigQueryTarget._apply
    stored: dict[str, dict[str, Any]] = {}

    def applying(self: BigQueryTarget, step: Any) -> None:
        apply(self, step)
        external = step.resource.get("externalDataConfiguration", {})
        if step.verb == "create" and "hivePartitioningOptions" in external:
            stored[step.object_id] = _external(client, step.object_id)
            materialise(client, step.object_id)

    monkeypatch.setattr(BigQueryTarget, "_apply", applying)
    return stored


@pytest.mark.parametrize("fixture", WITH_META, ids=[t.id for t in WITH_META])
def test_view_mode_shows_hudi_rs_snapshot(fixture, upload, client, dataset, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(fixture)
    table = uploaded.open()
    target = _target(client, dataset, dataset_location="EU")
    materialised = _hive_columns_at_creation(monkeypatch, client) if table.config.is_mor else {}
    report = sync_table(table, [target])
    assert [r.action for r in report.results] == ["create"]
    project = client.project
    instant = report.instant
    marker = f"hudi_sync instant={instant} base={uploaded.uri} mode=view"
    mor = table.config.is_mor  # Hive sync's names: t_ro (read-optimized) and t_rt
    history_id, manifest_id, view_id = (
        f"{project}.{dataset}.t_history",
        f"{project}.{dataset}.t_manifest",
        f"{project}.{dataset}.t_ro" if mor else f"{project}.{dataset}.t",
    )
    assert client.get_dataset(dataset).location == "EU"

    # Stored configuration, exactly.
    manifest = _external(client, manifest_id)
    assert manifest["sourceUris"] == [
        f"{uploaded.uri}/.hoodie/manifest/snapshots/{instant}/files.csv"
    ]
    assert (manifest["sourceFormat"], manifest["csvOptions"]["skipLeadingRows"]) == ("CSV", "0")
    history = materialised.get(history_id) or _external(client, history_id)
    assert history["sourceFormat"] == "PARQUET" and history["autodetect"] is False
    assert history["parquetOptions"] == {"enableListInference": True}
    _assert_history_uris_follow_bigquerys_rules(history["sourceUris"], uploaded)
    partitions = list(table.config.partition_fields)
    if table.config.hive_style_partitioning and partitions:
        hive = history["hivePartitioningOptions"]
        assert hive["mode"] == "CUSTOM"
        assert hive["sourceUriPrefix"].startswith(uploaded.uri + "/{" + partitions[0] + ":")
        assert hive["sourceUriPrefix"].count("{") == len(partitions)
        schema_names = [f.name for f in client.get_table(history_id).schema]
        assert not set(partitions) & set(schema_names[: -len(partitions)])
    else:
        assert "hivePartitioningOptions" not in history
    view = client.get_table(view_id)
    assert view.view_query == (
        f"SELECT * FROM `{history_id}` WHERE _hoodie_file_name IN "
        f"(SELECT filename FROM `{manifest_id}`)"
    )
    for table_id in (history_id, manifest_id, view_id):
        if table_id in materialised:
            continue  # replaced by its native copy; its stored configuration was checked
        stored = client.get_table(table_id)
        assert stored.description == marker
        # The marker's instant and mode, and the digest of the options shaping the
        # definitions, which a rerun at the same instant compares.
        assert stored.labels == {
            "hudi_sync_instant": instant,
            "hudi_sync_mode": "view",
            "hudi_sync_options": target.config.definition_digest,
        }

    # Behaviour: the same configuration materialised by the emulator's load jobs, and the
    # real view queried through the emulator.
    if history_id not in materialised:
        materialise(client, history_id)
    materialise(client, manifest_id)
    rows = _query(client, f"SELECT * FROM `{view_id}`")
    expected = hudi_rs_rows(str(uploaded.local), read_optimized=table.config.is_mor)
    ours, theirs = same_columns(rows, expected)  # type: ignore[arg-type]
    assert theirs.num_rows > 0
    normalise = _maps_as_dicts(theirs)
    assert canonical(ours, normalise) == canonical(theirs, normalise)
    versions = _query(client, f"SELECT count(*) AS n FROM `{history_id}`").column(0)[0].as_py()
    assert versions >= theirs.num_rows
    if mor:
        _assert_snapshot_view(client, uploaded, f"{project}.{dataset}.t", instant, normalise)


def _assert_snapshot_view(
    client: Any, uploaded: Uploaded, stem: str, instant: str, normalise: Any
) -> None:
    """A MOR table's ``_rt`` objects: the folded logs' external table over their
    folder, the snapshot's list of them, and the snapshot view, which (over
    materialised copies) shows hudi-rs's snapshot."""
    rt = client.get_table(f"{stem}_rt")
    assert rt.description.startswith(f"hudi_sync instant={instant} ")
    logs = [o for o in uploaded.objects() if "/.hoodie/manifest/logs/parquet/" in o]
    if logs:
        log_history = _external(client, f"{stem}_log_history")
        assert log_history["sourceUris"] == [
            f"{uploaded.uri}/.hoodie/manifest/logs/parquet/*.parquet"
        ]
        log_manifest = _external(client, f"{stem}_log_manifest")
        assert log_manifest["sourceUris"] == [
            f"{uploaded.uri}/.hoodie/manifest/logs/snapshots/{instant}/files.csv"
        ]
        materialise(client, f"{stem}_log_history")
        materialise(client, f"{stem}_log_manifest")
    else:
        assert rt.view_query == f"SELECT * FROM `{stem}_ro`"
    rows = _query(client, f"SELECT * FROM `{stem}_rt`")
    ours, theirs = same_columns(rows, hudi_rs_rows(str(uploaded.local)))  # type: ignore[arg-type]
    assert canonical(ours, normalise) == canonical(theirs, normalise)


MANIFEST_MODE = [
    t
    for t in WITH_META
    if t.name.endswith(("cow/v9_txns_simple_meta", "cow/v6_complexkeygen_hivestyle"))
    or "overwritetable" in t.name
]


@pytest.mark.parametrize("fixture", MANIFEST_MODE, ids=[t.id for t in MANIFEST_MODE])
def test_manifest_mode_shows_hudi_rs_snapshot(fixture, upload, client, dataset) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(fixture)
    table = uploaded.open()
    report = sync_table(table, [_target(client, dataset, use_bq_manifest_file="true")])
    table_id = f"{client.project}.{dataset}.t"
    external = _external(client, table_id)
    uris_uri = f"{uploaded.uri}/.hoodie/manifest/snapshots/{report.instant}/uris.csv"
    assert external["sourceUris"] == [uris_uri]
    assert external["fileSetSpecType"] == MANIFEST_FILE_SET
    assert client.get_table(table_id).labels["hudi_sync_mode"] == "manifest"
    assert [r.objects for r in report.results] == [("t",)]
    listed = uploaded.gcs.fs().cat_file(uris_uri.removeprefix("gs://")).decode().split()
    assert all(u.startswith(uploaded.uri + "/") and u.endswith(".parquet") for u in listed)
    materialise(client, table_id, uris=listed)
    expected = hudi_rs_rows(str(uploaded.local), read_optimized=table.config.is_mor)
    ours, theirs = same_columns(_query(client, f"SELECT * FROM `{table_id}`"), expected)  # type: ignore[arg-type]
    normalise = _maps_as_dicts(theirs)
    assert canonical(ours, normalise) == canonical(theirs, normalise)


def _one(name: str) -> Any:
    matches = [t for t in NON_EMPTY if t.name.endswith(name)]
    assert len(matches) == 1, name
    return matches[0]


def _tables(client: Any, dataset: str) -> set[str]:
    from google.api_core.exceptions import NotFound

    try:
        return {t.table_id for t in client.list_tables(dataset)}
    except NotFound:
        return set()


def test_table_without_meta_fields_filters_on_the_file_name_pseudo_column(  # type: ignore[no-untyped-def]
    upload, client, dataset
) -> None:
    """The emulator rejects a view over ``_FILE_NAME`` ("Unrecognized name"), so this
    checks the exact resources of the dry-run plan instead of stored objects."""
    uploaded = upload(_one("cow/v8_simplekeygen_hivestyle_no_metafields"))
    report = sync_table(uploaded.open(), [_target(client, dataset)], dry_run=True)
    resources = _planned_tables(report)
    manifest_id = f"{client.project}.{dataset}.t_manifest"
    history_id = f"{client.project}.{dataset}.t_history"
    # _FILE_NAME holds absolute URIs, so the manifest table reads the URI list.
    assert resources["t_manifest"]["externalDataConfiguration"]["sourceUris"] == [
        f"{uploaded.uri}/.hoodie/manifest/snapshots/{report.instant}/uris.csv"
    ]
    assert resources["t"]["view"]["query"] == (
        f"SELECT * FROM `{history_id}` WHERE _FILE_NAME IN (SELECT filename FROM `{manifest_id}`)"
    )
    history_columns = {f["name"] for f in resources["t_history"]["schema"]["fields"]}
    assert "_hoodie_file_name" not in history_columns and history_columns


def _planned_tables(report: Any) -> dict[str, dict[str, Any]]:
    """The table resources of a dry-run plan (steps ``verb id {json}``), by table id."""
    resources = [json.loads(s.split(" ", 2)[2]) for s in report.plans[0].steps]
    return {r["tableReference"]["tableId"]: r for r in resources if "tableReference" in r}


def _older_manifest(table: HudiTable) -> Any:
    first = table.completed_commits()[0].requested_time
    store = ManifestStore(table)
    return store.publish(store.build(as_of=first), make_latest=False)


def test_rerun_is_a_noop_and_the_target_never_moves_backwards(upload, client, dataset) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(_one("cow/v9_txns_simple_meta"))
    table = uploaded.open()
    target = _target(client, dataset)
    older = _older_manifest(table)
    _plan, result = target.sync(table, older)
    assert result.action == "create"
    manifest_id = f"{client.project}.{dataset}.t_manifest"
    assert _external(client, manifest_id)["sourceUris"] == [older.files_uri]

    report = sync_table(table, [target])
    assert report.results[0].action == "update"
    assert _external(client, manifest_id)["sourceUris"] == [
        f"{uploaded.uri}/.hoodie/manifest/snapshots/{report.instant}/files.csv"
    ]
    assert client.get_table(f"{client.project}.{dataset}.t").labels["hudi_sync_instant"] == (
        report.instant
    )
    assert sync_table(table, [target]).results[0].action == "noop"
    assert target.sync(table, older)[1].action == "skip-older"
    assert target.sync(table, older, force=True)[1].action == "update"
    assert _external(client, manifest_id)["sourceUris"] == [older.files_uri]


def test_a_feed_turned_on_or_off_at_the_instant_shown_changes_the_objects(  # type: ignore[no-untyped-def]
    upload, client, dataset
) -> None:
    """Turning ``hudi_sync.sync.change.feed`` on or off with no new commit is no no-op:
    ``t_changes`` is created, then dropped; a sync after either is a no-op again."""
    from google.api_core.exceptions import NotFound

    table = upload(_one("cow/v9_txns_simple_meta")).open()
    target = _target(client, dataset)
    changes_id = f"{client.project}.{dataset}.t_changes"
    assert sync_table(table, [target]).results[0].action == "create"
    turned_on = sync_table(table, [target], change_feed="on").results[0]
    assert turned_on.action != "noop" and "t_changes" in turned_on.objects
    assert client.get_table(changes_id).external_data_configuration is not None
    assert sync_table(table, [target], change_feed="on").results[0].action == "noop"
    turned_off = sync_table(table, [target], change_feed="off").results[0]
    assert turned_off.action != "noop"
    with pytest.raises(NotFound):
        client.get_table(changes_id)
    assert sync_table(table, [target], change_feed="off").results[0].action == "noop"


def test_skip_ro_suffix_turned_on_at_the_instant_shown_creates_the_view(  # type: ignore[no-untyped-def]
    upload, client, dataset
) -> None:
    """A Merge-on-Read table's marker is on ``t_rt``, which still shows the instant: the
    sync that renames the read-optimized view to ``t`` with no new commit creates it
    (not a no-op reporting a ``t`` that does not exist); the next is a no-op."""
    table = upload(_one("mor/parquet/v6_nonpartitioned")).open()

    def sync(skip: bool) -> Any:
        config = _target(client, dataset).config
        return sync_table(table, [BigQueryTarget(config, client, skip_ro_suffix=skip)]).results[0]

    assert sync(False).action == "create" and {"t_ro", "t_rt"} <= _tables(client, dataset)
    assert "t" not in _tables(client, dataset)
    renamed = sync(True)
    assert renamed.action == "update" and renamed.objects[:2] == ("t", "t_rt")
    view = client.get_table(f"{client.project}.{dataset}.t")
    assert view.view_query == client.get_table(f"{client.project}.{dataset}.t_ro").view_query
    assert sync(True).action == "noop"


_DEFINITION_CHANGES = {
    # option: (fixture, its value, what the history table's external configuration shows)
    "require_partition_filter": (
        "cow/v6_complexkeygen_hivestyle",
        "true",
        lambda uri, ext: ext["hivePartitioningOptions"]["requirePartitionFilter"] is True,
    ),
    "partition_fields": (
        "cow/v6_complexkeygen_hivestyle",
        "byteField",
        lambda uri, ext: (
            ext["hivePartitioningOptions"]["sourceUriPrefix"] == f"{uri}/{{byteField:INTEGER}}"
        ),
    ),
    "big_lake_connection_id": (
        "cow/v6_nonpartitioned",
        "my-project.eu.lake",
        lambda uri, ext: ext.get("connectionId") == "my-project.eu.lake",
    ),
    "source_uri": (
        "cow/v6_nonpartitioned",
        "gs://other-bucket/lake/t/*.parquet",
        lambda uri, ext: ext["sourceUris"] == ["gs://other-bucket/lake/t/*.parquet"],
    ),
}


@pytest.mark.parametrize("option", sorted(_DEFINITION_CHANGES))
def test_a_definition_option_changed_at_the_instant_shown_updates_the_objects(  # type: ignore[no-untyped-def]
    upload, client, dataset, option: str
) -> None:
    """An option shaping the objects' definitions changed with no new commit is no
    no-op: the history table shows the new definition at once (not at the next commit),
    as a first sync with the option would make it; the next sync is a no-op again, and
    so is the one that changes the option back after that (an update)."""
    fixture, value, shown = _DEFINITION_CHANGES[option]
    uploaded = upload(_one(fixture))
    table = uploaded.open()
    history_id = f"{client.project}.{dataset}.t_history"
    assert sync_table(table, [_target(client, dataset)]).results[0].action == "create"
    assert not shown(uploaded.uri, _external(client, history_id))

    changed = _target(client, dataset, **{option: value})
    result = sync_table(table, [changed]).results[0]
    assert result.action == "update", result
    assert shown(uploaded.uri, _external(client, history_id))
    fresh = _planned_tables(
        sync_table(table, [_target(client, "elsewhere", **{option: value})], dry_run=True)
    )
    assert _external(client, history_id) == fresh["t_history"]["externalDataConfiguration"]
    assert sync_table(table, [changed]).results[0].action == "noop"

    back = sync_table(table, [_target(client, dataset)]).results[0]
    assert back.action == "update" and not shown(uploaded.uri, _external(client, history_id))
    assert sync_table(table, [_target(client, dataset)]).results[0].action == "noop"


def test_objects_stamped_without_the_options_digest_are_updated_once(  # type: ignore[no-untyped-def]
    upload, client, dataset
) -> None:
    """Objects synced before the digest label existed have no ``hudi_sync_options``: the
    options they were made with are unknown, so a rerun at the same instant updates them
    once (stamping the digest), and the next is a no-op."""
    table = upload(_one("cow/v6_nonpartitioned")).open()
    target = _target(client, dataset)
    assert sync_table(table, [target]).results[0].action == "create"
    view = client.get_table(f"{client.project}.{dataset}.t")
    view.labels = {"hudi_sync_options": None}
    client.update_table(view, ["labels"])
    assert "hudi_sync_options" not in client.get_table(view.reference).labels
    assert sync_table(table, [target]).results[0].action == "update"
    labels = client.get_table(view.reference).labels
    assert labels["hudi_sync_options"] == target.config.definition_digest
    assert sync_table(table, [target]).results[0].action == "noop"


def test_a_noop_rerun_reads_its_objects_and_calls_nothing_else(  # type: ignore[no-untyped-def]
    upload, client, dataset, monkeypatch
) -> None:
    """The definition options are compared through a label of the objects the plan reads
    anyway: a rerun at the instant shown makes one get_table per object (the view, the
    manifest and history tables, a change feed no longer published) and no other call."""
    table = upload(_one("cow/v6_complexkeygen_hivestyle")).open()
    target = _target(client, dataset, require_partition_filter="true")
    assert sync_table(table, [target]).results[0].action == "create"
    call_api = client._call_api
    calls: list[tuple[str, str]] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append((kwargs.get("method", ""), kwargs.get("path", "")))
        return call_api(*args, **kwargs)

    monkeypatch.setattr(client, "_call_api", counted)
    assert sync_table(table, [target]).results[0].action == "noop"
    stem = f"/projects/{client.project}/datasets/{dataset}/tables/t"
    assert sorted(calls) == sorted(
        ("GET", f"{stem}{s}") for s in ("", "_manifest", "_history", "_changes")
    )


def test_a_plan_reads_its_objects_at_once(upload, client, dataset, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Each read is a round trip, and a plan reads every object (and a feed no longer
    published): the reads overlap. The first two meet at a barrier, which reads made
    one after another never pass."""
    import threading

    uploaded = upload(_one("cow/v6_nonpartitioned"))
    meet = threading.Barrier(2, timeout=10)
    get_table = client.get_table
    calls: list[str] = []
    lock = threading.Lock()

    def meeting(table_id: str, *args: Any, **kwargs: Any) -> Any:
        with lock:
            calls.append(table_id)
            first_two = len(calls) <= 2
        if first_two:
            meet.wait()
        return get_table(table_id, *args, **kwargs)

    monkeypatch.setattr(client, "get_table", meeting)
    report = sync_table(uploaded.open(), [_target(client, dataset)])
    assert report.ok and report.results[0].action == "create", report
    stem = f"{client.project}.{dataset}.t"
    assert sorted(calls) == sorted(f"{stem}{s}" for s in ("", "_manifest", "_history", "_changes"))


def test_dataset_is_created_in_its_location_or_refused_when_it_differs(  # type: ignore[no-untyped-def]
    upload, client, dataset
) -> None:
    from google.cloud import bigquery

    uploaded = upload(_one("cow/v6_nonpartitioned"))
    existing = bigquery.Dataset(f"{client.project}.{dataset}")
    existing.location = "EU"
    client.create_dataset(existing)
    with pytest.raises(BadInputError, match=f"{dataset} is in EU.*dataset_location is US"):
        sync_table(uploaded.open(), [_target(client, dataset, dataset_location="US")])
    assert _tables(client, dataset) == set()


def test_objects_not_created_by_hudi_sync_are_not_replaced(upload, client, dataset) -> None:  # type: ignore[no-untyped-def]
    from google.cloud import bigquery

    uploaded = upload(_one("cow/v6_nonpartitioned"))
    client.create_dataset(dataset)
    schema = [bigquery.SchemaField("x", "STRING")]
    client.create_table(bigquery.Table(f"{client.project}.{dataset}.t_history", schema=schema))
    with pytest.raises(BadInputError, match="t_history exists and was not created by hudi_sync"):
        sync_table(uploaded.open(), [_target(client, dataset)])
    assert _tables(client, dataset) == {"t_history"}


def test_changing_mode_recreates_the_objects(upload, client, dataset) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(_one("cow/v6_complexkeygen_hivestyle"))
    table = uploaded.open()
    sync_table(table, [_target(client, dataset)])
    assert _tables(client, dataset) == {"t", "t_manifest", "t_history"}
    report = sync_table(table, [_target(client, dataset, use_bq_manifest_file="true")])
    assert report.results[0].action == "recreate"
    assert _tables(client, dataset) == {"t"}
    assert _external(client, f"{client.project}.{dataset}.t")["fileSetSpecType"] == (
        MANIFEST_FILE_SET
    )
    report = sync_table(table, [_target(client, dataset)])
    assert report.results[0].action == "recreate"
    assert _tables(client, dataset) == {"t", "t_manifest", "t_history"}


def test_as_of_objects_are_suffixed(upload, client, dataset) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(_one("cow/v9_txns_simple_meta"))
    table = uploaded.open()
    first = table.completed_commits()[0].requested_time
    report = sync_table(table, [_target(client, dataset)], as_of=first)
    suffix = f"t_as_of_{first}"
    assert _tables(client, dataset) == {suffix, f"{suffix}_manifest", f"{suffix}_history"}
    materialise(client, f"{client.project}.{dataset}.{suffix}_history")
    materialise(client, f"{client.project}.{dataset}.{suffix}_manifest")
    rows = _query(client, f"SELECT * FROM `{client.project}.{dataset}.{suffix}`")
    ours, theirs = same_columns(rows, hudi_rs_rows(str(uploaded.local), as_of=first))  # type: ignore[arg-type]
    assert canonical(ours) == canonical(theirs)
    assert report.instant == first


def test_dry_run_prints_the_plan_and_changes_nothing(upload, client, dataset) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(_one("cow/v6_nonpartitioned"))
    report = sync_table(uploaded.open(), [_target(client, dataset)], dry_run=True)
    steps = report.plans[0].steps
    assert [s.split(" ", 2)[:2] for s in steps] == [
        ["create-dataset", f"{client.project}.{dataset}"],
        ["create", f"{client.project}.{dataset}.t_history"],
        ["create", f"{client.project}.{dataset}.t_manifest"],
        ["create", f"{client.project}.{dataset}.t"],
    ]
    resource = json.loads(steps[1].split(" ", 2)[2])
    assert resource["externalDataConfiguration"]["sourceFormat"] == "PARQUET"
    assert report.results[0].action == "dry-run"
    assert dataset not in {d.dataset_id for d in client.list_datasets()}
    assert not uploaded.gcs.fs().exists(f"{uploaded.uri.removeprefix('gs://')}/.hoodie/manifest")


def test_a_sync_stopped_at_any_step_converges_on_rerun(  # type: ignore[no-untyped-def]
    upload, client, dataset, monkeypatch
) -> None:
    from hudi_sync.errors import HudiSyncError

    uploaded = upload(_one("cow/v9_txns_simple_meta"))
    table = uploaded.open()
    target = _target(client, dataset)
    older = _older_manifest(table)
    target.sync(table, older)
    view_id = f"{client.project}.{dataset}.t"
    original = BigQueryTarget._apply
    for stop_at in range(3):  # history, manifest, view
        calls = []

        def failing(self, step, stop_at=stop_at, calls=calls):  # type: ignore[no-untyped-def]
            if len(calls) == stop_at:
                raise HudiSyncError(f"BigQuery {step.verb} {step.object_id} failed: injected")
            calls.append(step)
            original(self, step)

        monkeypatch.setattr(BigQueryTarget, "_apply", failing)
        with pytest.raises(HudiSyncError, match="injected"):
            sync_table(table, [target])
        # The view was not stamped: it still claims the older instant.
        assert client.get_table(view_id).labels["hudi_sync_instant"] == older.manifest.instant
        monkeypatch.setattr(BigQueryTarget, "_apply", original)
        report = sync_table(table, [target])
        assert report.results[0].action == "update"
        assert client.get_table(view_id).labels["hudi_sync_instant"] == report.instant
        target.sync(table, older, force=True)  # back to the older snapshot for the next round


def test_schema_evolution_updates_the_objects(upload, client, dataset, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(_one("cow/v6_nonpartitioned"))
    table = uploaded.open()
    target = _target(client, dataset)
    sync_table(table, [target])
    evolved = dict(table.avro_schema)
    evolved["fields"] = [*evolved["fields"], {"name": "added", "type": ["null", "string"]}]
    monkeypatch.setitem(table.__dict__, "avro_schema", evolved)  # a cached property
    report = sync_table(table, [target], force=True)
    assert report.results[0].action == "update"
    history = client.get_table(f"{client.project}.{dataset}.t_history")
    assert history.schema[-1].name == "added" and history.schema[-1].mode == "NULLABLE"


def test_cli_syncs_to_the_emulator(upload, client, dataset, bigquery_emulator, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app

    uploaded = upload(_one("cow/v6_nonpartitioned"))
    props = tmp_path / "bq.properties"
    props.write_text(
        f"hoodie.gcp.bigquery.sync.project_id={client.project}\n"
        f"hoodie.gcp.bigquery.sync.dataset_name={dataset}\n"
        "hoodie.gcp.bigquery.sync.table_name=from_file\n"
    )
    storage = [f"-o endpoint_url={uploaded.gcs.endpoint_url}", "-o token=anon"]
    args = ["sync", "bigquery", uploaded.uri, "--props", str(props), "--table-name", "trips"]
    args += ["--api-endpoint", bigquery_emulator.endpoint_url]
    args += [a for pair in storage for a in pair.split(" ", 1)]
    runner = CliRunner()
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["objects"] == [
        "trips",
        "trips_manifest",
        "trips_history",
    ]
    assert _tables(client, dataset) == {"trips", "trips_manifest", "trips_history"}
    delta = runner.invoke(app, [*args, "--delta-commits", "3", "--force"])
    assert delta.exit_code == 0, delta.output
    manifest = _external(client, f"{client.project}.{dataset}.trips_manifest")
    assert [u.split("/.hoodie/manifest/")[1].split("/")[0] for u in manifest["sourceUris"]] == [
        "snapshots",
        "deltas",
    ]
    bad = runner.invoke(app, [*args, "--table-name", "tri`ps"])
    assert bad.exit_code == 2
    assert bad.stderr.strip().count("\n") == 0 and "table_name" in bad.stderr


def test_a_table_opened_through_another_path_is_described_by_its_gcs_location(  # type: ignore[no-untyped-def]
    fixture_copy, client, dataset
) -> None:
    """E.g. a bucket mounted locally: ``source_uri_prefix`` is where BigQuery finds it."""
    path = fixture_copy("cow/v6_complexkeygen_hivestyle")
    target = _target(client, dataset, source_uri_prefix="gs://lake-bucket/t")
    report = sync_table(str(path), [target], dry_run=True)
    resources = _planned_tables(report)
    manifest = resources["t_manifest"]["externalDataConfiguration"]["sourceUris"]
    assert manifest == [f"gs://lake-bucket/t/.hoodie/manifest/snapshots/{report.instant}/files.csv"]
    history = resources["t_history"]["externalDataConfiguration"]
    assert history["sourceUris"] == ["gs://lake-bucket/t/b*.parquet"]
    assert history["hivePartitioningOptions"]["sourceUriPrefix"] == (
        "gs://lake-bucket/t/{byteField:INTEGER}/{shortField:INTEGER}"
    )


DELTA_TABLES = [
    t
    for t in WITH_META
    if t.name.endswith(("cow/v9_txns_simple_meta", "cow/v6_complexkeygen_hivestyle"))
    or "overwritetable" in t.name
    or t.name.endswith("v8_trips_8i3u1d")
]


@pytest.mark.parametrize("delta_commits", [0, 2], ids=["full", "delta"])
@pytest.mark.parametrize("fixture", DELTA_TABLES, ids=[t.id for t in DELTA_TABLES])
def test_view_follows_every_commit_in_full_and_delta_mode(  # type: ignore[no-untyped-def]
    fixture, delta_commits, upload, client, dataset
) -> None:
    """The table grows one commit at a time (later timeline files moved aside in GCS) and
    is synced after each commit, its manifest table's URIs checked each time; the view,
    queried through the emulator, shows exactly the files of a full listing at each
    commit of a new kind (operation, and in delta mode the manifest's first base, a delta
    or a re-base) and at the last, each record once, and at the end hudi-rs's rows.
    (Each query costs two load jobs and a query in the emulator; commits of a kind
    already queried add no case.) With ``delta_commits=2`` the syncs cross compactions
    (every third commit re-bases) and the overwrite fixtures' replacecommits remove file
    groups inside a delta."""
    from hudi_sync.manifest.snapshot import build_manifest

    uploaded = upload(fixture)
    fs = uploaded.gcs.fs()
    table = uploaded.open()
    commits = [
        (i.requested_time, f"{i.action} {table.timeline.commit_metadata(i).operation_type}")
        for i in table.completed_commits()
    ]
    target = _target(client, dataset)
    view = "t_ro" if table.config.is_mor else "t"  # MOR: the read-optimized view lists files
    view_id, history_id, manifest_id = (
        f"{client.project}.{dataset}.{n}" for n in (view, "t_history", "t_manifest")
    )
    bases: list[str] = []
    queried: set[str] = set()
    loaded_history = None
    with growing_timeline(fs, uploaded.uri) as advance:
        for instant, operation in commits:
            advance(instant)
            report = sync_table(uploaded.open(), [target], delta_commits=delta_commits)
            assert report.ok and report.instant == instant, report
            external = _external(client, manifest_id)
            if delta_commits:
                assert len(external["sourceUris"]) == 2
                deltas = f"{uploaded.uri}/.hoodie/manifest/deltas/"
                assert external["sourceUris"][1].startswith(deltas)
                base = external["sourceUris"][0]
                shape = "base" if not bases else "delta" if base == bases[-1] else "re-base"
                bases.append(base)
            else:
                assert external["sourceUris"] == [
                    f"{uploaded.uri}/.hoodie/manifest/snapshots/{instant}/files.csv"
                ]
                shape = "full"
            kinds = {operation, shape}
            if kinds <= queried and instant != commits[-1][0]:
                continue
            queried |= kinds
            # The stored view's query over materialised copies (the objects stay
            # external, so the next sync updates them as it would in BigQuery). The
            # history's copy is loaded again when its stored definition changed.
            query = client.get_table(view_id).view_query
            history = client.get_table(history_id).to_api_repr()
            definition = (history["externalDataConfiguration"], history["schema"])
            if definition != loaded_history:
                materialise(client, history_id, destination=f"{history_id}_loaded")
                loaded_history = definition
            materialise(client, manifest_id, destination=f"{manifest_id}_loaded")
            for table_id in (history_id, manifest_id):
                query = query.replace(f"`{table_id}`", f"`{table_id}_loaded`")
            # The last commit's query reads every column, for hudi-rs's rows below.
            columns = "*" if instant == commits[-1][0] else "_hoodie_file_name, _hoodie_record_key"
            rows = _query(client, f"SELECT {columns} FROM ({query})")
            # The local copy holds the whole timeline; the manifest is as of the instant.
            expected = build_manifest(HudiTable.open(str(uploaded.local)), instant).names()
            assert sorted(set(rows.column("_hoodie_file_name").to_pylist())) == expected, instant
            keys = rows.column("_hoodie_record_key").to_pylist()
            assert len(keys) == len(set(keys)), instant
    if delta_commits and len(commits) > 3:
        assert len(set(bases)) >= 2  # a compaction re-based the manifest
    expected_rows = hudi_rs_rows(str(uploaded.local), read_optimized=table.config.is_mor)
    ours, theirs = same_columns(rows, expected_rows)  # type: ignore[arg-type]
    normalise = _maps_as_dicts(theirs)
    assert canonical(ours, normalise) == canonical(theirs, normalise)


def test_hook_syncs_delta_manifests_with_the_option(  # type: ignore[no-untyped-def]
    upload, client, dataset, bigquery_emulator
) -> None:
    from hudi_sync.sync.hook import SYNC_TOOLS, run_post_commit_hook

    uploaded = upload(_one("cow/v9_txns_simple_meta"))
    options = {
        SYNC_TOOLS: "bigquery",
        "hoodie.gcp.bigquery.sync.project_id": client.project,
        "hoodie.gcp.bigquery.sync.dataset_name": dataset,
        "hoodie.gcp.bigquery.sync.table_name": "t",
        "hoodie.gcp.bigquery.sync.api_endpoint": bigquery_emulator.endpoint_url,
        "hoodie.manifest.delta.commits": "2",
    }
    report = run_post_commit_hook(uploaded.uri, options, uploaded.gcs.storage_options)
    assert report.ok, report.errors
    manifest = _external(client, f"{client.project}.{dataset}.t_manifest")
    assert manifest["sourceUris"] == [
        f"{uploaded.uri}/.hoodie/manifest/snapshots/{report.instant}/uris.csv",
        f"{uploaded.uri}/.hoodie/manifest/deltas/{report.instant}_{report.instant}.csv",
    ]
