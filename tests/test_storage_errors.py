"""An object store that refuses us or does not answer is one line naming the table, with
no traceback and no secret: missing credentials, access denied, an unreachable endpoint."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from hudi_sync.errors import StorageAccessError, StorageUnreachableError
from hudi_sync.storage import storage_failure

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
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    uri = "s3://lake/t"
    args = ["show", "files", uri, "-o", f"client_kwargs.endpoint_url=http://127.0.0.1:{port}"]
    env = {"AWS_ACCESS_KEY_ID": "someone", "AWS_SECRET_ACCESS_KEY": SECRET}
    result = _cli(args, env, tmp_path)
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {uri}: the object store did not answer")
    assert SECRET not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "refusal",
    [
        PermissionError("Access Denied"),  # what s3fs and gcsfs raise for a 403
        ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "GetObject"),
    ],
)
def test_access_denied_is_a_bad_input(refusal: Exception) -> None:
    """moto and fake-gcs-server grant every request, so the refusals are the exception
    objects the clients raise for a 403 (a stand-in where no real part can refuse)."""
    failure = storage_failure(refusal, "s3://lake/t")
    assert isinstance(failure, StorageAccessError)
    assert str(failure).startswith("s3://lake/t: access denied by the object store (")


def test_a_refused_connection_is_unreachable_and_other_errors_are_left_alone() -> None:
    refused = storage_failure(ConnectionRefusedError("refused"), "gs://b/t")
    assert isinstance(refused, StorageUnreachableError)
    assert not isinstance(refused, StorageAccessError)  # exit 1: retrying may help
    assert storage_failure(ValueError("bad"), "s3://lake/t") is None
    assert storage_failure(FileNotFoundError("t"), "s3://lake/t") is None
