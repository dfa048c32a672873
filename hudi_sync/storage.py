"""Storage access through fsspec, so every module reads local, S3, GCS and memory URIs alike."""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import functools
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from hudi_sync.errors import (
    CorruptTableError,
    HudiSyncError,
    StorageAccessError,
    StorageUnreachableError,
)
from hudi_sync.storage_preflight import check_options, preflight

# Exception class names (any in the class's ancestry) of the stores' clients: botocore
# (S3), google-auth (GCS) and aiohttp (both), told apart by name so that no client library
# has to be imported to recognise its errors.
_NO_CREDENTIALS = {
    "NoCredentialsError",
    "PartialCredentialsError",
    "DefaultCredentialsError",
    "RefreshError",
    "TransportError",
}
_UNREACHABLE = {
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ClientConnectorError",
    "ServerDisconnectedError",
    "ServerTimeoutError",
    "ConnectionError",
}
_DENIED_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled"}


@dataclass(frozen=True)
class Location:
    """A directory on some file system: the fsspec file system plus a path on it.

    ``uri`` keeps the user's spelling (with scheme) for messages and absolute URIs.
    """

    fs: fsspec.AbstractFileSystem
    path: str
    uri: str
    storage_options: Mapping[str, Any] = field(default_factory=dict)

    def join(self, *parts: str) -> str:
        """Path of ``parts`` below this location, on ``fs``."""
        tail = "/".join(p.strip("/") for p in parts if p)
        return f"{self.path.rstrip('/')}/{tail}" if tail else self.path

    def inside(self, relative: str, source: str) -> str:
        """Path on ``fs`` of ``relative``, a name read from storage (a metadata-table
        record, commit metadata, one of our own lists), which must lie strictly below this
        location: the one way such a name becomes a path. Anything else (absolute, empty,
        a ``.``, ``..`` or empty segment, a NUL) is a ``CorruptTableError`` naming
        ``source``, the file the name came from. Other characters pass: Hudi writes
        control characters and backslashes in partition values when it does not
        URL-encode them, and a manifest refuses what its lines cannot carry itself
        (``manifest.safe_paths``)."""
        return self.join(contained_relative(relative, source))

    def file_inside(self, partition: str, name: str, source: str) -> str:
        """``inside`` for a file name read from storage in a partition read from storage:
        the name is one path segment (Hudi's file names never hold ``/``)."""
        return self.join(contained_file(partition, name, source))

    def uri_of(self, relative: str) -> str:
        """Absolute URI (with scheme) of a path relative to this location."""
        relative = relative.strip("/")
        return f"{self.uri.rstrip('/')}/{relative}" if relative else self.uri

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    def missing_bucket(self) -> str | None:
        """The bucket's name when this object-store location's bucket does not exist
        (None locally, or when it exists); the store's own errors propagate."""
        if self.is_local or "://" not in self.uri:
            return None
        bucket = self.path.strip("/").split("/", 1)[0]
        return None if self.fs.exists(bucket) else bucket

    def write_file(self, path: str, data: bytes, exclusive: bool = False) -> None:
        """Publish a whole file at ``path`` (on ``fs``) so readers see none of it or all.

        Locally: a temporary file renamed into place. Object stores publish an object in
        one PUT, so it is written directly. With ``exclusive`` an existing file is a
        ``FileExistsError`` on every store: a hard link locally, a conditional create on
        S3 (``If-None-Match: *``) and GCS (``ifGenerationMatch=0``), so of two writers
        publishing the same name exactly one succeeds."""
        if self.is_local:
            write_file_atomically(path, data, exclusive=exclusive)
        else:
            self.fs.pipe_file(path, data, mode="create" if exclusive else "overwrite")

    def write_files(self, files: Sequence[tuple[str, bytes]]) -> None:
        """``write_file`` of each ``(path, data)``, made durable together: locally one
        flush of the disk for all of them (``write_files_atomically``), which costs what
        one small file's fsync does; object stores put them concurrently (one PUT each
        publishes it)."""
        if self.is_local:
            write_files_atomically(files)
        elif files:
            self.fs.pipe(dict(files))

    def read_file(self, path: str) -> bytes:
        """The whole file at ``path`` (``FileNotFoundError`` when there is none). Locally
        a plain read: fsspec's path handling costs more than reading a small file (a
        Merge-on-Read fold reads thousands of small log files)."""
        if self.is_local:
            with open(path, "rb") as handle:
                return handle.read()
        return bytes(self.fs.cat_file(path))

    def ensure_folder(self, path: str) -> None:
        """Create the folder ``path`` locally; object stores have no folders (and
        creating one at a bucket's root would create the bucket), so nothing there."""
        if self.is_local:
            self.fs.makedirs(path, exist_ok=True)

    def names(self, folder: str) -> list[str]:
        """The names of the entries in ``folder``, fresh (no cached listing); none
        when it does not exist."""
        if self.is_local:
            try:
                return os.listdir(folder)
            except (FileNotFoundError, NotADirectoryError):
                return []
        forget_listings(self.fs, folder)
        try:
            entries = self.fs.ls(folder, detail=False)
        except FileNotFoundError:
            return []
        root = folder.rstrip("/")
        return [
            str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries if str(e).rstrip("/") != root
        ]

    def files_under(self, folder: str) -> list[str]:
        """Every file below ``folder`` (recursively), as paths relative to it."""
        if not self.is_local:
            forget_listings(self.fs, folder)
        try:
            found = self.fs.find(folder)
        except FileNotFoundError:
            return []
        root = folder.rstrip("/") + "/"
        return [str(f)[len(root) :] for f in found if str(f).startswith(root)]

    def remove(self, path: str) -> bool:
        """Delete the file at ``path``; whether it existed."""
        if self.is_local:
            try:
                os.unlink(path)
            except FileNotFoundError:
                return False
            return True
        if not self.fs.exists(path):
            return False  # object stores delete a missing key without complaint
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            return False
        return True

    def move(self, source: str, target: str) -> None:
        """Move the file ``source`` to ``target`` literally: fsspec's ``mv`` and ``rm``
        expand glob characters, and a path holding ``*`` or ``[`` must never name another
        file."""
        if self.is_local:
            os.replace(source, target)
            return
        self.fs.cp_file(source, target)
        self.fs.rm_file(source)

    def remove_tree(self, folder: str) -> None:
        """Delete ``folder`` and everything below it, if anything is there."""
        if self.is_local:
            shutil.rmtree(folder, ignore_errors=True)
            return
        for relative in self.files_under(folder):
            self.remove(f"{folder.rstrip('/')}/{relative}")

    def size(self, path: str) -> int:
        """A file's size in bytes; locally a plain stat."""
        if self.is_local:
            return os.path.getsize(path)
        return int(self.fs.size(path))


def contained_relative(relative: str, source: str) -> str:
    """``relative`` checked to stay strictly below whatever folder it is joined to (see
    ``Location.inside``); returned as it is."""
    if not isinstance(relative, str) or not _is_contained(relative):
        raise CorruptTableError(
            f"{source}: path {relative!r} does not stay inside its table "
            "(absolute, empty, a '.', '..' or empty segment, or a NUL)"
        )
    return relative


def contained_name(name: str, source: str) -> str:
    """A file name read from storage, checked to be one segment of its folder (Hudi's
    file names never hold ``/``); returned as it is."""
    if not isinstance(name, str) or "/" in name or not _is_contained(name):
        raise CorruptTableError(
            f"{source}: file name {name!r} is not one file name inside its partition"
        )
    return name


def contained_file(partition: str, name: str, source: str) -> str:
    """``<partition>/<name>`` (``name`` alone for the table's root partition), the
    partition checked as ``contained_relative`` checks it and the name one segment."""
    contained_name(name, source)
    if partition == "":
        return name
    return f"{contained_relative(partition, source)}/{name}"


def contained_partition(partition: str, source: str) -> str:
    """A partition path read from storage, checked (``""`` is the table's root)."""
    return partition if partition == "" else contained_relative(partition, source)


def contained_uri(uri: str, base_uri: str, source: str) -> str:
    """The path relative to ``base_uri`` of ``uri``, an absolute URI read from storage
    (one of our own Iceberg files names its files so): it must lie strictly below the
    base, as ``contained_relative`` checks; anything else is a ``CorruptTableError``
    naming ``source``."""
    base = base_uri.rstrip("/") + "/"
    if not isinstance(uri, str) or not uri.startswith(base):
        raise CorruptTableError(f"{source}: path {uri!r} is not inside its table {base_uri!r}")
    return contained_relative(uri[len(base) :], source)


def _is_contained(relative: str) -> bool:
    if not relative or relative.startswith("/") or "\x00" in relative:
        return False
    return all(segment not in ("", ".", "..") for segment in relative.split("/"))


def storage_failure(exc: BaseException, uri: str) -> HudiSyncError | None:
    """One line for an object store's refusal or silence, or None for other errors.
    Messages name the URI and the client's own reason, never options or secrets."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if names & _NO_CREDENTIALS:
        return StorageAccessError(
            f"{uri}: no usable credentials for the object store ({reason}); set them in the "
            "environment (AWS_* for S3, GOOGLE_APPLICATION_CREDENTIALS for GCS) or as "
            "storage options"
        )
    if "ProfileNotFound" in names:  # botocore: -o profile=... or AWS_PROFILE
        profile = getattr(exc, "kwargs", {}).get("profile", "")
        return StorageAccessError(
            f"{uri}: no AWS profile {profile!r} in the AWS config files (it is named by "
            "-o profile=... or AWS_PROFILE)"
        )
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    if isinstance(exc, PermissionError) or code in _DENIED_CODES:
        return StorageAccessError(f"{uri}: access denied by the object store ({reason})")
    if names & _UNREACHABLE:
        return StorageUnreachableError(f"{uri}: the object store did not answer ({reason})")
    return None


@contextlib.contextmanager
def reporting_storage_failures(location: Location) -> Iterator[None]:
    """Turn an object store's refusal or silence inside the block into one line (local
    disks keep their own errors)."""
    try:
        yield
    except HudiSyncError:
        raise
    except Exception as exc:
        failure = None if location.is_local else storage_failure(exc, location.uri)
        if failure is None:
            raise
        raise failure from None


def open_location(uri: str, storage_options: Mapping[str, Any] | None = None) -> Location:
    """Resolve ``uri`` (a local path, ``file://``, ``s3://``, ``gs://``, ``memory://``...)."""
    options = dict(storage_options or {})
    protocol, _ = fsspec.core.split_protocol(uri)
    if protocol is not None and "::" not in uri:  # a plain path takes no options to check
        check_options(protocol, fsspec.get_filesystem_class(protocol), options)
        preflight(protocol, uri.rstrip("/"), options)
    fs, path = fsspec.core.url_to_fs(uri, **options)
    if isinstance(fs, LocalFileSystem):
        path = fs._strip_protocol(path)
        display = path
    else:
        display = uri.rstrip("/")
        forget_listings(fs, path)
    return Location(fs=fs, path=path.rstrip("/") or "/", uri=display, storage_options=options)


def nest_option(options: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.c=value`` as ``{"a": {"b": {"c": value}}}`` in fsspec options (the
    CLI's ``-o client_kwargs.endpoint_url=...``, the reader's ``storage.<key>``)."""
    *parents, leaf = dotted.split(".")
    for parent in parents:
        child = options.get(parent)
        if not isinstance(child, dict):
            child = options[parent] = {}
        options = child
    options[leaf] = value


def forget_listings(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Drop cached listings of ``path``, its parents and everything under it. fsspec
    shares one instance (and its listings cache) per set of options, and a table opened
    again must see the files written since, by this process or any other."""
    root = path.rstrip("/")
    cache = getattr(fs, "dircache", None)
    if cache is not None:
        for key in [k for k in list(cache) if k == root or str(k).startswith(root + "/")]:
            cache.pop(key, None)
    fs.invalidate_cache(root)


def temporary_path_beside(path: str) -> str:
    """A fresh ``.tmp-<uuid>`` name in ``path``'s local folder (created if needed)."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{TEMPORARY_PREFIX}{uuid.uuid4().hex}")


def read_parquet(handle: Any, columns: Sequence[str] | None = None) -> Any:
    """A whole Parquet file, from an open binary file (an fsspec file), as a
    ``pyarrow.Table``. Read through ``pq.ParquetFile``, never ``pq.read_table``: over a
    Python file object ``read_table`` scans on Arrow's thread pools, and when a read fails
    (a network error mid-file) those threads go on calling into Python after the error
    has reached the caller; a process that then exits aborts at interpreter shutdown
    ("terminate called without an active exception", exit 134)."""
    import pyarrow.parquet as pq  # here: listing a table needs no pyarrow (~50 MB)

    return pq.ParquetFile(handle, pre_buffer=True).read(
        columns=list(columns) if columns is not None else None
    )


TEMPORARY_PREFIX = ".tmp-"


def remove_stale_temporaries(
    folder: str, older_than_seconds: float = 600.0, skip: frozenset[str] = frozenset()
) -> None:
    """Remove the temporary files (``temporary_path_beside``) that writers killed
    mid-write left under a local ``folder``, once older than ``older_than_seconds`` (a
    concurrent writer's file is never taken from under it). Its subfolders named in
    ``skip`` are not walked (their owners clean them)."""
    deadline = time.time() - older_than_seconds
    for root, dirs, files in os.walk(folder):
        if root == folder:
            dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            if name.startswith(TEMPORARY_PREFIX):
                path = os.path.join(root, name)
                with contextlib.suppress(FileNotFoundError):
                    if os.stat(path).st_mtime < deadline:
                        os.unlink(path)


def write_file_atomically(path: str, data: bytes, exclusive: bool = False) -> None:
    """Write a local file under a temporary name and move it into place, so readers
    never see a part. With ``exclusive``, an existing file is an error
    (``FileExistsError``): the link that publishes it is a conditional create."""
    temporary = temporary_path_beside(path)
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if exclusive:
        try:
            os.link(temporary, path)
        finally:
            os.unlink(temporary)
    else:
        os.replace(temporary, path)


def write_files_atomically(files: Sequence[tuple[str, bytes]]) -> None:
    """``write_file_atomically`` of each ``(path, data)`` with one flush for them all
    rather than an fsync each: every file is written under a temporary name, the file
    systems holding them flushed (``_flush_to_disk``), then each is moved into place and
    its folder synced. So no file has its name before it is on disk, and a failure
    before the moves leaves none of them (the temporaries are removed)."""
    temporaries: list[str] = []
    try:
        for path, data in files:
            temporaries.append(temporary_path_beside(path))
            with open(temporaries[-1], "wb") as handle:
                handle.write(data)
        _flush_to_disk(temporaries)
        for (path, _), temporary in zip(files, temporaries, strict=True):
            os.replace(temporary, path)
    except BaseException:
        for temporary in temporaries:  # the ones not moved yet
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        raise
    if os.name == "posix":  # the new names (a folder cannot be opened elsewhere)
        for folder in sorted({os.path.dirname(path) for path, _ in files}):
            descriptor = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)


def _flush_to_disk(paths: Sequence[str]) -> None:
    """Make the written files ``paths`` durable: on Linux one ``syncfs(2)`` per folder
    (its file system's dirty data written and the disk's cache flushed at once, errors
    reported since Linux 5.8), elsewhere an fsync of each."""
    syncfs = _syncfs()
    if syncfs is None:
        for path in paths:
            with open(path, "rb+") as handle:
                os.fsync(handle.fileno())
        return
    for folder in sorted({os.path.dirname(path) for path in paths}):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            if syncfs(descriptor) != 0:
                code = ctypes.get_errno()
                raise OSError(code, os.strerror(code), folder)
        finally:
            os.close(descriptor)


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """The C library's ``syncfs`` (Linux only), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def modified_time(info: dict[str, Any]) -> float:
    """A file's modification time in seconds from an fsspec ``info`` (0 when unknown:
    old enough to remove)."""
    value = info.get("mtime", info.get("updated", info.get("LastModified", 0)))
    if isinstance(value, str):  # object stores: ISO 8601
        with contextlib.suppress(ValueError):
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
