"""A command that needs a module only an extra brings says, when that module is missing,
in one line which extra to install (``pip install 'hudi-sync[EXTRA]'``), and exits 1.

The suite's venv has every extra, so each case runs in a child Python where the modules
are made unimportable (``sys.modules[name] = None``, which makes ``import name`` raise
ModuleNotFoundError as a missing package does); ``scripts/install_check.sh`` runs the
BigQuery case again in a venv that really lacks the extra."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

_CHILD = """
import json, sys
from typer.testing import CliRunner
for name in json.loads(sys.argv[1]):
    sys.modules[name] = None
from hudi_sync.cli.app import app
results = []
for args in json.loads(sys.argv[2]):
    result = CliRunner().invoke(app, args)
    results.append([result.exit_code, result.stderr, result.stdout])
print(json.dumps(results))
"""


def _run_without(absent: list[str], commands: list[list[str]]) -> list[tuple[int, str, str]]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(absent), json.dumps(commands)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return [(code, stderr, stdout) for code, stderr, stdout in json.loads(done.stdout)]


def test_commands_name_the_extra_to_install(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    table = str(fixture_copy("cow/v8_complexkeygen_hivestyle"))
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": 1}\n')
    # (not pandas: pyarrow probes for it and takes None for a module)
    absent = ["pyspark", "google", "requests", "snowflake", "s3fs", "gcsfs"]
    bigquery = ["--project-id", "test-project", "--dataset-name", "lake", "--table-name", "t"]
    bigquery += ["--source-uri-prefix", "gs://lake/trips"]
    snowflake = ["--database", "hudi", "--schema", "lake", "--table-name", "t"]
    snowflake += ["--stage-url", "s3://lake/trips"]
    commands = [
        ["write", table, str(rows)],
        ["show", "instants", "s3://bucket/trips"],
        ["show", "instants", "gs://bucket/trips"],
        [
            "sync",
            "bigquery",
            table,
            *bigquery,
            "--source-uri-prefix",
            "gs://lake/trips",
            "--dry-run",
        ],
        ["sync", "snowflake", table, *snowflake, "--stage-url", "s3://lake/trips", "--dry-run"],
    ]
    # The hook's path (backfill, watch, a write's post-commit sync) reports each target's
    # failure in its row, naming the extra too.
    lake = tmp_path / "lake"
    shutil.copytree(table, lake / "trips")
    hook = ["--conf", "hoodie.meta.sync.client.tool.class=bigquery"]
    hook += ["--conf", "hoodie.gcp.bigquery.sync.project_id=test-project"]
    hook += ["--conf", "hoodie.gcp.bigquery.sync.dataset_name=lake"]
    hook += ["--conf", "hoodie.gcp.bigquery.sync.source_uri_prefix=gs://lake/trips"]
    commands.append(["backfill", str(lake), *hook, "--json"])
    results = _run_without(absent, commands)
    code, _, stdout = results.pop()
    row, summary = (json.loads(line) for line in stdout.splitlines())
    assert summary["event"] == "summary" and summary["failed"] == 1
    assert code == 1 and row["errors"].endswith("pip install 'hudi-sync[bigquery]'"), row
    expected = ["spark", "s3", "gcs", "bigquery", "snowflake"]
    for (code, stderr, _), extra in zip(results, expected, strict=True):
        assert code == 1, stderr
        [line] = stderr.splitlines()
        assert line.startswith("error: ") and line.endswith(f"pip install 'hudi-sync[{extra}]'")
    assert not (Path(table) / ".hoodie" / "manifest").exists()  # nothing published
