"""The table lock (``.hoodie/lock``): a lock whose owner is gone or that is older than
``hoodie.write.lock.filesystem.expire`` is broken; a live one times out in one line that
names the file and the way out."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hudi_sync.errors import LockTimeoutError
from hudi_sync.storage import Location, open_location
from hudi_sync.table.write.lock import TableLock
from tests.objectstores import S3Store


def _hold(location: Location, hoodie: str, host: str, pid: int) -> str:
    """Another writer's lock file, as it writes it."""
    path = f"{hoodie}/lock"
    owner = {"host": host, "pid": pid, "time": time.time()}
    location.write_file(path, json.dumps(owner).encode(), exclusive=True)
    return path


def _owner_pid(location: Location, path: str) -> int:
    return int(json.loads(location.read_file(path))["pid"])


@pytest.fixture
def local_hoodie(tmp_path: Path) -> tuple[Location, str]:
    (tmp_path / ".hoodie").mkdir()
    location = open_location(str(tmp_path))
    return location, location.join(".hoodie")


def test_a_live_lock_from_another_host_times_out_naming_the_file(local_hoodie) -> None:  # type: ignore[no-untyped-def]
    location, hoodie = local_hoodie
    path = _hold(location, hoodie, "another-host", 1)
    with pytest.raises(LockTimeoutError) as caught:
        TableLock(location, hoodie, wait_ms=200).acquire()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: another writer held the table lock for more than 200 ms")
    assert "hoodie.write.lock.filesystem.expire" in message
    assert _owner_pid(location, path) == 1  # not taken from its owner


def test_an_expired_lock_from_another_host_is_broken(local_hoodie) -> None:  # type: ignore[no-untyped-def]
    location, hoodie = local_hoodie
    path = _hold(location, hoodie, "another-host", 1)
    lock = TableLock(location, hoodie, wait_ms=200, expire_minutes=2)
    with pytest.raises(LockTimeoutError):  # one minute old: not expired yet
        os.utime(path, (time.time() - 60, time.time() - 60))
        lock.acquire()
    os.utime(path, (time.time() - 121, time.time() - 121))
    with lock:
        assert _owner_pid(location, path) == os.getpid()
    assert not os.path.exists(path)


def test_a_lock_whose_process_ended_on_this_host_is_broken(local_hoodie) -> None:  # type: ignore[no-untyped-def]
    location, hoodie = local_hoodie
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    path = _hold(location, hoodie, socket.gethostname(), int(ended.stdout))
    with TableLock(location, hoodie, wait_ms=200):
        assert _owner_pid(location, path) == os.getpid()


def test_expiry_on_s3_uses_the_objects_modification_time(  # type: ignore[no-untyped-def]
    s3_server: S3Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a store the lock's age comes from the object's modification time: fresh, it
    holds; seen from a clock three minutes later, it has expired and is broken."""
    location = open_location(f"s3://{s3_server.make_bucket()}/t", s3_server.storage_options)
    hoodie = location.join(".hoodie")
    path = _hold(location, hoodie, "another-host", 1)
    lock = TableLock(location, hoodie, wait_ms=200, expire_minutes=2)
    with pytest.raises(LockTimeoutError, match=r"^s3://.*/t/\.hoodie/lock: another writer"):
        lock.acquire()
    later = time.time() + 180
    monkeypatch.setattr(time, "time", lambda: later)
    with lock:
        assert _owner_pid(location, path) == os.getpid()
