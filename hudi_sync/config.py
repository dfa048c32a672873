"""Every option hudi_sync reads, declared once: key, other spellings, default, type, doc.

Options used to be string literals spread over the modules that read them, each module
with its own parsing, so the same text could be an error in one place and silently read
as ``false`` in another. Here each option is one ``OptionSpec``, and
``OptionSpec.read`` is the only parser, strict everywhere. The docs' options
reference is generated from ``OPTIONS``, so it cannot drift from the code.

How a value is read: ``hudi_sync.option_spec``.

Group ``hoodie.properties`` holds table properties: keys hudi_sync reads from (and
writes to) a table's ``.hoodie/hoodie.properties`` that are not options; they are
declared here so their names live in one place and parse by the same rules.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from hudi_sync.option_spec import KINDS as KINDS  # re-exported: the spec's vocabulary
from hudi_sync.option_spec import OptionSpec as OptionSpec
from hudi_sync.option_spec import boolean_option as _boolean
from hudi_sync.option_spec import choice_option as _choice
from hudi_sync.option_spec import declared
from hudi_sync.option_spec import integer_option as _integer
from hudi_sync.option_spec import list_option as _list
from hudi_sync.option_spec import number_option as _number
from hudi_sync.option_spec import string_option as _string

# Every Hudi option and table property starts so; the streamer's older spelling too.
HOODIE_PREFIX = "hoodie."
_STREAMER = "hoodie.streamer."
_DELTASTREAMER = "hoodie.deltastreamer."
BIGQUERY_PREFIX = "hoodie.gcp.bigquery.sync."
SNOWFLAKE_PREFIX = "hoodie.snowflake.sync."


def _streamer(name: str) -> dict[str, Any]:
    """``hoodie.streamer.<name>``, also accepted as Hudi's older ``hoodie.deltastreamer.<name>``."""
    return {"key": _STREAMER + name, "alternates": (_DELTASTREAMER + name,)}


# --- table: set when a table is created, then fixed ---------------------------------
TABLE_NAME = _string(
    "hoodie.table.name",
    "The table's name (required to create a table; an existing table's when unsaid, else it "
    "must match).",
    "table",
)
TABLE_VERSION = _integer(
    "hoodie.write.table.version",
    "Table version a new table is created at: 6 (Hudi 0.x), 8 (Hudi 1.0) or 9 (Hudi 1.1).",
    "table",
    default=6,
    minimum=0,
)
CDC_ENABLED = _boolean(
    "hoodie.table.cdc.enabled",
    "Write change-data-capture log files (stored in hoodie.properties; fixed at creation).",
    "table",
    default=False,
)
CDC_MODE = _string(
    "hoodie.table.cdc.supplemental.logging.mode",
    "What CDC files hold: OP_KEY_ONLY, DATA_BEFORE or DATA_BEFORE_AFTER (any case).",
    "table",
    default="DATA_BEFORE_AFTER",
)

# --- write ---------------------------------------------------------------------------
RECORD_KEY = _list(
    "hoodie.datasource.write.recordkey.field",
    "Record key fields, comma-separated (required to create a table; an existing table's "
    "when unsaid).",
    "write",
)
ORDERING = _string(
    "hoodie.datasource.write.precombine.field",
    "Ordering field: of two rows with one key, the one with the larger value wins (an "
    "existing table's when unsaid).",
    "write",
)
PARTITION_PATH = _list(
    "hoodie.datasource.write.partitionpath.field",
    "Partition fields, comma-separated; none for an unpartitioned table (an existing "
    "table's when unsaid).",
    "write",
)
HIVE_STYLE = _boolean(
    "hoodie.datasource.write.hive_style_partitioning",
    "Partition folders named field=value (stored in hoodie.properties; an existing table's "
    "when unsaid).",
    "write",
    default=False,
)
KEY_GENERATOR_OPTION = _string(
    "hoodie.datasource.write.keygenerator.class",
    "Key generator class; the writer builds SIMPLE, COMPLEX and NON_PARTITION keys, chosen by "
    "the numbers of key and partition fields (a stated one must be that, or the table's), and "
    "TIMESTAMP and CUSTOM (TimestampBasedKeyGenerator, CustomKeyGenerator) when named.",
    "write",
)
KEY_GENERATOR_TYPE_OPTION = _string(
    "hoodie.datasource.write.keygenerator.type",
    "Key generator type (SIMPLE, COMPLEX, NON_PARTITION, TIMESTAMP, CUSTOM), checked as the "
    "class option is.",
    "write",
)
_TIMEBASED = "hoodie.keygen.timebased."


def _timebased(name: str) -> dict[str, Any]:
    """``hoodie.keygen.timebased.<name>``, also Hudi's older ``hoodie.deltastreamer.`` one."""
    return {
        "key": _TIMEBASED + name,
        "alternates": (_DELTASTREAMER + "keygen.timebased." + name,),
    }


# The TIMESTAMP key generator's (and CUSTOM's field:TIMESTAMP parts'): stored in
# hoodie.properties when a table is created, an existing table's when unsaid.
KEYGEN_TIMESTAMP_TYPE = _string(
    **_timebased("timestamp.type"),
    doc="TIMESTAMP key generator: how partition values read, UNIX_TIMESTAMP (seconds), "
    "EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR (in the scalar time unit), DATE_STRING or "
    "MIXED (strings in the input date formats); required.",
    group="write",
)
KEYGEN_SCALAR_UNIT = _string(
    **_timebased("timestamp.scalar.time.unit"),
    doc="SCALAR: the unit of the numbers (a Java TimeUnit: NANOSECONDS ... DAYS).",
    group="write",
    default="SECONDS",
)
KEYGEN_INPUT_FORMAT = _string(
    **_timebased("input.dateformat"),
    doc="DATE_STRING, MIXED: the Joda patterns strings are read by, separated by the "
    "delimiter; the first that reads a value whole wins.",
    group="write",
)
KEYGEN_INPUT_FORMAT_DELIMITER = _string(
    **_timebased("input.dateformat.list.delimiter.regex"),
    doc="The regular expression separating input date formats.",
    group="write",
    default=",",
)
KEYGEN_OUTPUT_FORMAT = _string(
    **_timebased("output.dateformat"),
    doc="The Joda pattern a partition value is printed in (e.g. yyyy/MM/dd); required.",
    group="write",
)
KEYGEN_INPUT_TIMEZONE = _string(
    **_timebased("input.timezone"),
    doc="The zone of strings without an offset (an IANA name, UTC, GMT+hh:mm); unsaid: "
    "their offset, else UTC.",
    group="write",
)
KEYGEN_OUTPUT_TIMEZONE = _string(
    **_timebased("output.timezone"),
    doc="The zone partition values are printed in; unsaid: a string's own zone, else UTC.",
    group="write",
)
KEYGEN_TIMEZONE = _string(
    **_timebased("timezone"),
    doc="Both the input and the output zone (Hudi's older option; when given it wins).",
    group="write",
)
KEYGEN_PARSER_CLASS = _string(
    "hoodie.keygen.datetime.parser.class",
    "The date parser of the TIMESTAMP key generator: Hudi's own (HoodieDateTimeParser) only.",
    "write",
    alternates=("hoodie.deltastreamer.keygen.datetime.parser.class",),
    default="org.apache.hudi.keygen.parser.HoodieDateTimeParser",
)
KEYGEN_LOGICAL_TIMESTAMPS = _boolean(
    "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled",
    "TIMESTAMP key generator: a timestamp column is formatted as its instant (Hudi's Spark "
    "writer refuses timestamp columns without it).",
    "write",
    default=False,
)
COMPLEX_KEYGEN_NEW_ENCODING = _boolean(
    "hoodie.write.complex.keygen.new.encoding",
    "COMPLEX key over one field, table version 8 and below: the value alone (as Hudi 0.14.1 "
    "to 1.0.2 wrote it) instead of field:value; a table's stored keys decide when it has any.",
    "write",
    default=False,
)
OPERATION = _choice(
    "hoodie.datasource.write.operation",
    "What a write does with its rows.",
    "write",
    default="upsert",
    choices=(
        "insert",
        "upsert",
        "delete",
        "bulk_insert",
        "insert_overwrite",
        "insert_overwrite_table",
        "delete_partition",
    ),
)
PARTITIONS_TO_DELETE = _list(
    "hoodie.datasource.write.partitions.to.delete",
    "delete_partition: the partitions to drop, comma-separated.",
    "write",
)
MAX_FILE_SIZE = _integer(
    "hoodie.parquet.max.file.size",
    "Target size of a base file in bytes.",
    "write",
    default=120 * 1024 * 1024,
    minimum=1,
)
SMALL_FILE_LIMIT = _integer(
    "hoodie.parquet.small.file.limit",
    "Base files smaller than this many bytes take new inserts (0: never).",
    "write",
    default=100 * 1024 * 1024,
    minimum=0,
)
RECORD_SIZE_ESTIMATE = _integer(
    "hoodie.copyonwrite.record.size.estimate",
    "Bytes per record assumed until a commit tells better.",
    "write",
    default=1024,
    minimum=1,
)
RECORD_SIZE_THRESHOLD = _number(
    "hoodie.record.size.estimation.threshold",
    "A commit informs the record size only if it wrote more than this * small.file.limit.",
    "write",
    default=1.0,
    minimum=0,
)
COMBINE_BEFORE_INSERT = _boolean(
    "hoodie.combine.before.insert",
    "insert / bulk_insert: keep one row per key of the incoming rows.",
    "write",
    default=False,
)
DELETE_FIELD = _string(
    "hoodie.payload.delete.field",
    "Rows whose value of this field equals delete.marker are deletes (with delete.marker).",
    "write",
)
DELETE_MARKER = _string(
    "hoodie.payload.delete.marker",
    "The delete.field value that marks a delete (compared as given).",
    "write",
)
MERGE_ENGINE = _choice(
    "hudi_sync.write.merge.engine",
    "Who merges file groups: spark (joins; the Python merge where Spark cannot) or python.",
    "write",
    default="spark",
    choices=("spark", "python"),
)
WRITE_TABLE_TYPE = _choice(
    "hoodie.datasource.write.table.type",
    "Table type of a new table (an existing table's when unsaid, else it must match).",
    "write",
    default="COPY_ON_WRITE",
    choices=("COPY_ON_WRITE", "MERGE_ON_READ"),
)
LOG_BLOCK_FORMAT = _choice(
    "hoodie.logfile.data.block.format",
    "MERGE_ON_READ: the format of log data blocks.",
    "write",
    default="avro",
    choices=("avro", "parquet"),
)
LOG_MAX_SIZE = _integer(
    "hoodie.logfile.max.size",
    "MERGE_ON_READ: a log file that would outgrow this many bytes rolls over to the next version.",
    "write",
    default=1024 * 1024 * 1024,
    minimum=1,
)
COMPACT_INLINE = _boolean(
    "hoodie.compact.inline",
    "MERGE_ON_READ: compact after a write once enough delta commits have piled up.",
    "write",
    default=False,
)
COMPACT_ASYNC = _boolean(
    "hoodie.datasource.compaction.async.enable",
    "MERGE_ON_READ: pending compactions are executed by an asynchronous service beside the "
    "writes (the Debezium ingest's --continuous), not finished by each write before it runs.",
    "write",
    default=False,
)
COMPACT_MAX_DELTA_COMMITS = _integer(
    "hoodie.compact.inline.max.delta.commits",
    "Delta commits since the last compaction that trigger an inline compaction.",
    "write",
    default=5,
    minimum=1,
)
INDEX_TYPE = _choice(
    "hoodie.index.type",
    "How a write finds the file group of a key: SIMPLE (and BLOOM, which finds the same) "
    "look keys up in base files; BUCKET hashes each key to its bucket's file group "
    "(MERGE_ON_READ only; small batches appended in the driver, large ones by the executors).",
    "write",
    default="SIMPLE",
    choices=("SIMPLE", "BLOOM", "BUCKET"),
)
BUCKET_INDEX_NUM_BUCKETS = _integer(
    "hoodie.bucket.index.num.buckets",
    "BUCKET index: file groups (buckets) per partition; fixed for the table's life.",
    "write",
    default=4,
    minimum=1,
    maximum=2**31 - 1,  # a Java int in Hudi
)
BUCKET_INDEX_HASH_FIELD = _list(
    "hoodie.bucket.index.hash.field",
    "BUCKET index: the record key fields a key's bucket is hashed from, a subset of them "
    "(default: all); fixed for the table's life.",
    "write",
)
WRITE_DRIVER_MAX_BYTES = _integer(
    "hudi_sync.write.driver.max.bytes",
    "A DataFrame Spark estimates at most this many bytes is collected and written in the "
    "driver (the Arrow engine, no Spark jobs after the collect); a larger one, or one Spark "
    "cannot size, is written by the executors (0: always the executors).",
    "write",
    default=32 * 1024 * 1024,
    minimum=0,
)
COMPACT_TRIGGER = _choice(
    "hoodie.compact.inline.trigger.strategy",
    "What triggers an inline compaction (only the number of delta commits is supported).",
    "write",
    default="NUM_COMMITS",
    choices=("NUM_COMMITS",),
)
COMMITS_RETAINED = _integer(
    "hoodie.cleaner.commits.retained",
    "The cleaner keeps the files of this many latest commits.",
    "write",
    default=10,
    minimum=1,
)
AUTO_CLEAN = _boolean("hoodie.clean.automatic", "Clean after each commit.", "write", default=True)
KEEP_MIN_COMMITS = _integer(
    "hoodie.keep.min.commits",
    "Archiving leaves at least this many commits on the active timeline.",
    "write",
    default=20,
    minimum=1,
)
KEEP_MAX_COMMITS = _integer(
    "hoodie.keep.max.commits",
    "Archiving starts when the active timeline holds more commits than this.",
    "write",
    default=30,
    minimum=1,
)
AUTO_ARCHIVE = _boolean(
    "hoodie.archive.automatic", "Archive after each commit.", "write", default=True
)

# --- storage/lock ----------------------------------------------------------------------
LOCK_WAIT_MS = _integer(
    "hoodie.write.lock.wait_time_ms",
    "How long a writer waits for the table lock, in milliseconds.",
    "storage/lock",
    default=60_000,
    minimum=0,
)
LOCK_EXPIRE_MINUTES = _integer(
    "hoodie.write.lock.filesystem.expire",
    "Minutes after which a lock file is taken as stale (0: never).",
    "storage/lock",
    default=0,
    minimum=0,
)
HEARTBEAT_INTERVAL_MS = _integer(
    "hoodie.client.heartbeat.interval_in_ms",
    "How often a writer stamps its heartbeat, in milliseconds.",
    "storage/lock",
    default=60_000,
    minimum=1,
)
HEARTBEAT_MISSES = _integer(
    "hoodie.client.heartbeat.tolerable.misses",
    "Heartbeats a writer may miss before others take it for gone.",
    "storage/lock",
    default=2,
    minimum=0,
)

# --- read ----------------------------------------------------------------------------
QUERY_TYPE = _choice(
    "hoodie.datasource.query.type",
    "snapshot, read_optimized (base files only) or incremental (commits in a range).",
    "read",
    default="snapshot",
    choices=("snapshot", "read_optimized", "incremental"),
)
AS_OF = _string(
    "as.of.instant",
    "Time travel: the snapshot as of an instant, date-time, ISO-8601 time or epoch.",
    "read",
)
BEGIN = _string(
    "hoodie.datasource.read.begin.instanttime",
    "Incremental queries: the exclusive start instant, or 'earliest'.",
    "read",
)
END = _string(
    "hoodie.datasource.read.end.instanttime",
    "Incremental queries: the inclusive end instant (default: the latest).",
    "read",
)
INCREMENTAL_FORMAT = _choice(
    "hoodie.datasource.query.incremental.format",
    "Incremental queries: latest_state (changed rows) or cdc (change records).",
    "read",
    default="latest_state",
    choices=("latest_state", "cdc"),
)
START_OFFSET = _string(
    "hoodie.datasource.streaming.startOffset",
    "Streaming reads: earliest, latest, or the instant after which to start.",
    "read",
    default="earliest",
)

# --- sync ----------------------------------------------------------------------------
META_SYNC = _boolean(
    "hoodie.datasource.meta.sync.enable",
    "Run the sync hook (manifest and targets) after each commit.",
    "sync",
    default=False,
)
SYNC_IGNORE_EXCEPTIONS = _boolean(
    "hoodie.meta.sync.ignore_exceptions",
    "hudi_sync.spark.write: report a failed post-commit sync in WriteResult.sync instead "
    "of raising MetaSyncError (the commit stands either way; Hive sync's "
    "hoodie.datasource.hive_sync.ignore_exceptions, for every target).",
    "sync",
    default=False,
)
SYNC_TOOLS = _list(
    "hoodie.meta.sync.client.tool.class",
    "Sync targets, comma-separated: bigquery (or Hudi's BigQuerySyncTool), snowflake, duckdb, "
    "iceberg.",
    "sync",
)
MANIFEST_KEEP = _integer(
    "hoodie.manifest.snapshots.retained",
    "Published manifest snapshots to keep.",
    "sync/manifest",
    default=5,
    minimum=1,
)
DELTA_COMMITS = _integer(
    "hoodie.manifest.delta.commits",
    "Publish delta manifests, a new base every N commits (0: full manifests).",
    "sync/manifest",
    default=0,
    minimum=0,
)
LOG_FOLD_PROCESSES = _integer(
    "hudi_sync.sync.log.fold.processes",
    "Merge-on-Read tables: worker processes folding the slices with new log files into "
    "the Parquet files of the _rt view (0: one per CPU; 1: in the syncing process). "
    "Workers start only when each gets at least 500 slices (a first sync).",
    "sync",
    default=0,
    minimum=0,
)
CHANGE_FEED = _choice(
    "hudi_sync.sync.change.feed",
    "The change feed <t>_changes (each synced commit's changes, under "
    ".hoodie/manifest/changes): auto (tables with hoodie.table.cdc.enabled=true), on "
    "(every table; without CDC the changes are inferred from Merge-on-Read log files and, "
    "on Copy-on-Write, by comparing each rewritten base file with its previous version) or "
    "off.",
    "sync",
    default="auto",
    choices=("auto", "on", "off"),
)
SKIP_RO_SUFFIX = _boolean(
    "hoodie.datasource.hive_sync.skip_ro_suffix",
    "Merge-on-Read tables: name the read-optimized view <t> instead of <t>_ro "
    "(the snapshot view is <t>_rt either way).",
    "sync",
    default=False,
)
DUCKDB_DATABASE = _string(
    "hoodie.duckdb.sync.database", "DuckDB target: the database file.", "sync/duckdb"
)
DUCKDB_TABLE = _string(
    "hoodie.duckdb.sync.table_name",
    "DuckDB target: the view's name (default: the table's).",
    "sync/duckdb",
)

# --- sync/iceberg: the table's snapshots published as Iceberg metadata, and its catalog ---
_ICE = "sync/iceberg"
ICEBERG_PREFIX = "hudi_sync.sync.iceberg."
ICEBERG_CATALOG_URI = _string(
    ICEBERG_PREFIX + "catalog.uri",
    "Iceberg target: the catalog the table is registered in and committed to each sync: an "
    "Iceberg REST catalog (http(s)://host:port/path, port and path optional: the base its "
    "/v1/config is under) or "
    "a SQL catalog as pyiceberg's SqlCatalog names it, sqlite:///<path> (a relative path "
    "after the third /, an absolute one after a fourth). Unset: the metadata is published "
    "in the table's storage (version-hint.text) and no catalog is touched.",
    _ICE,
)
ICEBERG_CATALOG_TOKEN_FILE = _string(
    ICEBERG_PREFIX + "catalog.token.file",
    "Iceberg target, REST catalog: a file holding the bearer token sent as "
    "'Authorization: Bearer <token>' (never printed or logged).",
    _ICE,
)
ICEBERG_CATALOG_TOKEN_ENV = _string(
    ICEBERG_PREFIX + "catalog.token.env",
    "Iceberg target, REST catalog: the environment variable holding the bearer token "
    "(instead of catalog.token.file; never printed or logged).",
    _ICE,
)
ICEBERG_CATALOG_NAME = _string(
    ICEBERG_PREFIX + "catalog.name",
    "Iceberg target: the catalog's name (the catalog_name column of a SQL catalog's tables; "
    "the warehouse a REST catalog's /v1/config is asked for).",
    _ICE,
    default="hudi_sync",
)
ICEBERG_NAMESPACE = _string(
    ICEBERG_PREFIX + "namespace",
    "Iceberg target: the namespace the table is registered in (created when missing).",
    _ICE,
    default="default",
)
ICEBERG_METRICS = _choice(
    ICEBERG_PREFIX + "metrics.source",
    "Iceberg target: where a base file's manifest metrics come from when it is first "
    "published: footers (its Parquet footer: record count, size, per-column value and null "
    "counts and exact bounds, which warehouses prune files by; one read of each file) or "
    "commit (record count and size from the commit metadata that wrote it, no column "
    "metrics, no file opened: a large table's first publication in a few seconds; a file "
    "whose write stat is missing or disagrees with it is read as with footers).",
    _ICE,
    default="footers",
    choices=("footers", "commit"),
)
ICEBERG_TABLE = _string(
    ICEBERG_PREFIX + "table_name",
    "Iceberg target: the catalog table's name (default: the Hudi table's).",
    _ICE,
)

# --- sync/bigquery: Hudi's BigQuerySyncTool keys ----------------------------------------
_BQ = "sync/bigquery"
BIGQUERY_PROJECT_ID = _string(BIGQUERY_PREFIX + "project_id", "Target project.", _BQ)
BIGQUERY_DATASET_NAME = _string(BIGQUERY_PREFIX + "dataset_name", "Target dataset.", _BQ)
BIGQUERY_TABLE_NAME = _string(
    BIGQUERY_PREFIX + "table_name", "View (or table) name (default: the table's).", _BQ
)
BIGQUERY_DATASET_LOCATION = _string(
    BIGQUERY_PREFIX + "dataset_location", "Location of a dataset the sync creates.", _BQ
)
BIGQUERY_BILLING_PROJECT_ID = _string(
    BIGQUERY_PREFIX + "billing.project.id", "Project billed for the sync's jobs.", _BQ
)
BIGQUERY_SOURCE_URI = _list(
    BIGQUERY_PREFIX + "source_uri", "URIs of the history table, comma-separated.", _BQ
)
BIGQUERY_SOURCE_URI_PREFIX = _string(
    BIGQUERY_PREFIX + "source_uri_prefix", "The table's gs:// location.", _BQ
)
BIGQUERY_USE_MANIFEST_FILE = _boolean(
    BIGQUERY_PREFIX + "use_bq_manifest_file",
    "One external table over the manifest file instead of tables and a view.",
    _BQ,
    default=False,
)
BIGQUERY_PARTITION_FIELDS = _list(
    BIGQUERY_PREFIX + "partition_fields", "Partition columns, comma-separated.", _BQ
)
BIGQUERY_REQUIRE_PARTITION_FILTER = _boolean(
    BIGQUERY_PREFIX + "require_partition_filter",
    "Queries of the history table must filter on partitions.",
    _BQ,
    default=False,
)
BIGQUERY_BIG_LAKE_CONNECTION_ID = _string(
    BIGQUERY_PREFIX + "big_lake_connection_id", "BigLake connection of the external tables.", _BQ
)
BIGQUERY_BASE_PATH = _string(
    BIGQUERY_PREFIX + "base_path", "Accepted and ignored: the table is the one synced.", _BQ
)
BIGQUERY_FILE_LISTING = _string(
    BIGQUERY_PREFIX + "use_file_listing_from_metadata",
    "Accepted and ignored: files are listed from the timeline.",
    _BQ,
)
BIGQUERY_DATE_PARTITIONING = _string(
    BIGQUERY_PREFIX + "assume_date_partitioning",
    "Accepted and ignored: partitions are read from the table.",
    _BQ,
)
BIGQUERY_RETRY_SECONDS = _number(
    BIGQUERY_PREFIX + "retry_seconds",
    "hudi_sync's own: how long each BigQuery API call is retried (no answer, 5xx, rate "
    "limits) before the sync fails with it; a watch reports the failure and retries later.",
    _BQ,
    default=60.0,
    minimum=0,
)
BIGQUERY_ICEBERG = _choice(
    BIGQUERY_PREFIX + "iceberg",
    "hudi_sync's own: read the snapshot published as Iceberg through the external table "
    "<t>_iceberg: off, beside (the manifest objects too) or only (that table alone).",
    _BQ,
    default="off",
    choices=("off", "beside", "only"),
)
BIGQUERY_ICEBERG_CONNECTION = _string(
    BIGQUERY_PREFIX + "iceberg.connection",
    "hudi_sync's own: the BigLake connection of <t>_iceberg (project.location.connection, or "
    "projects/P/locations/L/connections/C); required unless iceberg is off.",
    _BQ,
)
BIGQUERY_API_ENDPOINT = _string(
    BIGQUERY_PREFIX + "api_endpoint",
    "hudi_sync's own: a BigQuery API endpoint (an emulator), reached without credentials.",
    _BQ,
)

# --- sync/snowflake (each also a SNOWFLAKE_<NAME> environment variable) -----------------
_SF = "sync/snowflake"


def _snowflake(name: str, doc: str) -> OptionSpec[str | None]:
    return _string(SNOWFLAKE_PREFIX + name, doc, _SF)


SNOWFLAKE_ACCOUNT = _snowflake("account", "Account identifier.")
SNOWFLAKE_USER = _snowflake("user", "Login name.")
SNOWFLAKE_PASSWORD = _snowflake("password", "Password (secret: never printed).")
SNOWFLAKE_ROLE = _snowflake("role", "Role the sync runs as.")
SNOWFLAKE_WAREHOUSE = _snowflake("warehouse", "Virtual warehouse.")
SNOWFLAKE_DATABASE = _snowflake("database", "Database of the objects (required).")
SNOWFLAKE_SCHEMA = _snowflake("schema", "Schema of the objects (required).")
SNOWFLAKE_AUTHENTICATOR = _snowflake("authenticator", "e.g. SNOWFLAKE_JWT, externalbrowser.")
SNOWFLAKE_PRIVATE_KEY_FILE = _snowflake("private_key_file", "Key-pair authentication key (PEM).")
SNOWFLAKE_PRIVATE_KEY_FILE_PWD = _snowflake(
    "private_key_file_pwd", "Passphrase of the private key (secret)."
)
SNOWFLAKE_TOKEN = _snowflake("token", "OAuth token (secret).")
SNOWFLAKE_HOST = _snowflake("host", "Host name[:port], when not derived from the account.")
SNOWFLAKE_TABLE_NAME = _snowflake("table_name", "View name (default: the table's).")
SNOWFLAKE_STAGE_NAME = _snowflake("stage_name", "An existing stage to use as is.")
SNOWFLAKE_STAGE_URL = _snowflake("stage_url", "The table's location as Snowflake reads it.")
SNOWFLAKE_STORAGE_INTEGRATION = _snowflake(
    "storage_integration", "Storage integration of the stage the sync creates."
)
SNOWFLAKE_AWS_KEY_ID = _snowflake("aws_key_id", "Stage credentials: AWS access key id.")
SNOWFLAKE_AWS_SECRET_KEY = _snowflake(
    "aws_secret_key", "Stage credentials: AWS secret key (secret)."
)
SNOWFLAKE_AWS_TOKEN = _snowflake("aws_token", "Stage credentials: AWS session token (secret).")
SNOWFLAKE_AZURE_SAS_TOKEN = _snowflake(
    "azure_sas_token", "Stage credentials: Azure SAS token (secret)."
)
SNOWFLAKE_ICEBERG = _choice(
    SNOWFLAKE_PREFIX + "iceberg",
    "hudi_sync's own: read the snapshot published as Iceberg through the Iceberg table "
    "<t>_iceberg: off, beside (the stage, external tables and views too) or only.",
    _SF,
    default="off",
    choices=("off", "beside", "only"),
)
SNOWFLAKE_ICEBERG_EXTERNAL_VOLUME = _snowflake(
    "iceberg.external_volume",
    "External volume over the table's location (required unless iceberg is off).",
)
SNOWFLAKE_ICEBERG_CATALOG_INTEGRATION = _snowflake(
    "iceberg.catalog_integration",
    "Object-store catalog integration (CATALOG_SOURCE = OBJECT_STORE; required unless iceberg "
    "is off).",
)
SNOWFLAKE_ICEBERG_VOLUME_URL = _snowflake(
    "iceberg.volume_url",
    "The external volume's active storage location (STORAGE_BASE_URL), which metadata paths "
    "are relative to (default: the table's location as Snowflake reads it).",
)
# Secrets: from SNOWFLAKE_* variables or --props only (a command line is seen by others).
SNOWFLAKE_SECRETS = frozenset(
    spec.key
    for spec in (
        SNOWFLAKE_PASSWORD,
        SNOWFLAKE_PRIVATE_KEY_FILE_PWD,
        SNOWFLAKE_TOKEN,
        SNOWFLAKE_AWS_SECRET_KEY,
        SNOWFLAKE_AWS_TOKEN,
        SNOWFLAKE_AZURE_SAS_TOKEN,
    )
)

# --- debezium: Hudi's streamer names, Kafka's, Debezium's and the registry's --------------
TOPIC = _list(
    doc="Kafka topics to read, comma-separated.",
    group="debezium",
    **_streamer("source.kafka.topic"),
)
MAX_EVENTS = _integer(
    doc="Events per batch.",
    group="debezium",
    default=100_000,
    minimum=1,
    **_streamer("kafka.source.maxEvents"),
)
REGISTRY_URL = _string(
    "hoodie.streamer.schemaprovider.registry.url",
    "Schema registry URL (Avro events); may hold user:password@.",
    "debezium",
    alternates=("hoodie.deltastreamer.schemaprovider.registry.url", "schema.registry.url"),
)
TRUNCATE_POLICY = _choice(
    doc="A truncate event: fail, ignore it, or delete every row.",
    group="debezium",
    default="fail",
    choices=("fail", "ignore", "delete"),
    **_streamer("debezium.truncate.policy"),
)
ON_ERROR = _choice(
    doc="A bad event: stop, or skip it and log it to the dead-letter file.",
    group="debezium",
    default="stop",
    choices=("stop", "skip"),
    **_streamer("debezium.on.error"),
)
DEAD_LETTER = _string(
    doc="Local JSON-lines file the skipped events are appended to.",
    group="debezium",
    default="debezium-dead-letter.jsonl",
    **_streamer("debezium.dead.letter.path"),
)
BOOTSTRAP_SERVERS = _string(
    "bootstrap.servers",
    "Kafka brokers, host:port[,host:port].",
    "debezium",
    default="localhost:9092",
)
GROUP_ID = _string("group.id", "Kafka consumer group (offsets are kept in commits).", "debezium")
AUTO_OFFSET_RESET = _choice(
    "auto.offset.reset",
    "Where a first run starts reading: earliest or latest.",
    "debezium",
    default="earliest",
    choices=("earliest", "latest"),
)
PLACEHOLDER = _string(
    "unavailable.value.placeholder",
    "Debezium's placeholder for an unchanged TOAST value (compared as given).",
    "debezium",
)
BINARY_MODE = _choice(
    "binary.handling.mode",
    "Debezium's encoding of binary columns sent as text.",
    "debezium",
    default="bytes",
    choices=("bytes", "base64", "base64-url-safe", "hex"),
)
REGISTRY_USER_INFO = _string(
    "basic.auth.user.info",
    "Schema registry basic auth, user:password (secret).",
    "debezium",
    alternates=("schema.registry.basic.auth.user.info",),
)
REGISTRY_CREDENTIALS_SOURCE = _string(
    "basic.auth.credentials.source",
    "USER_INFO (basic.auth.user.info) or URL (user:password@ in the registry URL).",
    "debezium",
    alternates=("schema.registry.basic.auth.credentials.source",),
)

# --- hoodie.properties: table properties, not options ------------------------------------
# The table's properties file under .hoodie; its keys are the group of the same name.
PROPERTIES_FILE = "hoodie.properties"
_PROPS = PROPERTIES_FILE
TABLE_VERSION_PROPERTY = _integer("hoodie.table.version", "Table version (6, 8, 9).", _PROPS)
TIMELINE_LAYOUT = _integer(
    "hoodie.timeline.layout.version", "Timeline layout: 1 for version 6, 2 after.", _PROPS
)
TABLE_TYPE = _string(
    "hoodie.table.type", "COPY_ON_WRITE or MERGE_ON_READ.", _PROPS, default="COPY_ON_WRITE"
)
BASE_FILE_FORMAT = _string(
    "hoodie.table.base.file.format",
    "Base file format: PARQUET, ORC, ...",
    _PROPS,
    default="PARQUET",
)
DATABASE_NAME = _string(
    "hoodie.database.name", "Database name (part of the checksum).", _PROPS, default=""
)
CHECKSUM = _integer("hoodie.table.checksum", "CRC32 of '<database>.<table name>'.", _PROPS)
RECORD_KEY_FIELDS = _list("hoodie.table.recordkey.fields", "Record key fields.", _PROPS)
PARTITION_FIELDS = _list("hoodie.table.partition.fields", "Partition fields.", _PROPS)
PRECOMBINE_FIELD = _list(
    "hoodie.table.precombine.field", "Ordering field(s) (the name before Hudi 1.1).", _PROPS
)
ORDERING_FIELDS = _list(
    "hoodie.table.ordering.fields", "Ordering fields (Hudi 1.1's name).", _PROPS, versions=(9,)
)
KEY_GENERATOR_CLASS = _string("hoodie.table.keygenerator.class", "Key generator class.", _PROPS)
KEY_GENERATOR_TYPE = _string(
    "hoodie.table.keygenerator.type",
    "Key generator type: SIMPLE, COMPLEX, NON_PARTITION...",
    _PROPS,
    versions=(8, 9),
)
URL_ENCODE_PARTITIONS = _boolean(
    "hoodie.datasource.write.partitionpath.urlencode",
    "Partition values are escaped as %XX, as Hudi's PartitionPathEncodeUtils does (a write "
    "option at creation; later writes keep the table's).",
    _PROPS,
    default=False,
)
DROP_PARTITION_COLUMNS = _boolean(
    "hoodie.datasource.write.drop.partition.columns",
    "Partition columns are left out of the base files.",
    _PROPS,
    default=False,
)
PARTITION_METAFILE_BASE_FORMAT = _boolean(
    "hoodie.partition.metafile.use.base.format",
    "Partition metafiles are Parquet (.hoodie_partition_metadata.parquet) instead of "
    "properties text; tables so written are read and synced, but hudi_sync's writer "
    "writes the text form only and refuses the option, or such a table, when true.",
    _PROPS,
    default=False,
)
POPULATE_META_FIELDS = _boolean(
    "hoodie.populate.meta.fields",
    "Base files hold the _hoodie_* meta columns (hudi_sync writes only such tables).",
    _PROPS,
    default=True,
)
TIMELINE_TIMEZONE = _string(
    "hoodie.table.timeline.timezone",
    "LOCAL or UTC: the zone of instant times.",
    _PROPS,
    default="LOCAL",
)
ARCHIVE_FOLDER = _string(
    "hoodie.archivelog.folder",
    "Folder of the archived timeline under .hoodie.",
    _PROPS,
    default="archived",
)
TIMELINE_PATH = _string(
    "hoodie.timeline.path",
    "Folder of the active timeline under .hoodie.",
    _PROPS,
    default="timeline",
    versions=(8, 9),
)
TIMELINE_HISTORY_PATH = _string(
    "hoodie.timeline.history.path",
    "Folder of the LSM timeline history under the timeline.",
    _PROPS,
    default="history",
    versions=(8, 9),
)
INITIAL_VERSION = _integer(
    "hoodie.table.initial.version", "Version the table was created at.", _PROPS, versions=(8, 9)
)
RECORD_MERGE_MODE = _string(
    "hoodie.record.merge.mode",
    "How records merge, e.g. EVENT_TIME_ORDERING.",
    _PROPS,
    versions=(8, 9),
)
PAYLOAD_CLASS = _string(
    "hoodie.compaction.payload.class",
    "Payload class; before version 9 it decides how a MOR snapshot merges records.",
    _PROPS,
    alternates=("hoodie.table.legacy.payload.class", "hoodie.datasource.write.payload.class"),
)
MERGE_STRATEGY_ID = _string(
    "hoodie.record.merge.strategy.id",
    "Record merger strategy (a UUID); version 8 infers the merge mode from it first.",
    _PROPS,
    alternates=("hoodie.compaction.record.merger.strategy",),
)
PARTIAL_UPDATE_MODE = _string(
    "hoodie.table.partial.update.mode",
    "How partial updates merge (Hudi 1.1); hudi_sync reads tables with NONE only.",
    _PROPS,
    default="NONE",
    versions=(9,),
)
MERGE_DELETE_FIELD = _string(
    "hoodie.record.merge.property.hoodie.payload.delete.field",
    "A column: a log record whose value of it equals the delete marker is a delete (Hudi 1.1).",
    _PROPS,
    versions=(9,),
)
MERGE_DELETE_MARKER = _string(
    "hoodie.record.merge.property.hoodie.payload.delete.marker",
    "The delete field's value that marks a log record as a delete (Hudi 1.1).",
    _PROPS,
    versions=(9,),
)
TABLE_FORMAT = _string("hoodie.table.format", "Table format (Hudi 1.1).", _PROPS, versions=(9,))
METADATA_PARTITIONS = _list(
    "hoodie.table.metadata.partitions", "Partitions of the metadata table built.", _PROPS
)
CREATE_SCHEMA = _string(
    "hoodie.table.create.schema", "Avro schema (JSON) the table was created with.", _PROPS
)

METADATA_PARTITIONS_INFLIGHT = _list(
    "hoodie.table.metadata.partitions.inflight",
    "Partitions of the metadata table being built.",
    _PROPS,
)
INDEX_DEFS_PATH = _string(
    "hoodie.table.index.defs.path", "Where the index definitions are (index.json).", _PROPS
)

# --- metadata table: which of its partitions a write keeps ---------------------------
_MDT = "metadata"
METADATA_ENABLE = _boolean(
    "hoodie.metadata.enable",
    "false: a write deletes the table's metadata table (as Hudi does) and goes on.",
    _MDT,
    default=True,
)
METADATA_COLUMN_STATS = _boolean(
    "hoodie.metadata.index.column.stats.enable",
    "false: a write drops the metadata table's column_stats partition.",
    _MDT,
    default=True,
)
METADATA_PARTITION_STATS = _boolean(
    "hoodie.metadata.index.partition.stats.enable",
    "false: a write drops the metadata table's partition_stats partition.",
    _MDT,
    default=True,
)
METADATA_RECORD_INDEX = _boolean(
    "hoodie.metadata.record.index.enable",
    "false: a write drops the metadata table's record_index partition.",
    _MDT,
    default=True,
)
METADATA_COMPACT_MAX_DELTA_COMMITS = _integer(
    "hoodie.metadata.compact.max.delta.commits",
    "Deltacommits on the metadata table since its last compaction that trigger the next.",
    _MDT,
    default=10,
    minimum=1,
)
METADATA_SECONDARY_INDEX = _boolean(
    "hoodie.metadata.index.secondary.enable",
    "false: a write drops the metadata table's secondary_index_* partitions.",
    _MDT,
    default=True,
)
METADATA_BLOOM_FILTERS = _boolean(
    "hoodie.metadata.index.bloom.filter.enable",
    "false: a write drops the metadata table's bloom_filters partition.",
    _MDT,
    default=True,
)

OPTIONS: tuple[OptionSpec[Any], ...] = declared()
_BY_NAME: dict[str, OptionSpec[Any]] = {name: spec for spec in OPTIONS for name in spec.names}


def option(key: str) -> OptionSpec[Any]:
    """The spec declaring ``key`` (or having it as an alternate spelling)."""
    try:
        return _BY_NAME[key]
    except KeyError:
        raise KeyError(f"{key} is not a declared option (hudi_sync.config)") from None


def group(name: str) -> tuple[OptionSpec[Any], ...]:
    """The specs of one group, in declaration order."""
    return tuple(spec for spec in OPTIONS if spec.group == name)


# --- keys in hudi_sync's own namespaces that no option declares: misspelt ---------------
_log = logging.getLogger(__name__)
_OWN = __name__.split(".")[0] + "."  # hudi_sync.*


def owned_prefixes() -> tuple[str, ...]:
    """The namespaces hudi_sync owns, derived from the declarations: ``hudi_sync.*`` and,
    for each group of a target's or the manifest's options (``sync/<name>``), the dotted
    prefix its keys share (``hoodie.gcp.bigquery.sync.``, ``hoodie.manifest.``...). Other
    ``hoodie.*`` keys are Hudi's: the ones hudi_sync does not read pass quietly, as in Hudi."""
    prefixes = {_OWN}
    for name in sorted({spec.group for spec in OPTIONS if spec.group.startswith("sync/")}):
        keys = [key.split(".") for spec in group(name) for key in spec.names]
        shared: list[str] = []
        for parts in zip(*(key[:-1] for key in keys), strict=False):  # the names' folders
            if len(set(parts)) > 1:
                break
            shared.append(parts[0])
        if len(shared) >= 2:  # never all of hoodie.*: that is Hudi's
            prefixes.add(".".join(shared) + ".")
    return tuple(sorted(prefixes))


_OWNED = owned_prefixes()
_said: set[str] = set()


def unknown_options(options: Mapping[str, object]) -> list[str]:
    """One line per key in an owned namespace that no option declares, naming the
    closest declared one when there is one."""
    lines = []
    for key in sorted(str(k) for k in options):
        if key in _BY_NAME or not key.startswith(_OWNED):
            continue
        close = closest_option(key)
        hint = f"; did you mean {close}?" if close else ""
        lines.append(f"{key} is not an option hudi_sync knows{hint}")
    return lines


def closest_option(key: str) -> str | None:
    """The declared option ``key`` most likely misspells, if one is close: compared after
    the longest owned namespace they share (a long shared prefix would make any two
    keys of one namespace look alike)."""
    prefix = max((p for p in _OWNED if key.startswith(p)), key=len, default="")
    names = {name[len(prefix) :]: name for name in _BY_NAME if name.startswith(prefix)}
    close = difflib.get_close_matches(key[len(prefix) :], list(names), n=1)
    return names[close[0]] if close else None


def warn_unknown_options(
    options: Mapping[str, object], say: Callable[[str], None] | None = None
) -> list[str]:
    """Warn once per process of each misspelt owned key (``unknown_options``): through
    ``say`` (the CLI's stderr) or the ``hudi_sync.config`` logger (the hook, in a writer
    or a watch that reads the same options each poll). Returns the lines said now."""
    new = [line for line in unknown_options(options) if line not in _said]
    _said.update(new)
    for line in new:
        (say or _log.warning)(line)
    return new
