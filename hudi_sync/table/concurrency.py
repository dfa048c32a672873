"""Concurrency control between writers of one table (local file systems).

- ``TableLock``: ``.hoodie/lock``, created with ``O_CREAT | O_EXCL`` (the file system's
  conditional create; Hudi's file-system lock provider uses the same file). A writer
  holds it only while it checks for conflicts and completes its commit, and while it
  rolls back failed writes. A lock whose owner process is gone (same host) is broken.
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

from hudi_sync.errors import LockTimeoutError

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


def _read_owner(path: str) -> dict[str, object] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return None
    except (ValueError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


class TableLock:
    """The table's writer lock (``hoodie.write.lock.wait_time_ms`` bounds the wait)."""

    def __init__(self, hoodie_folder: str, wait_ms: int = 60_000, poll_ms: int = 50) -> None:
        self.path = os.path.join(hoodie_folder, LOCK_FILE)
        self.wait_ms = wait_ms
        self.poll_ms = poll_ms
        self._held = False

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_ms / 1000
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                owner = _read_owner(self.path)
                if owner and _owner_is_gone(owner):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.path)
                    continue
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"{self.path}: another writer held the table lock for more than "
                        f"{self.wait_ms} ms (hoodie.write.lock.wait_time_ms); owner {owner}"
                    ) from None
                time.sleep(self.poll_ms / 1000)
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(_owner(), handle)
            self._held = True
            return

    def release(self) -> None:
        if self._held:
            self._held = False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

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

    def __init__(self, hoodie_folder: str, instant: str, interval_ms: int) -> None:
        self.folder = os.path.join(hoodie_folder, HEARTBEAT_FOLDER)
        self.path = os.path.join(self.folder, instant)
        self.interval = interval_ms / 1000
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name=f"heartbeat-{instant}")

    def _touch(self) -> None:
        with open(self.path, "w", encoding="utf-8") as handle:
            json.dump(_owner(), handle)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(OSError):
                self._touch()

    def start(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        self._touch()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def __enter__(self) -> Heartbeat:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def writer_is_gone(hoodie_folder: str, instant: str, interval_ms: int, misses: int) -> bool:
    """Whether the writer of pending ``instant`` has stopped (its write failed)."""
    path = os.path.join(hoodie_folder, HEARTBEAT_FOLDER, instant)
    owner = _read_owner(path)
    if owner is None:
        return True
    if owner and _owner_is_gone(owner):
        return True
    try:
        age = time.time() - os.stat(path).st_mtime
    except FileNotFoundError:
        return True
    return age > interval_ms / 1000 * (misses + 1)
