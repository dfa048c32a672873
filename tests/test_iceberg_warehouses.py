"""BigQuery and Snowflake read the snapshot published as Iceberg metadata (``<t>_iceberg``).

The Iceberg store (``hudi_sync.manifest.iceberg``) lands separately from these targets, so
each test gives the target a ``PublishedManifest`` whose ``iceberg`` is a small dataclass
with the fields the store's ``PublishedIceberg`` carries (``metadata_location``,
``instant``, ``snapshot_id``), naming a metadata file under the table's
``.hoodie/manifest/iceberg/metadata/`` as the store does. The manifest part is real: the
manifests are published from fixture tables, at their real instants.

What can be run here and what cannot:

- BigQuery: the local-bigquery emulator stores an ``ICEBERG`` external table's resource
  exactly (create, get, patch) but reads nothing: a query of it answers "Not found". The
  tests check the stored resource field by field, its re-pointing, the markers, and the
  plans; what BigQuery reads from the metadata needs a live BigQuery.
- Snowflake: fakesnow cannot run Iceberg DDL, so the statements are checked as text: they
  parse (sqlglot, Snowflake dialect) as one statement each, with the identifiers and
  literals round-tripping, hostile ones included.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.manifest.snapshot import ManifestStore, PublishedManifest, build_manifest
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.instant import Action
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget
from hudi_sync.warehouse.bigquery.iceberg import iceberg_resource
from hudi_sync.warehouse.common import OtherTableError, SyncMarker
from hudi_sync.warehouse.common.iceberg import metadata_path
from hudi_sync.warehouse.snowflake import SnowflakeTarget
from hudi_sync.warehouse.snowflake.config import SnowflakeSyncConfig
from hudi_sync.warehouse.snowflake.iceberg import IcebergState, iceberg_statements
from hudi_sync.warehouse.snowflake.objects import digest
from hudi_sync.warehouse.snowflake.schema import object_name

BQ = "hoodie.gcp.bigquery.sync."
SF = "hoodie.snowflake.sync."
CONNECTION = "test-project.us.hudi_lake"
PREFIX_URI = "gs://lake-bucket/t"  # where BigQuery finds the locally opened table
METADATA = ".hoodie/manifest/iceberg/metadata"


@dataclass(frozen=True)
class PublishedIceberg:
    """The fields of the store's ``PublishedIceberg`` these targets read (the store lands
    separately; see the module docstring)."""

    metadata_location: str
    instant: str
    snapshot_id: int


def _published(table: HudiTable, instant: str, version: int) -> PublishedManifest:
    """The real manifest of ``instant``, with the Iceberg metadata file ``v<version>`` the
    store would have published for it."""
    published = ManifestStore(table).publish(build_manifest(table, as_of=instant))
    location = f"{table.uri}/{METADATA}/v{version}-{instant}.metadata.json"
    return replace(published, iceberg=PublishedIceberg(location, instant, int(instant)))


@pytest.fixture
def cow(fixture_copy: Any) -> tuple[HudiTable, list[str]]:
    """A COW table with two commits, and its instants."""
    table = HudiTable.open(str(fixture_copy("cow/v8_nonpartitioned")))
    instants = [i.requested_time for i in table.timeline.completed_writes]
    assert len(instants) == 2
    return table, instants


# -- BigQuery ------------------------------------------------------------------------------


def _bigquery(client: Any, dataset: str, **options: Any) -> BigQueryTarget:
    config = BigQuerySyncConfig.from_options(
        {
            "project_id": client.project,
            "dataset_name": dataset,
            "table_name": "t",
            "source_uri_prefix": PREFIX_URI,
            **options,
        }
    )
    return BigQueryTarget(config, client)


def test_bigquery_only_creates_the_iceberg_table_then_re_points_it(  # type: ignore[no-untyped-def]
    cow, client, dataset
) -> None:
    from google.api_core.exceptions import NotFound

    table, (first, second) = cow
    target = _bigquery(client, dataset, iceberg="only", **{"iceberg.connection": CONNECTION})
    assert target.wants_iceberg and not target.supports_change_feed

    plan, result = target.sync(table, _published(table, first, 1))
    assert (plan.action, result.objects) == ("create", ("t_iceberg",))
    assert [t.table_id for t in client.list_tables(dataset)] == ["t_iceberg"]  # nothing else
    stored = client.get_table(f"{client.project}.{dataset}.t_iceberg")
    assert stored.external_data_configuration.to_api_repr() == {
        "sourceFormat": "ICEBERG",
        "sourceUris": [f"{PREFIX_URI}/{METADATA}/v1-{first}.metadata.json"],
        "connectionId": CONNECTION,
    }
    assert SyncMarker.parse(stored.description) == SyncMarker(first, PREFIX_URI, "iceberg")
    assert stored.labels == {"hudi_sync_instant": first, "hudi_sync_mode": "iceberg"}
    # The emulator keeps the resource but reads no Iceberg table: a query needs BigQuery.
    with pytest.raises(NotFound):
        client.query_and_wait(f"SELECT * FROM `{client.project}.{dataset}.t_iceberg`")

    plan, _ = target.sync(table, _published(table, first, 1))
    assert (plan.action, plan.steps) == ("noop", [])

    plan, _ = target.sync(table, _published(table, second, 2))
    assert plan.action == "update"
    assert [s.split(" ", 2)[:2] for s in plan.steps] == [
        ["update", f"{client.project}.{dataset}.t_iceberg"]
    ]
    stored = client.get_table(f"{client.project}.{dataset}.t_iceberg")
    assert stored.external_data_configuration.source_uris == [
        f"{PREFIX_URI}/{METADATA}/v2-{second}.metadata.json"
    ]
    assert SyncMarker.parse(stored.description) == SyncMarker(second, PREFIX_URI, "iceberg")

    # An older snapshot never moves it back without --force (no restore undid `second`).
    plan, _ = target.sync(table, _published(table, first, 1))
    assert plan.action == "skip-older"
    plan, _ = target.sync(table, _published(table, first, 1), force=True)
    stored = client.get_table(f"{client.project}.{dataset}.t_iceberg")
    assert stored.external_data_configuration.source_uris == [
        f"{PREFIX_URI}/{METADATA}/v1-{first}.metadata.json"
    ]


def test_bigquery_beside_adds_the_iceberg_table_after_the_manifest_objects(  # type: ignore[no-untyped-def]
    cow, client, dataset
) -> None:
    table, (first, second) = cow
    target = _bigquery(client, dataset, iceberg="beside", **{"iceberg.connection": CONNECTION})
    plan, result = target.sync(table, _published(table, first, 1))
    assert result.objects == ("t", "t_manifest", "t_history", "t_iceberg")
    assert [s.split(" ", 2)[1].rsplit(".", 1)[1] for s in plan.steps[1:]] == [
        "t_history",
        "t_manifest",
        "t",
        "t_iceberg",
    ]
    assert {t.table_id for t in client.list_tables(dataset)} == set(result.objects)
    # The manifest objects and the Iceberg table show the same instant and base.
    view = SyncMarker.parse(client.get_table(f"{client.project}.{dataset}.t").description)
    iceberg = client.get_table(f"{client.project}.{dataset}.t_iceberg")
    assert view == SyncMarker(first, PREFIX_URI, "view")
    assert SyncMarker.parse(iceberg.description) == replace(view, mode="iceberg")

    # A rerun changes nothing; the Iceberg table missing (dropped by hand) is made again.
    assert target.sync(table, _published(table, first, 1))[0].action == "noop"
    client.delete_table(f"{client.project}.{dataset}.t_iceberg")
    plan, _ = target.sync(table, _published(table, first, 1))
    assert plan.action == "create"
    assert [s.split(" ", 2)[:2] for s in plan.steps] == [
        ["create", f"{client.project}.{dataset}.t_iceberg"]
    ]
    plan, _ = target.sync(table, _published(table, second, 2))
    assert plan.steps[-1].startswith(f"update {client.project}.{dataset}.t_iceberg ")


def test_bigquery_refuses_a_table_it_did_not_make_or_another_tables(  # type: ignore[no-untyped-def]
    cow, client, dataset
) -> None:
    from google.cloud import bigquery

    table, (first, _) = cow
    options = {"iceberg": "only", "iceberg.connection": CONNECTION}
    client.create_dataset(dataset)
    foreign = bigquery.Table(f"{client.project}.{dataset}.t_iceberg")
    client.create_table(foreign)
    with pytest.raises(BadInputError) as refused:
        _bigquery(client, dataset, **options).sync(table, _published(table, first, 1))
    assert str(refused.value) == (
        f"{client.project}.{dataset}.t_iceberg exists and was not created by hudi_sync; "
        "drop it or use --force"
    )
    # --force replaces a native table by the external one (BigQuery changes no type in place).
    plan, _ = _bigquery(client, dataset, **options).sync(
        table, _published(table, first, 1), force=True
    )
    assert [s.split(" ", 1)[0] for s in plan.steps] == ["delete", "create"]
    other = _bigquery(client, dataset, source_uri_prefix="gs://other-bucket/t", **options)
    with pytest.raises(OtherTableError):
        other.sync(table, _published(table, first, 1))


def test_bigquery_follows_a_rollback_back(fixture_copy, client, dataset) -> None:  # type: ignore[no-untyped-def]
    """``NAME_iceberg`` showing an instant a rollback then undid moves back to the
    snapshot the table has, as the other objects do (no --force needed)."""
    from google.cloud import bigquery

    table = HudiTable.open(str(fixture_copy("mor/parquet/v6_nonpartitioned_rollback")))
    (rollback,) = table.timeline.completed([Action.ROLLBACK])
    (undone,) = table.timeline.undone_instants(rollback)
    first = table.timeline.completed_writes[0].requested_time
    assert first < undone < rollback.requested_time
    options = {"iceberg": "only", "iceberg.connection": CONNECTION}
    target = _bigquery(client, dataset, **options)
    # The table as a sync at `undone` left it, before the rollback.
    client.create_dataset(dataset)
    before = iceberg_resource(
        target.objects,
        "t_iceberg",
        f"{PREFIX_URI}/{METADATA}/v2-{undone}.metadata.json",
        SyncMarker(undone, PREFIX_URI, "iceberg"),
    )
    client.create_table(bigquery.Table.from_api_repr(before))

    plan, _ = target.sync(table, _published(table, first, 3))
    assert plan.action == "restored"
    assert plan.reason == (
        f"{client.project}.{dataset}.t_iceberg showed {undone}, which rollback "
        f"{rollback.requested_time} undid: moved back to {first}"
    )
    stored = client.get_table(f"{client.project}.{dataset}.t_iceberg")
    assert stored.external_data_configuration.source_uris == [
        f"{PREFIX_URI}/{METADATA}/v3-{first}.metadata.json"
    ]
    assert SyncMarker.parse(stored.description) == SyncMarker(first, PREFIX_URI, "iceberg")


def test_bigquery_offline_dry_run_shows_the_resource(cow) -> None:  # type: ignore[no-untyped-def]
    """No BigQuery answering (a closed port): the plan of a first sync, resource included."""
    table, (first, _) = cow
    options = {
        BQ + "project_id": "lake-project",
        BQ + "dataset_name": "lake",
        BQ + "table_name": "trips",
        BQ + "source_uri_prefix": PREFIX_URI,
        BQ + "iceberg": "ONLY",  # choices read in any case
        BQ + "iceberg.connection": "projects/lake-project/locations/eu/connections/lake",
        BQ + "api_endpoint": "http://127.0.0.1:9",
        BQ + "retry_seconds": "0",
    }
    target = BigQueryTarget.from_options(options)
    plan, result = target.sync(table, _published(table, first, 1), dry_run=True)
    assert result.action == "dry-run" and "(offline:" in plan.reason
    assert [s.split(" ", 2)[:2] for s in plan.steps] == [
        ["create-dataset", "lake-project.lake"],
        ["create", "lake-project.lake.trips_iceberg"],
    ]
    resource = json.loads(plan.steps[1].split(" ", 2)[2])
    assert set(resource) == {"tableReference", "externalDataConfiguration", "description", "labels"}
    assert resource["tableReference"] == {
        "projectId": "lake-project",
        "datasetId": "lake",
        "tableId": "trips_iceberg",
    }
    external = resource["externalDataConfiguration"]
    assert external == {
        "sourceFormat": "ICEBERG",
        "sourceUris": [f"{PREFIX_URI}/{METADATA}/v1-{first}.metadata.json"],
        "connectionId": "projects/lake-project/locations/eu/connections/lake",
    }
    assert resource["description"] == f"hudi_sync instant={first} base={PREFIX_URI} mode=iceberg"
    assert resource["labels"] == {"hudi_sync_instant": first, "hudi_sync_mode": "iceberg"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"iceberg": "beside"},
            f"{BQ}iceberg.connection is required when {BQ}iceberg is beside",
        ),
        (
            {"iceberg.connection": CONNECTION},
            f"{BQ}iceberg.connection is set but {BQ}iceberg is off",
        ),
        (
            {"iceberg": "only", "iceberg.connection": "lake connection"},
            f"{BQ}iceberg.connection='lake connection' is not a BigLake connection id "
            "(project.location.connection)",
        ),
        (
            {"iceberg": "sometimes"},
            f"{BQ}iceberg='sometimes' is not one of off, beside, only",
        ),
    ],
)
def test_bigquery_iceberg_options_are_refused_in_one_line(
    options: dict[str, str], message: str
) -> None:
    base = {"project_id": "lake-project", "dataset_name": "lake", "table_name": "t"}
    with pytest.raises(BadInputError) as refused:
        BigQuerySyncConfig.from_options(base | options)
    assert str(refused.value) == message


def test_published_metadata_must_be_the_tables_own(cow) -> None:  # type: ignore[no-untyped-def]
    table, (first, second) = cow
    published = _published(table, first, 1)
    assert metadata_path(table, published, "x") == f"{METADATA}/v1-{first}.metadata.json"
    outside = replace(
        published,
        iceberg=PublishedIceberg(f"{table.uri}/{METADATA}/../../../../x.metadata.json", first, 1),
    )
    with pytest.raises(BadInputError) as refused:
        metadata_path(table, outside, "bigquery:p.d")
    assert str(refused.value).startswith("bigquery:p.d: Iceberg metadata ")
    assert "\n" not in str(refused.value)
    with pytest.raises(HudiSyncError, match="synced without its Iceberg metadata"):
        metadata_path(table, replace(published, iceberg=None), "x")
    with pytest.raises(HudiSyncError, match=f"shows {second}, not the synced snapshot {first}"):
        metadata_path(
            table, replace(published, iceberg=replace(published.iceberg, instant=second)), "x"
        )


# -- Snowflake -------------------------------------------------------------------------------


def _snowflake(**options: str) -> SnowflakeTarget:
    given = {
        SF + "database": "lake",
        SF + "schema": "hudi",
        SF + "table_name": "trips",
        SF + "stage_url": "s3://bkt/tables/trips",
        SF + "iceberg": "only",
        SF + "iceberg.external_volume": "hudi_volume",
        SF + "iceberg.catalog_integration": "hudi_object_store",
    }
    given |= {SF + k: v for k, v in options.items()}
    return SnowflakeTarget.from_options(given, environ={})


def _unreachable() -> Any:
    raise HudiSyncError("no account configured")


def _tokens(sql: str) -> list[tuple[str, str]]:
    """The statement's tokens (type, text), by sqlglot's Snowflake tokenizer."""
    dialect = sqlglot.Dialect.get_or_raise("snowflake")
    return [(t.token_type.name, t.text) for t in dialect.tokenize(sql)]


@pytest.mark.parametrize(
    ("name", "url"),
    [
        ("trips", "s3://bkt/tables/trips"),
        ('x" AS SELECT 1; DROP TABLE t; --', "s3://bkt/o'hare/t"),
        ("x'; DROP STAGE s; --", "s3://bkt/back\\slash'/t"),
    ],
)
def test_snowflake_create_statement_parses_with_its_names_and_path(  # type: ignore[no-untyped-def]
    cow, name: str, url: str
) -> None:
    """Offline (no account): the first sync's statement, parsed; the path is relative to
    the volume's location (here the bucket), so the hostile folder is in the literal."""
    table, (first, _) = cow
    target = _snowflake(table_name=name, stage_url=url, **{"iceberg.volume_url": "s3://bkt"})
    target._connect = _unreachable
    plan, result = target.sync(table, _published(table, first, 1), dry_run=True)
    assert result.action == "dry-run" and result.objects == (f"{name}_iceberg",)
    (step,) = plan.steps
    (statement,) = sqlglot.parse(step, read="snowflake")
    assert isinstance(statement, exp.Create) and statement.args.get("exists")
    assert not statement.args.get("replace")
    (created,) = list(statement.find_all(exp.Table))
    stored = object_name(f"{name}_iceberg")  # TRIPS_ICEBERG; a quoted name as it is
    assert [created.catalog, created.db, created.name] == ["LAKE", "HUDI", stored]
    properties = {
        p.name.upper(): p.args["value"].this
        for p in statement.find_all(exp.Property)
        if isinstance(p.args.get("value"), exp.Literal)
    }
    relative = url.removeprefix("s3://bkt/") + f"/{METADATA}/v1-{first}.metadata.json"
    assert properties == {
        "EXTERNAL_VOLUME": "hudi_volume",
        "CATALOG": "hudi_object_store",
        "METADATA_FILE_PATH": relative,
    }
    (comment,) = list(statement.find_all(exp.SchemaCommentProperty))
    marker = SyncMarker.parse(comment.this.this)
    assert marker == SyncMarker(first, url + "/", "iceberg")
    assert comment.this.this.endswith(f" metadata={digest(relative)}")


def test_snowflake_later_syncs_refresh_then_mark(cow) -> None:  # type: ignore[no-untyped-def]
    """``SHOW ICEBERG TABLES`` cannot run in fakesnow: the state it would list is given."""
    table, (first, second) = cow
    # A folder with a quote and a backslash, under the volume's location (the bucket).
    url = "s3://bkt/o'h\\are/t"
    target = _snowflake(table_name='we"ird', stage_url=url, **{"iceberg.volume_url": "s3://bkt/"})
    objects, names = target.objects, target.object_names(table, _published(table, first, 1), False)
    _, (create,) = iceberg_statements(
        "sf", objects, table, _published(table, first, 1), names, None, False, False
    )
    # What SHOW ICEBERG TABLES lists after that statement: its COMMENT, volume and catalog.
    created = sqlglot.parse_one(create.sql, read="snowflake")
    (comment,) = [c.this.this for c in created.find_all(exp.SchemaCommentProperty)]
    state = IcebergState(comment, "HUDI_VOLUME", "HUDI_OBJECT_STORE")

    plan, statements = iceberg_statements(
        "sf", objects, table, _published(table, first, 1), names, state, False, False
    )
    assert (plan.action, statements) == ("noop", [])

    plan, (refresh, mark) = iceberg_statements(
        "sf", objects, table, _published(table, second, 2), names, state, False, False
    )
    assert plan.action == "update" and plan.steps == [refresh.shown, mark.shown]
    path = f"o'h\\are/t/{METADATA}/v2-{second}.metadata.json"
    assert _tokens(refresh.sql) == [
        ("ALTER", "ALTER"),
        ("VAR", "ICEBERG"),
        ("TABLE", "TABLE"),
        ("IDENTIFIER", "LAKE"),
        ("DOT", "."),
        ("IDENTIFIER", "HUDI"),
        ("DOT", "."),
        ("IDENTIFIER", 'we"ird_iceberg'),
        ("VAR", "REFRESH"),
        ("STRING", path),
    ]
    altered = sqlglot.parse_one(mark.sql, read="snowflake")
    assert isinstance(altered, exp.Alter) and altered.args.get("iceberg")
    assert altered.this.name == 'we"ird_iceberg'
    (new_comment,) = [c.this.this for c in altered.find_all(exp.SchemaCommentProperty)]
    assert SyncMarker.parse(new_comment) == SyncMarker(second, url + "/", "iceberg")

    # Over another external volume: refused, or replaced with --force.
    moved = IcebergState(comment, "OTHER_VOLUME", "HUDI_OBJECT_STORE")
    with pytest.raises(BadInputError, match="reads external volume OTHER_VOLUME"):
        iceberg_statements(
            "sf", objects, table, _published(table, second, 2), names, moved, False, False
        )
    _, (replaced,) = iceberg_statements(
        "sf", objects, table, _published(table, second, 2), names, moved, True, False
    )
    assert sqlglot.parse_one(replaced.sql, read="snowflake").args.get("replace")
    # A table hudi_sync did not make.
    with pytest.raises(BadInputError, match="was not created by hudi_sync"):
        iceberg_statements(
            "sf",
            objects,
            table,
            _published(table, second, 2),
            names,
            IcebergState(""),
            False,
            False,
        )


def test_snowflake_beside_plans_the_manifest_objects_then_the_iceberg_table(cow) -> None:  # type: ignore[no-untyped-def]
    table, (first, _) = cow
    target = _snowflake(iceberg="beside", storage_integration="S3_INT")
    target._connect = _unreachable
    plan, result = target.sync(table, _published(table, first, 1), dry_run=True)
    assert result.objects == ("trips", "trips_manifest", "trips_history", "trips_iceberg")
    heads = [" ".join(s.split(" ", 4)[:4]) for s in plan.steps]
    assert heads == [
        "CREATE OR REPLACE STAGE",
        "CREATE OR REPLACE EXTERNAL",  # the history
        "CREATE OR REPLACE EXTERNAL",  # the manifest
        "CREATE OR REPLACE VIEW",
        "CREATE ICEBERG TABLE IF",  # last: the manifest objects are as before
    ]
    assert plan.steps[-1].startswith(
        'CREATE ICEBERG TABLE IF NOT EXISTS "LAKE"."HUDI"."TRIPS_ICEBERG"'
    )
    assert sum("ICEBERG" in s for s in plan.steps) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"iceberg.external_volume": ""},
            f"{SF}iceberg.external_volume is required when {SF}iceberg is only",
        ),
        (
            {"iceberg": "off"},
            f"{SF}iceberg.external_volume is set but {SF}iceberg is off",
        ),
        (
            {"iceberg.volume_url": "https://bkt"},
            f"{SF}iceberg.volume_url 'https://bkt' is not an s3://, gcs:// or azure:// URL",
        ),
        ({"iceberg": "maybe"}, f"{SF}iceberg='maybe' is not one of off, beside, only"),
    ],
)
def test_snowflake_iceberg_options_are_refused_in_one_line(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(BadInputError) as refused:
        _snowflake(**options)
    assert str(refused.value) == message


def test_snowflake_options_come_from_variables_too() -> None:
    config = SnowflakeSyncConfig.from_options(
        {SF + "database": "lake", SF + "schema": "hudi", SF + "table_name": "t"},
        environ={
            "SNOWFLAKE_ICEBERG": "beside",
            "SNOWFLAKE_ICEBERG_EXTERNAL_VOLUME": "vol",
            "SNOWFLAKE_ICEBERG_CATALOG_INTEGRATION": "cat",
        },
    )
    assert (config.iceberg, config.iceberg_external_volume) == ("beside", "vol")
    assert config.iceberg_catalog_integration == "cat"


def test_snowflake_metadata_outside_the_volume_is_refused(cow) -> None:  # type: ignore[no-untyped-def]
    table, (first, _) = cow
    target = _snowflake(**{"iceberg.volume_url": "s3://other-bucket/"})
    target._connect = _unreachable
    with pytest.raises(BadInputError) as refused:
        target.sync(table, _published(table, first, 1), dry_run=True)
    assert str(refused.value) == (
        f"Iceberg metadata s3://bkt/tables/trips/{METADATA}/v1-{first}.metadata.json is not "
        f"under the external volume's location s3://other-bucket/ ({SF}iceberg.volume_url)"
    )


def test_no_iceberg_table_before_the_first_commit(fixture_copy: Any) -> None:
    table = HudiTable.open(str(fixture_copy("cow/v8_empty")))
    published = ManifestStore(table).publish(build_manifest(table))
    target = _snowflake()
    target._connect = _unreachable
    plan, _ = target.sync(table, published, dry_run=True)
    assert plan.steps == [] and "no Iceberg snapshot before the table's first commit" in plan.reason
