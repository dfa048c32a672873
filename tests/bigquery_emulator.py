"""Session-scoped pytest fixture running the BigQuery emulator ``local-bigquery``.

Import the fixture from ``tests/conftest.py``::

    from tests.bigquery_emulator import bigquery_emulator  # noqa: F401

local-bigquery needs Python 3.13, so it lives in its own venv (``.venv-bq``, made by
``scripts/bigquery_emulator_env.sh``) and runs as a subprocess. It reads ``gs://`` URIs of load
jobs straight from fake-gcs-server's filesystem root (``GCS_LOCAL_ROOT``), so objects uploaded
with ``gcs_server.upload_dir()`` are what its load jobs read. Its external tables store their
configuration but read no files: see ``tests/test_bigquery_emulator.py`` for what it supports.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.objectstores import GcsStore, _free_port, _stop_process, wait_for_http

if TYPE_CHECKING:
    from google.cloud import bigquery

REPO = Path(__file__).resolve().parents[1]
ENV_SCRIPT = REPO / "scripts" / "bigquery_emulator_env.sh"
VENV = REPO / ".venv-bq"
PROJECT = "test-project"
# Settings local-bigquery reads from the environment (pydantic-settings, case-insensitive):
# none may leak in from the test process. STORAGE_EMULATOR_HOST in particular would make it
# read gs:// over HTTP through DuckDB's httpfs instead of from GCS_LOCAL_ROOT.
EMULATOR_SETTINGS = frozenset(
    {
        "BIGQUERY_PORT", "BIGQUERY_HOST", "GRPC_PORT", "DATA_DIR", "DEFAULT_PROJECT_ID",
        "DEFAULT_DATASET_ID", "CALLER", "GROUPS", "POSTGRES_CONNECTION_ID", "GCS_LOCAL_ROOT",
        "STORAGE_EMULATOR_HOST", "POSTGRES_URI",
    }
)  # fmt: skip


class BigQueryEmulator:
    """A running local-bigquery server for project ``project``."""

    def __init__(
        self, endpoint_url: str, project: str, log_path: Path, startup_seconds: float
    ) -> None:
        self.endpoint_url = endpoint_url
        self.project = project
        self.log_path = log_path
        self.startup_seconds = startup_seconds  # from spawning the process to its first answer

    def client(self) -> bigquery.Client:
        """Return a new BigQuery client bound to the emulator, without credentials."""
        from google.api_core.client_options import ClientOptions
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import bigquery

        return bigquery.Client(
            project=self.project,
            credentials=AnonymousCredentials(),
            client_options=ClientOptions(api_endpoint=self.endpoint_url),
        )

    def log_tail(self, chars: int = 3000) -> str:
        """Return the end of the emulator's log (stdout and stderr)."""
        return self.log_path.read_text(errors="replace")[-chars:]


def ensure_venv() -> Path:
    """Run ``scripts/bigquery_emulator_env.sh`` (a no-op once done); return the server binary."""
    result = subprocess.run(
        ["bash", str(ENV_SCRIPT)], cwd=REPO, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{ENV_SCRIPT.name} failed ({result.returncode}):\n"
            f"{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return VENV / "bin" / "local-bigquery"


def emulator_env(gcs_root: Path) -> dict[str, str]:
    """The environment to run local-bigquery with: offline and isolated from this process."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key.upper() not in EMULATOR_SETTINGS and not key.upper().startswith("OTEL_")
    }
    env.update(
        # DuckDB finds the extensions installed by the env script under $HOME/.duckdb and
        # so never downloads one (INSTALL spatial at start-up is then a no-op).
        HOME=str(VENV / "home"),
        GCS_LOCAL_ROOT=str(gcs_root),
        OTEL_SDK_DISABLED="true",  # FastAPI's OpenTelemetry hooks export nothing
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        PYTHONUNBUFFERED="1",
    )
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    return env


@contextlib.contextmanager
def running_bigquery_emulator(gcs_server: GcsStore, base: Path) -> Iterator[BigQueryEmulator]:
    """Run local-bigquery on 127.0.0.1 (free ports), reading ``gs://`` from
    ``gcs_server``'s filesystem root; its state lives under ``base``."""
    binary = ensure_venv()
    log_path = base / "server.log"
    env = emulator_env(gcs_server.root)
    for _attempt in range(3):  # a free port may be taken by the time the server binds it
        port, grpc_port = _free_port(), _free_port()
        url = f"http://127.0.0.1:{port}"
        data_dir = base / f"data-{uuid.uuid4().hex[:8]}"
        args = [
            str(binary), "serve", "--host", "127.0.0.1", "--port", str(port),
            "--grpc-port", str(grpc_port), "--project", PROJECT, "--data-dir", str(data_dir),
        ]  # fmt: skip
        started = time.monotonic()
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=base
            )
        try:
            # Listing datasets opens its DuckDB catalog and loads the extensions.
            datasets = f"{url}/bigquery/v2/projects/{PROJECT}/datasets"
            if wait_for_http(process, datasets, "local-bigquery", 60.0, 10.0):
                startup_seconds = time.monotonic() - started
                break
        except Exception as exc:  # it did not answer in time
            _stop_process(process)
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"local-bigquery failed to start: {exc}\n{tail}") from exc
        except BaseException:
            _stop_process(process)
            raise
    else:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"local-bigquery failed to start:\n{tail}")
    try:
        yield BigQueryEmulator(url, PROJECT, log_path, startup_seconds)
    finally:
        _stop_process(process)


@pytest.fixture(scope="session")
def bigquery_emulator(
    gcs_server: GcsStore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BigQueryEmulator]:
    """local-bigquery for the session, over the session's fake-gcs-server."""
    with running_bigquery_emulator(gcs_server, tmp_path_factory.mktemp("bigquery")) as emulator:
        yield emulator


def materialise(
    client: bigquery.Client,
    table_id: str,
    uris: list[str] | None = None,
    destination: str | None = None,
) -> None:
    """Replace an external table by a native one loaded from the same files and options
    (or, with ``destination``, load that table instead and keep the external one)."""
    from google.cloud import bigquery

    table = client.get_table(table_id)
    external = dict(table.external_data_configuration.to_api_repr())
    # The emulator's parquet load fails on an explicit BYTES column ("from_base64(BLOB)");
    # such tables are loaded with the schema read from the files instead.
    has_bytes = any(f.field_type == "BYTES" for f in table.schema)
    schema = None if has_bytes else table.schema
    config = bigquery.LoadJobConfig(source_format=external["sourceFormat"], schema=schema)
    if external["sourceFormat"] == "CSV":
        config.skip_leading_rows = 0
        csv_options = external.get("csvOptions", {})
        config.field_delimiter = csv_options.get("fieldDelimiter", ",")
        config.quote_character = csv_options.get("quote", '"')
    if "hivePartitioningOptions" in external:
        config.hive_partitioning = bigquery.HivePartitioningOptions.from_api_repr(
            external["hivePartitioningOptions"]
        )
    if destination is None:
        client.delete_table(table_id)
    else:
        client.delete_table(destination, not_found_ok=True)
    target = destination or table_id
    client.load_table_from_uri(uris or external["sourceUris"], target, job_config=config).result()
