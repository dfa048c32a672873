"""Every shell and Python snippet of README.md and docs/how-to/*.md runs as written
(``tests/doc_snippets.py``; the convention is in docs/testing.md, "Docs snippets").

Each page runs in a folder of its own (``$W``) holding the demo's table and warehouse:
``scripts/demo.sh``'s two commits of ``scripts/sample/`` (day 1 inserts six trips, day 2
upserts with a late event and a delete; the hook syncs DuckDB), written here by the
Arrow engine in this process, with the schema Spark's JSON reader gives the demo's rows.
The pages' ``s3://`` and ``gs://`` tables are that table uploaded to moto S3 and
fake-gcs-server, which the environment points the clients at.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.doc_snippets import (
    MARKS,
    NOT_RUN,
    PYTHON,
    REPO,
    SHELL,
    Snippet,
    page_script,
    pages,
    snippets,
    stray_marks,
)

SAMPLE = REPO / "scripts" / "sample"
VENV_BIN = REPO / ".venv" / "bin"
# Spark's JSON reader infers the demo's rows as: columns sorted by name, whole numbers
# long, the others double.
DEMO_SCHEMA = pa.schema(
    [
        ("_hoodie_is_deleted", pa.bool_()),
        ("city", pa.string()),
        ("fare", pa.float64()),
        ("rider", pa.string()),
        ("trip_id", pa.string()),
        ("ts", pa.int64()),
    ]
)
PAGE_SECONDS = 240


def _all_snippets() -> list[Snippet]:
    return [block for page in pages() for block in snippets(page)]


def _page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


def _properties(path: Path) -> dict[str, str]:
    options = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            options[key.strip()] = value.strip()
    return options


def build_demo(folder: Path) -> None:
    """``scripts/demo.sh``'s table and warehouse in ``folder`` (``trips``,
    ``warehouse.duckdb``): the same two writes, by the Arrow engine."""
    import pyarrow.json as pa_json

    from hudi_sync.spark import write_arrow

    options = _properties(SAMPLE / "trips.properties")
    hook = {
        "hoodie.datasource.meta.sync.enable": "true",
        "hoodie.meta.sync.client.tool.class": "duckdb",
        "hoodie.duckdb.sync.database": str(folder / "warehouse.duckdb"),
    }
    for day, operation, extra in (("1", "insert", {}), ("2", "upsert", hook)):
        rows = pa_json.read_json(SAMPLE / f"trips_day{day}.jsonl")
        rows = rows.select(DEMO_SCHEMA.names).cast(DEMO_SCHEMA)
        write_options = {**options, "hoodie.datasource.write.operation": operation, **extra}
        write_arrow(rows, str(folder / "trips"), write_options)


def test_the_demo_table_is_the_demos(tmp_path: Path) -> None:
    """The rows the pages query: t01 updated, t03's late event ignored, t05 deleted."""
    import duckdb

    build_demo(tmp_path)
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as db:
        rows = db.sql("SELECT trip_id, fare FROM trips ORDER BY 1").fetchall()
        history = db.sql("SELECT count(*) FROM trips_history").fetchall()
    assert rows == [
        ("t01", 21.40),
        ("t02", 27.70),
        ("t03", 33.90),
        ("t04", 93.50),
        ("t06", 41.06),
        ("t07", 12.80),
        ("t08", 55.25),
    ]
    assert history == [(6 + 7,)]  # day 1's three files, then day 2's three rewrites


def test_every_mark_is_known_and_not_run_ones_give_a_reason() -> None:
    blocks = _all_snippets()
    unknown = [f"{b.where}: {b.mark}" for b in blocks if b.mark and b.mark not in MARKS]
    assert not unknown, f"unknown snippet marks: {unknown}"
    reasonless = [b.where for b in blocks if b.mark == NOT_RUN and not b.reason]
    assert not reasonless, f"not-run marks without a reason: {reasonless}"
    stray = [f"{_page_id(page)}:{line}" for page in pages() for line in stray_marks(page)]
    assert not stray, f"snippet marks that are malformed or above no fence: {stray}"
    # The run folder's .venv is the suite's own: an install there would change it.
    installs = [b.where for b in blocks if b.runs and re.search(r"pip install|-m venv", b.text)]
    assert not installs, f"snippets that install must be marked not-run: {installs}"
    not_run = [b for b in blocks if b.mark == NOT_RUN]
    ran = [b for b in blocks if b.runs]
    assert len(ran) > len(not_run), (
        f"{len(not_run)} snippets are marked not-run and only {len(ran)} run: "
        + "; ".join(f"{b.where} ({b.reason})" for b in not_run)
    )


def test_every_snippet_parses() -> None:
    """Every shell and Python snippet, run or not, is valid for its language."""
    failures = []
    for block in _all_snippets():
        if block.lang in SHELL:
            checked = subprocess.run(
                ["bash", "-n"], input=block.shell_text(), capture_output=True, text=True
            )
            if checked.returncode != 0:
                failures.append(f"{block.where}: {checked.stderr.strip()}")
        elif block.lang in PYTHON:
            try:
                ast.parse(block.text, filename=block.where)
            except SyntaxError as error:
                failures.append(f"{block.where}: {error}")
    assert not failures, "\n".join(failures)


def _aws_profiles(folder: Path, endpoint_url: str) -> dict[str, str]:
    """AWS settings of the pages' profiles (default, prod) pointing at moto."""
    config = folder / ".aws-config"
    credentials = folder / ".aws-credentials"
    profile = f"region = us-east-1\nendpoint_url = {endpoint_url}\n"
    config.write_text(f"[default]\n{profile}[profile prod]\n{profile}", encoding="utf-8")
    keys = "aws_access_key_id = testing\naws_secret_access_key = testing\n"
    credentials.write_text(f"[default]\n{keys}[prod]\n{keys}", encoding="utf-8")
    return {
        "AWS_CONFIG_FILE": str(config),
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
        "AWS_ENDPOINT_URL": endpoint_url,
    }


def _environment(folder: Path, blocks: list[Snippet], request: Any) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "SNOWFLAKE_", "GOOGLE_", "HUDI_SYNC_"))
    }
    env.update(
        W=str(folder),
        PYTHONPATH=str(REPO),
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        SNIPPET_AT=str(folder / ".snippet-at"),
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    text = "".join(block.text for block in blocks if block.runs)
    s3_uris, gs_uris = _uris(text, "s3"), _uris(text, "gs")
    if s3_uris or gs_uris:
        # The table as the writer left it: the manifest the local sync published names
        # local files, and a sync of the uploaded table publishes its own.
        table = folder / ".upload" / "trips"
        manifest = folder / "trips" / ".hoodie" / "manifest"
        shutil.copytree(
            folder / "trips",
            table,
            ignore=lambda where, names: names if Path(where) == manifest else [],
        )
    for bucket, prefix in s3_uris:
        store = request.getfixturevalue("s3_server")
        _upload(store, table, bucket, prefix)
        env.update(_aws_profiles(folder, store.endpoint_url))
    for bucket, prefix in gs_uris:
        store = request.getfixturevalue("gcs_server")
        _upload(store, table, bucket, prefix)
        env["STORAGE_EMULATOR_HOST"] = store.endpoint_url
    return env


def _upload(store: Any, table: Path, bucket: str, prefix: str) -> None:
    """``table`` at ``bucket/prefix``, replacing what an earlier page of this session
    left there (its manifests, a table of another instant)."""
    store.make_bucket(bucket)
    fs = store.fs()
    if fs.exists(f"{bucket}/{prefix}"):
        fs.rm(f"{bucket}/{prefix}", recursive=True)
    store.upload_dir(table, bucket, prefix)


def _emulated(
    blocks: list[Snippet], folder: Path, env: dict[str, str], request: Any
) -> list[Snippet]:
    """``blocks`` pointed at the warehouses' emulators, by the properties files that
    hold a warehouse's keys: BigQuery's gets ``api_endpoint`` (the one option that points its
    client at local-bigquery); Snowflake's puts ``tests/docs_snowflake_cli.py`` (the CLI
    in fakesnow's emulation, over moto S3) first on the ``PATH`` as ``hudi-sync``."""
    out = []
    for block in blocks:
        keys = block.text if block.file_name else ""
        if "hoodie.gcp.bigquery.sync." in keys:
            emulator = request.getfixturevalue("bigquery_emulator")
            endpoint = f"hoodie.gcp.bigquery.sync.api_endpoint={emulator.endpoint_url}\n"
            block = replace(block, text=block.text + endpoint)
        if "hoodie.snowflake.sync." in keys:
            store = request.getfixturevalue("s3_server")
            shims = folder / ".emulated"
            shims.mkdir(exist_ok=True)
            shim = shims / "hudi-sync"
            command = f"{VENV_BIN / 'python'} -m tests.docs_snowflake_cli"
            shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n', encoding="utf-8")
            shim.chmod(0o755)
            env["PATH"] = f"{shims}{os.pathsep}{env['PATH']}"
            env["HUDI_SYNC_DOCS_S3"] = json.dumps(store.storage_options)
        out.append(block)
    return out


def _key_files(folder: Path, text: str) -> None:
    """The private keys the snippets name (``--private-key-file NAME``): the user's own
    in a real run, generated here; encrypted by the passphrase the snippet exports."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    passphrase = re.search(r"SNOWFLAKE_PRIVATE_KEY_FILE_PWD=(\S+)", text)
    for name in re.findall(r"--private-key-file\s+([\w./-]+)", text):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(passphrase[1].encode())
            if passphrase
            else serialization.NoEncryption()
        )
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
        (folder / name).write_bytes(pem)


def _uris(text: str, scheme: str) -> set[tuple[str, str]]:
    """The (bucket, prefix) of every table URI of ``scheme`` the snippets name."""
    found = set()
    for match in re.finditer(rf"{scheme}://([a-z0-9][a-z0-9.-]+)/([\w./-]*\w)", text):
        found.add((match[1], match[2]))
    return found


def _running_pages() -> list[Path]:
    """The pages with a snippet to run (one whose every snippet is marked not-run has its
    syntax checked only)."""
    return [page for page in pages() if any(block.runs for block in snippets(page))]


@pytest.mark.parametrize("page", _running_pages(), ids=_page_id)
def test_the_page_runs_as_written(page: Path, tmp_path: Path, request: Any) -> None:
    """The page's snippets, in page order, in one shell, against the demo's table."""
    blocks = snippets(page)
    folder = tmp_path / "w"
    folder.mkdir()
    build_demo(folder)
    (folder / ".venv").symlink_to(REPO / ".venv")
    for name in ("scripts", "terraform"):
        (folder / name).symlink_to(REPO / name)
    env = _environment(folder, blocks, request)
    blocks = _emulated(blocks, folder, env, request)
    _key_files(folder, "".join(block.text for block in blocks if block.runs))
    script = page_script(blocks, folder, str(VENV_BIN / "python"))
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=PAGE_SECONDS,
        check=False,
    )
    if result.returncode != 0:
        at = Path(env["SNIPPET_AT"]).read_text(encoding="utf-8").strip()
        block = next(b for b in blocks if b.where == at)
        pytest.fail(
            f"the snippet at {at} failed (exit {result.returncode}):\n{block.text}\n"
            f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}",
            pytrace=False,
        )


def test_a_failing_snippet_is_named(tmp_path: Path) -> None:
    """The runner stops at a failing block and names it: a page cannot pass by a later
    block succeeding."""
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\necho one > one.txt\n```\n\n```python\nraise SystemExit(3)\n```\n\n"
        "```bash\necho never > never.txt\n```\n",
        encoding="utf-8",
    )
    blocks = snippets(page)
    at = tmp_path / "at"
    script = page_script(blocks, tmp_path, sys.executable)
    result = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "SNIPPET_AT": str(at)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 3
    assert (tmp_path / "one.txt").exists() and not (tmp_path / "never.txt").exists()
    assert at.read_text(encoding="utf-8").strip().endswith("page.md:5")


def test_the_convention_is_read_as_documented(tmp_path: Path) -> None:
    """Marks, fences inside list items, console prompts, properties files and stray marks
    are read as docs/testing.md says."""
    page = tmp_path / "page.md"
    page.write_text(
        "- install:\n\n"
        "    <!-- snippet: not-run (installs from PyPI) -->\n"
        "    ```bash\n    pip install .\n    ```\n\n"
        "```console\n$ echo a \\\n  b\na b\n$ true\n```\n\n"
        "```properties\n# sync.properties\nk=/data/warehouse.duckdb\n```\n\n"
        "<!-- snippet: duckdb -->\n```sql\nSELECT 1\n```\n\n"
        "```sql\nSELECT 2\n```\n\n"
        "<!-- snippet: not-run -->\ntext between\n\n```python\nprint(1)\n```\n",
        encoding="utf-8",
    )
    blocks = snippets(page)
    assert [(b.lang, b.mark, b.reason, b.runs) for b in blocks] == [
        ("bash", NOT_RUN, "installs from PyPI", False),
        ("console", None, None, True),
        ("properties", None, None, True),
        ("sql", "duckdb", None, True),
        ("sql", None, None, False),
        ("python", None, None, True),
    ]
    assert blocks[0].text == "pip install .\n"
    assert blocks[1].shell_text() == "echo a \\\n  b\ntrue\n"
    assert blocks[2].file_name == "sync.properties"
    assert stray_marks(page) == [29]
    script = page_script(blocks, tmp_path, sys.executable)
    assert "pip install" not in script and "echo a" in script
    assert (tmp_path / "snippet_2.properties").read_text() == (
        f"# sync.properties\nk={tmp_path}/warehouse.duckdb\n"
    )
