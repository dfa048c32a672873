"""Error types.

Every error a user can cause by pointing hudi_sync at bad input derives from
``BadInputError``; the CLI turns those into exit code 2 with a one-line message
and everything else into exit code 1.
"""

from __future__ import annotations

from typing import Any


class HudiSyncError(Exception):
    """Base class of every error hudi_sync raises on purpose."""


class BadInputError(HudiSyncError):
    """The input (table, option, timestamp) is wrong; retrying will not help."""


class TableNotFoundError(BadInputError):
    """The URI does not hold a Hudi table (no ``.hoodie/hoodie.properties``)."""


class UnsupportedTableError(BadInputError):
    """The table uses a version, layout or format hudi_sync does not read."""


class StorageAccessError(BadInputError):
    """The object store refused us: no credentials, bad credentials, access denied."""


class MissingExtraError(HudiSyncError):
    """A command needs a package that an extra of ``pip install 'hudi-sync[EXTRA]'``
    brings (PySpark, a warehouse client, an object-store filesystem), and it is not
    installed (``hudi_sync.extras``)."""


class StorageUnreachableError(HudiSyncError):
    """The object store's endpoint did not answer; retrying may help."""


class CorruptTableError(BadInputError):
    """A timeline file, properties file or file name cannot be parsed."""


class TimeTravelError(BadInputError):
    """A time-travel timestamp is malformed or cannot be served (cleaned, pending)."""


class WriteError(HudiSyncError):
    """A write failed; the table is left readable at its previous snapshot."""


class WriteConflictError(WriteError):
    """Another writer committed changes to the same file groups first."""


class LockTimeoutError(WriteError):
    """Another writer held the table lock for longer than the wait allowed."""


class MetaSyncError(HudiSyncError):
    """A commit completed, but its post-commit sync failed: the commit stands (as in
    Hudi, whose writer fails the job after meta sync fails) and ``result`` is what the
    write returned, with the failed targets in ``result.sync.errors``."""

    def __init__(self, instant: str, errors: str, result: Any) -> None:
        super().__init__(f"committed {instant}, but the sync failed: {errors}")
        self.instant = instant
        self.result: Any = result  # a WriteResult (this module imports no writer)


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none): what a
    one-line report of a failure underneath shows."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
