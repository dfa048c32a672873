"""Concurrency control between writers of one table (local disk or object store).

- ``TableLock``: ``.hoodie/lock``, published with a conditional create
  (``Location.write_file(exclusive=True)``: a hard link locally, ``If-None-Match`` on S3,
  ``ifGenerationMatch=0`` on GCS; Hudi's file-system lock provider uses the same file). A writer
  holds it only while it checks for conflicts and completes its commit, and while it
  rolls back failed writes. A lock whose owner process is gone (same host) is broken;
  so is one older than ``hoodie.write.lock.filesystem.expire`` minutes (Hudi's option,
  0 = never), which is how a lock left by a dead writer on another host goes away.
  The age is the store's modification time against this host's clock, so a skew
  between them shortens or lengthens it.
- ``Heartbeat``: ``.hoodie/.heartbeat/<instant>``, touched while a write runs, so other
  writers roll back only pending writes whose writer is gone: its process no longer
  exists (same host) or the heartbeat stopped for ``tolerable misses`` intervals.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from types import TracebackType

from hudi_sync import config as cfg
from hudi_sync.errors import LockTimeoutError
from hudi_sync.storage import Location

LOCK_FILE = "lock"
HEARTBEAT_FOLDER = ".heartbeat"


def _owner() -> dict[str, object]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "time": time.time()}


def _owner_is_gone(owner: dict[str, object]) -> bool:
    """True when the owner ran on this host and its process no longer exists."""
    if owner.get("host") != socket.gethostname():
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _owner_bytes() -> bytes:
    return json.dumps(_owner()).encode()


def _read_owner(location: Location, path: str) -> dict[str, object] | None:
    try:
        data = json.loads(location.read_file(path))
    except FileNotFoundError:
        return None
    except (ValueError, OSError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


class TableLock:
    """The table's writer lock (``hoodie.write.lock.wait_time_ms`` bounds the wait);
    ``hoodie_folder`` is a path on ``location.fs``."""

    def __init__(
        self,
        location: Location,
        hoodie_folder: str,
        wait_ms: int = 60_000,
        poll_ms: int = 50,
        expire_minutes: int = 0,
    ) -> None:
        self.location = location
        self.path = f"{hoodie_folder.rstrip('/')}/{LOCK_FILE}"
        self.wait_ms = wait_ms
        self.poll_ms = poll_ms
        self.expire_minutes = expire_minutes
        self._held = False

    def _is_stale(self, owner: dict[str, object] | None) -> bool:
        """The owner is gone (same host), or the lock is older than the expiry."""
        if owner and _owner_is_gone(owner):
            return True
        if self.expire_minutes <= 0:
            return False
        try:
            age = time.time() - _modified(self.location, self.path)
        except FileNotFoundError:
            return False  # released meanwhile: the next attempt takes it
        return age > self.expire_minutes * 60

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_ms / 1000
        while True:
            try:
                self.location.write_file(self.path, _owner_bytes(), exclusive=True)
            except FileExistsError:
                owner = _read_owner(self.location, self.path)
                if self._is_stale(owner):
                    self.location.remove(self.path)
                    continue
                if time.monotonic() >= deadline:
                    where = self.path
                    if not self.location.is_local:
                        where = self.location.fs.unstrip_protocol(self.path)
                    raise LockTimeoutError(
                        f"{where}: another writer held the table "
                        f"lock for more than {self.wait_ms} ms ({cfg.LOCK_WAIT_MS.key}); "
                        f"owner {owner}; if that writer is gone, delete the file or set "
                        f"{cfg.LOCK_EXPIRE_MINUTES.key} (minutes)"
                    ) from None
                time.sleep(self.poll_ms / 1000)
                continue
            self._held = True
            return

    def release(self) -> None:
        if self._held:
            self._held = False
            self.location.remove(self.path)

    def __enter__(self) -> TableLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


class Heartbeat:
    """Keeps ``.hoodie/.heartbeat/<instant>`` fresh while a write runs."""

    def __init__(
        self, location: Location, hoodie_folder: str, instant: str, interval_ms: int
    ) -> None:
        self.location = location
        self.folder = f"{hoodie_folder.rstrip('/')}/{HEARTBEAT_FOLDER}"
        self.path = f"{self.folder}/{instant}"
        self.interval = interval_ms / 1000
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name=f"heartbeat-{instant}")

    def _touch(self) -> None:
        self.location.write_file(self.path, _owner_bytes())

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(OSError):
                self._touch()

    def start(self) -> None:
        self.location.ensure_folder(self.folder)
        self._touch()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with contextlib.suppress(OSError):
            self.location.remove(self.path)

    def __enter__(self) -> Heartbeat:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def remove_heartbeat(location: Location, hoodie_folder: str, instant: str) -> None:
    """A dead writer's heartbeat file, deleted once its write is rolled back (as Hudi's
    ``rollbackFailedWrites`` deletes it): nothing of the failed write stays behind."""
    location.remove(f"{hoodie_folder.rstrip('/')}/{HEARTBEAT_FOLDER}/{instant}")


def writer_is_gone(
    location: Location, hoodie_folder: str, instant: str, interval_ms: int, misses: int
) -> bool:
    """Whether the writer of pending ``instant`` has stopped (its write failed)."""
    path = f"{hoodie_folder.rstrip('/')}/{HEARTBEAT_FOLDER}/{instant}"
    owner = _read_owner(location, path)
    if owner is None:
        return True
    if owner and _owner_is_gone(owner):
        return True
    try:
        touched = _modified(location, path)
    except FileNotFoundError:
        return True
    return time.time() - touched > interval_ms / 1000 * (misses + 1)


def _modified(location: Location, path: str) -> float:
    """When the file at ``path`` was last written (epoch seconds)."""
    if location.is_local:
        return os.stat(path).st_mtime
    location.fs.invalidate_cache(path)
    return float(location.fs.modified(path).timestamp())
