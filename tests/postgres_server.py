"""A throwaway PostgreSQL 15 server set up for logical decoding (Debezium), for tests.

Usage, as a context manager or wrapped in a pytest fixture by the caller::

    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY)")

``initdb`` and ``postgres`` refuse to run as root, so under root both run as the ``postgres``
system user (``runuser -u postgres --``) on a temp dir chowned to it; otherwise as the current
user. The server listens on 127.0.0.1 on a free port, with its socket in the temp dir, and
trusts every local and loopback connection (user ``postgres``, no password).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.kafka_broker import free_port, log_tail
from tests.service import Service

if TYPE_CHECKING:
    import psycopg

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SUPERUSER = "postgres"


class PostgresServer(Service):
    """A PostgreSQL 15 cluster in a temp dir with ``wal_level=logical``; stopped on exit."""

    def __init__(
        self,
        *,
        dbname: str = "postgres",  # created at start if it is another one
        settings: dict[str, str] | None = None,  # postgresql.conf values, quoted as there
        startup_timeout: float = 60.0,
        start_attempts: int = 3,
    ) -> None:
        self.dbname = dbname
        self.settings = settings or {}
        self.startup_timeout = startup_timeout
        self.start_attempts = start_attempts
        self.host = "127.0.0.1"
        self.user = SUPERUSER
        self.port = 0
        self._tmp: Path | None = None
        self._run_as: list[str] = []

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory (removed on exit)."""
        if self._tmp is None:
            raise RuntimeError("the server is not running")
        return self._tmp / "data"

    @property
    def log_path(self) -> Path:
        """The server log written by ``pg_ctl -l`` (removed on exit)."""
        if self._tmp is None:
            raise RuntimeError("the server is not running")
        return self._tmp / "postgres.log"

    @property
    def dsn(self) -> str:
        """A libpq connection string for the superuser over TCP."""
        return f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        """A new psycopg connection in autocommit mode (close it, e.g. with ``with``)."""
        import psycopg

        kwargs.setdefault("autocommit", True)
        return psycopg.connect(self.dsn, **kwargs)

    # -- lifecycle ---------------------------------------------------------------------------

    def _run(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL binary as the cluster's owner; raise with its output on failure."""
        command = [*self._run_as, *(str(a) for a in args)]
        result = subprocess.run(
            command, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} exited with {result.returncode}:\n"
                f"{result.stdout}{result.stderr}"
            )
        return result

    def start(self) -> None:
        """initdb, write the config, start with ``pg_ctl -w`` and wait until psycopg connects.

        A server that cannot bind its port (taken since it was picked) is retried on another.
        """
        self._tmp = Path(tempfile.mkdtemp(prefix="postgres-"))
        if os.geteuid() == 0:
            owner = pwd.getpwnam(SUPERUSER)
            os.chown(self._tmp, owner.pw_uid, owner.pw_gid)
            self._run_as = ["runuser", "-u", SUPERUSER, "--"]
        try:
            self._run(
                PG_BIN / "initdb",
                "-D",
                self.data_dir,
                "-U",
                self.user,
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            )
            error = ""
            for _ in range(self.start_attempts):
                self.port = free_port()
                self._write_config()
                try:
                    self._run(
                        PG_BIN / "pg_ctl",
                        "start",
                        "-D",
                        self.data_dir,
                        "-l",
                        self.log_path,
                        "-w",
                        "-t",
                        str(int(self.startup_timeout)),
                    )
                except RuntimeError as exc:
                    error = f"{exc}\n--- postgres log ---\n{log_tail(self.log_path)}"
                    continue
                self._wait_ready()
                return
            raise RuntimeError(f"PostgreSQL did not start: {error}")
        except BaseException:
            self.stop()
            raise

    def _write_config(self) -> None:
        """(Re)write the settings, appended to postgresql.conf (the last value wins)."""
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self._tmp}'",
            "wal_level": "logical",
            "max_replication_slots": "4",
            "max_wal_senders": "4",
            "fsync": "off",  # a throwaway cluster: durability buys nothing
            "synchronous_commit": "off",
            "full_page_writes": "off",
            **self.settings,
        }
        conf = self.data_dir / "postgresql.conf"
        text = conf.read_text()
        marker = "\n# --- tests.postgres_server ---\n"
        text = text.split(marker)[0] + marker
        text += "".join(f"{name} = {value}\n" for name, value in settings.items())
        conf.write_text(text)

    def _wait_ready(self) -> None:
        """Wait until TCP connections work (pg_ctl -w checks the socket); create ``dbname``."""
        import psycopg
        from psycopg import sql

        deadline = time.monotonic() + self.startup_timeout
        dsn = f"host={self.host} port={self.port} user={self.user} dbname=postgres"
        while True:
            try:
                with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
                    if self.dbname != "postgres":
                        conn.execute(
                            sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.dbname))
                        )
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server at once (``pg_ctl stop -m immediate``) and remove the temp dir."""
        if self._tmp is None:
            return
        if (self.data_dir / "postmaster.pid").exists():
            # A server already gone fails this; the temp dir goes regardless.
            with contextlib.suppress(RuntimeError):
                self._run(PG_BIN / "pg_ctl", "stop", "-D", self.data_dir, "-m", "immediate", "-w")
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp = None
        self.port = 0
