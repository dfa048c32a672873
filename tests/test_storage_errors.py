"""An object store that refuses us or does not answer is one line naming the table, with
no traceback and no secret: missing credentials, access denied, an unreachable endpoint."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from hudi_sync.errors import StorageAccessError, StorageUnreachableError
from hudi_sync.spark import write
from hudi_sync.storage import storage_failure
from tests.objectstores import GuardedS3
from tests.test_spark_writer import frame, options

SECRET = "do-not-print-me"


def _cli(args: list[str], env: dict[str, str], home: Path) -> subprocess.CompletedProcess[str]:
    """``hudi-sync`` with no AWS credentials anywhere but ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    clean |= {
        "AWS_CONFIG_FILE": str(home / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "hudi_sync.cli.app", *args],
        capture_output=True,
        text=True,
        check=False,
        env=clean,
        timeout=300,
    )


def test_no_credentials_is_one_line_and_exit_2(s3_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    uri = f"s3://{s3_server.make_bucket()}/lake/t"
    args = ["show", "files", uri, "-o", f"client_kwargs.endpoint_url={s3_server.endpoint_url}"]
    result = _cli(args, {}, tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {uri}: no usable credentials for the object store")


def test_an_unreachable_endpoint_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """One attempt (``AWS_MAX_ATTEMPTS=1``): botocore's default retries of a refused
    connection end in the same error some 10 s later."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    uri = "s3://lake/t"
    args = ["show", "files", uri, "-o", f"client_kwargs.endpoint_url=http://127.0.0.1:{port}"]
    env = {
        "AWS_ACCESS_KEY_ID": "someone",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_MAX_ATTEMPTS": "1",
    }
    result = _cli(args, env, tmp_path)
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {uri}: the object store did not answer")
    assert SECRET not in result.stderr and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def guarded_s3() -> Iterator[GuardedS3]:
    with GuardedS3.running() as server:
        yield server


@pytest.fixture
def guarded_table(guarded_s3: GuardedS3, fixture_copy) -> str:  # type: ignore[no-untyped-def]
    """A real Hudi table uploaded by the admin key, at a fresh prefix."""
    local = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    prefix = f"{GuardedS3.BUCKET}/t-{uuid.uuid4().hex[:8]}"
    guarded_s3.fs().put(str(local), prefix, recursive=True)
    return f"s3://{prefix}"


def _reader_env(guarded_s3: GuardedS3) -> dict[str, str]:
    key, secret = guarded_s3.keys["reader"]
    return {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret}


def _objects(guarded_s3: GuardedS3, uri: str) -> list[str]:
    return sorted(guarded_s3.fs().find(uri.removeprefix("s3://")))


def test_a_read_only_key_reads_but_publishing_is_denied_in_one_line(  # type: ignore[no-untyped-def]
    guarded_s3: GuardedS3, guarded_table: str, tmp_path: Path
) -> None:
    """The server enforces IAM policies: the reader key lists the table, and the
    manifest's first PUT is refused, so the command stops there with nothing written."""
    endpoint = f"client_kwargs.endpoint_url={guarded_s3.endpoint_url}"
    env = _reader_env(guarded_s3)
    shown = _cli(["show", "files", guarded_table, "-o", endpoint], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert ".parquet" in shown.stdout
    before = _objects(guarded_s3, guarded_table)
    result = _cli(["manifest", guarded_table, "-o", endpoint], env, tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {guarded_table}: access denied by the object store (")
    assert env["AWS_SECRET_ACCESS_KEY"] not in result.stderr
    assert _objects(guarded_s3, guarded_table) == before


def test_an_unknown_key_is_refused_in_one_line(  # type: ignore[no-untyped-def]
    guarded_s3: GuardedS3, guarded_table: str, tmp_path: Path
) -> None:
    endpoint = f"client_kwargs.endpoint_url={guarded_s3.endpoint_url}"
    env = {"AWS_ACCESS_KEY_ID": "AKIANOBODY", "AWS_SECRET_ACCESS_KEY": SECRET}
    result = _cli(["show", "files", guarded_table, "-o", endpoint], env, tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {guarded_table}: access denied by the object store (")
    assert SECRET not in result.stderr


def test_a_spark_write_with_a_read_only_key_is_denied_before_the_timeline_moves(  # type: ignore[no-untyped-def]
    spark, guarded_s3: GuardedS3
) -> None:
    """The admin key writes the table; the reader key's upsert is refused at its first
    PUT (the table lock) in one line, and the table's objects are as they were."""
    uri = f"s3://{GuardedS3.BUCKET}/w-{uuid.uuid4().hex[:8]}"
    rows = [{"id": 1, "p": "a", "name": "x", "ts": 1}]
    write(
        frame(spark, rows, False),
        uri,
        options("w", 8, "insert"),
        guarded_s3.storage_options("admin"),
    )
    before = _objects(guarded_s3, uri)
    assert any(name.endswith(".commit") for name in before)
    with pytest.raises(StorageAccessError) as caught:
        write(
            frame(spark, [{**rows[0], "ts": 2}], False),
            uri,
            options("w", 8, "upsert"),
            guarded_s3.storage_options("reader"),
        )
    assert str(caught.value).startswith(f"{uri}: access denied by the object store (")
    assert _objects(guarded_s3, uri) == before


@pytest.mark.parametrize(
    "refusal",
    [
        PermissionError("Access Denied"),  # what s3fs and gcsfs raise for a 403
        ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "GetObject"),
    ],
)
def test_access_denied_is_a_bad_input(refusal: Exception) -> None:
    """The exception objects the clients raise for a 403: fake-gcs-server grants every
    request, so gcsfs's refusal cannot be provoked here (moto's can: the tests above)."""
    failure = storage_failure(refusal, "s3://lake/t")
    assert isinstance(failure, StorageAccessError)
    assert str(failure).startswith("s3://lake/t: access denied by the object store (")


def test_a_refused_connection_is_unreachable_and_other_errors_are_left_alone() -> None:
    refused = storage_failure(ConnectionRefusedError("refused"), "gs://b/t")
    assert isinstance(refused, StorageUnreachableError)
    assert not isinstance(refused, StorageAccessError)  # exit 1: retrying may help
    assert storage_failure(ValueError("bad"), "s3://lake/t") is None
    assert storage_failure(FileNotFoundError("t"), "s3://lake/t") is None


# A store whose connection drops in the middle of a Parquet file: every call site that
# reads a Parquet file through an fsspec file goes through ``storage.read_parquet``.
FLAKY_READ = """
import io, sys, time
import pyarrow as pa, pyarrow.parquet as pq
from fsspec.implementations.memory import MemoryFileSystem
from hudi_sync.storage import Location
from hudi_sync.table.cdc.read import _read_table

class DroppingFile(io.RawIOBase):
    # Slow reads of a file whose connection drops at the second one (its data).
    def __init__(self, data):
        self.data, self.pos, self.reads = data, 0, 0
    def readable(self): return True
    def seekable(self): return True
    def seek(self, offset, whence=0):
        base = {0: 0, 1: self.pos, 2: len(self.data)}[whence]
        self.pos = base + offset
        return self.pos
    def tell(self): return self.pos
    def readinto(self, buffer):
        self.reads += 1
        time.sleep(0.01)
        if self.reads == 2:
            raise OSError("connection reset by peer")
        chunk = self.data[self.pos : self.pos + len(buffer)]
        buffer[: len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)

class DroppingStore(MemoryFileSystem):
    def _open(self, path, mode="rb", **kwargs):
        if mode != "rb":
            return super()._open(path, mode, **kwargs)
        return DroppingFile(self.cat_file(path))

fs = DroppingStore()
buffer = io.BytesIO()
columns = {f"c{k}": [str(i) * 3 for i in range(100_000)] for k in range(8)}
pq.write_table(pa.table(columns), buffer, row_group_size=10_000)
fs.pipe_file("/t/f.parquet", buffer.getvalue())
location = Location(fs, "/t", "memory://t")
try:
    _read_table(location, "f.parquet")
except OSError as exc:
    print("error:", exc)
sys.exit(2)
"""


def test_a_parquet_read_that_fails_midway_exits_with_its_own_code(tmp_path: Path) -> None:
    """The connection drops in the middle of a base file the CDC query reads: the error
    reaches the caller and the process exits with its own code. Measured while finding
    the cause of the exit-134 aborts: ``pq.read_table`` over such a file (ten row groups,
    the fourth read failing) left Arrow's threads calling into Python after the error,
    and 1 run in 10 aborted at shutdown with "terminate called without an active
    exception" (12 in 12 single-threaded); ``pq.ParquetFile``, which
    ``storage.read_parquet`` uses, 0 in 30."""
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", FLAKY_READ],
            cwd=Path(__file__).resolve().parents[1],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 2, err[-2000:]
        assert "error: connection reset by peer" in out
