from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.bigquery_emulator import bigquery_emulator  # noqa: F401  (session fixture)
from tests.fixture_tables import FixtureTable, unpack
from tests.objectstores import gcs_server, s3_server  # noqa: F401  (session fixtures)

# Every JVM the tests start (this session's, the child writers', local-cluster executors,
# the Spark Connect server) lives for seconds to minutes on small data: C1-only JIT spends
# far less CPU compiling than C2 would win back. Measured on 2 CPUs: a local-cluster write
# sequence 79 s -> 44 s, tests/test_spark_writer.py 218 s -> 165 s. Set here so that child
# processes inherit it; a PYSPARK_SUBMIT_ARGS of your own wins.
# JVM warnings go to stderr, not the JVM's default stdout: CLI children print JSON there.
_QUICK_JVM = "-XX:TieredStopAtLevel=1 -Xlog:disable -Xlog:all=warning:stderr"
_REPO = Path(__file__).resolve().parents[1]
# What the JVM that dumps the class archive runs: a session, a shuffle, a parquet round trip.
_ARCHIVE_JOB = """
import sys, tempfile
from hudi_sync.spark import local_session
spark = local_session("hudi_sync-tests-class-archive")
with tempfile.TemporaryDirectory() as tmp:
    spark.range(100).selectExpr("id", "cast(id % 7 as string) AS s").write.parquet(tmp + "/t")
    spark.read.parquet(tmp + "/t").groupBy("s").count().collect()
spark.stop()
"""


def _class_archive() -> Path | None:
    """Spark's classes as a class-data-sharing archive (made once per Spark install and
    Java, under the temp dir), which every JVM the tests start maps instead of loading and
    verifying some 10,000 classes from jars: a session with one small job measured 13.8 ->
    8.0 CPU-s. The first pytest process (not an xdist worker) makes it with a tiny session
    that dumps its classes at exit; a JVM ignores an archive that does not match it."""
    import hashlib
    import importlib.util
    import shutil
    import subprocess
    import sys
    import tempfile

    spec = importlib.util.find_spec("pyspark")
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if spec is None or spec.origin is None or java is None:
        return None
    # The archive holds the class path it was made with, directories included: a JVM
    # whose jars sit elsewhere (another clone's venv) cannot use it, so they make the key.
    jars = sorted(str(p) for p in (Path(spec.origin).resolve().parent / "jars").glob("*.jar"))
    key = hashlib.sha256(f"{os.path.realpath(java)}\n{jars}".encode()).hexdigest()[:16]
    archive = Path(tempfile.gettempdir()) / f"hudi_sync-tests-spark-{key}.jsa"
    if not archive.exists() and "PYTEST_XDIST_WORKER" not in os.environ:
        partial = archive.with_suffix(f".{os.getpid()}.partial")
        options = f"{_QUICK_JVM} -XX:ArchiveClassesAtExit={partial}"
        env = dict(
            os.environ,
            PYSPARK_SUBMIT_ARGS=f"--conf 'spark.driver.extraJavaOptions={options}' pyspark-shell",
        )
        done = subprocess.run(
            [sys.executable, "-c", _ARCHIVE_JOB],
            cwd=_REPO,
            env=env,
            capture_output=True,
            check=False,
            timeout=900,
        )
        if done.returncode == 0 and partial.exists():
            os.replace(partial, archive)  # whole or not at all: other runs may read it
        partial.unlink(missing_ok=True)
    return archive if archive.exists() else None


def _jvm_options() -> str:
    archive = _class_archive()
    return f"{_QUICK_JVM} -XX:SharedArchiveFile={archive}" if archive else _QUICK_JVM


if "PYSPARK_SUBMIT_ARGS" not in os.environ:
    _options = _jvm_options()
    os.environ["PYSPARK_SUBMIT_ARGS"] = (
        f"--conf 'spark.driver.extraJavaOptions={_options}' "
        f"--conf 'spark.executor.extraJavaOptions={_options}' pyspark-shell"
    )


# Each test's last call duration, kept in pytest's cache (.pytest_cache) by every run, so
# that `scripts/test.sh --quick` can leave out the tests that took longer than
# HUDI_SYNC_QUICK_SLOW seconds when they last ran (docs/testing.md).
_DURATIONS_KEY = "hudi_sync/durations"
_durations: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":  # under xdist the controller sees every worker's reports
        _durations[report.nodeid] = round(report.duration, 2)


def pytest_sessionfinish(session: pytest.Session) -> None:
    cache = getattr(session.config, "cache", None)
    if cache is None or hasattr(session.config, "workerinput") or not _durations:
        return  # no cache (-p no:cacheprovider), or an xdist worker: the controller writes
    known = cache.get(_DURATIONS_KEY, {})
    known.update(_durations)
    cache.set(_DURATIONS_KEY, known)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    limit = os.environ.get("HUDI_SYNC_QUICK_SLOW")
    cache = getattr(config, "cache", None)
    if not limit or cache is None:
        return
    known = cache.get(_DURATIONS_KEY, {})
    slow = {item for item in items if known.get(item.nodeid, 0.0) > float(limit)}
    if slow:
        config.hook.pytest_deselected(items=list(slow))
        items[:] = [item for item in items if item not in slow]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Say what the quick run left out (xdist workers deselect silently)."""
    limit = os.environ.get("HUDI_SYNC_QUICK_SLOW")
    cache = getattr(config, "cache", None)
    if not limit or cache is None or hasattr(config, "workerinput"):
        return
    known = cache.get(_DURATIONS_KEY, {})
    left_out = [
        nodeid
        for nodeid, seconds in known.items()
        if seconds > float(limit)
        and nodeid not in _durations
        and any(nodeid.startswith(arg.split("::")[0]) for arg in config.args)
    ]
    if left_out:
        terminalreporter.write_line(
            f"--quick left out {len(left_out)} tests that took over {limit} s when they last "
            "ran (HUDI_SYNC_QUICK_SLOW); ./scripts/test.sh without --quick runs them"
        )


@pytest.fixture(scope="session")
def fixtures_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hudi-fixtures")


@pytest.fixture(scope="session")
def unpack_table(fixtures_root: Path):  # type: ignore[no-untyped-def]
    def _unpack(table: FixtureTable) -> Path:
        return unpack(table, fixtures_root)

    return _unpack


@pytest.fixture
def fixture_copy(unpack_table, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A writable copy of one fixture table, by name suffix (``cow/v6_nonpartitioned``)."""
    import shutil

    from tests.fixture_tables import fixture_tables

    def _copy(suffix: str) -> Path:
        matches = [t for t in fixture_tables() if t.name.endswith(suffix)]
        assert len(matches) == 1, f"{suffix!r} matches {[t.name for t in matches]}"
        source = unpack_table(matches[0])
        target = tmp_path / source.name
        shutil.copytree(source, target)
        return target

    return _copy


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local Spark session for the whole run (starting one takes seconds)."""
    from hudi_sync.spark import local_session

    session = local_session("hudi_sync-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def broker():  # type: ignore[no-untyped-def]
    """A real Kafka-protocol broker (Tansu) on 127.0.0.1 for the whole run."""
    from tests.kafka_broker import KafkaBroker

    with KafkaBroker() as running:
        yield running


@pytest.fixture
def client(bigquery_emulator):  # type: ignore[no-untyped-def]  # noqa: F811 (the fixture)
    """A BigQuery client of the session's emulator."""
    return bigquery_emulator.client()


@pytest.fixture
def dataset(client):  # type: ignore[no-untyped-def]
    """A fresh BigQuery dataset, deleted with its contents afterwards."""
    import uuid

    name = f"ds_{uuid.uuid4().hex[:10]}"
    yield name
    client.delete_dataset(name, delete_contents=True, not_found_ok=True)


@pytest.fixture
def emulation(s3_server, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]  # noqa: F811
    """The Snowflake emulation (fakesnow, external tables over moto S3) with database
    HUDI and schema LAKE, and no SNOWFLAKE_* variables of the environment."""
    import snowflake.connector

    from tests.snowflake_emulation import EmulatedSnowflake

    for name in ("ACCOUNT", "USER", "PASSWORD", "DATABASE", "SCHEMA", "TABLE_NAME", "ROLE"):
        monkeypatch.delenv(f"SNOWFLAKE_{name}", raising=False)
    emulation = EmulatedSnowflake(s3_server.storage_options)
    with emulation.patched():
        snowflake.connector.connect(database="hudi", schema="lake").close()
        yield emulation
