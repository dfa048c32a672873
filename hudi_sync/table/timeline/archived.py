"""The archived timeline: instants Hudi moved off the active timeline.

Layout 1 (table version 6) archives into Hudi log files
``.hoodie/<archivelog folder>/.commits_.archive.<N>_<token>`` whose Avro blocks hold
one ``HoodieArchivedMetaEntry`` per instant state. Layout 2 (versions 8, 9) keeps an
LSM tree of parquet files under ``.hoodie/timeline/history/``; ``_version_`` names the
current ``manifest_<N>``, a JSON list of the live parquet files.
"""

from __future__ import annotations

import re

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import Location, contained_name, read_parquet
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.timeline.instant import Instant, State, comparable_instant, make_instant

ARCHIVE_LOG_FILE = re.compile(r"^\.commits_\.archive\.(\d+)(_.*)?\Z")
HISTORY_MANIFEST_FILE = re.compile(r"^manifest_(\d+)\Z")


def read_archived_instants(location: Location, config: TableConfig) -> list[Instant]:
    """Archived instants in their latest state, ordered by requested time."""
    if config.timeline_layout_version == 1:
        instants = _read_v1_archive(location, config)
    else:
        instants = _read_lsm_history(location, config)
    return sorted(instants, key=lambda i: comparable_instant(i.requested_time))


def _list_names(location: Location, folder: str) -> list[str]:
    try:
        return [str(p).rstrip("/").rsplit("/", 1)[-1] for p in location.fs.ls(folder, detail=False)]
    except FileNotFoundError:
        return []


def _read_v1_archive(location: Location, config: TableConfig) -> list[Instant]:
    # Imported here, like pyarrow below: opening a table reads no archive.
    from hudi_sync.table.records.logfile import BlockType, read_blocks

    folder = location.join(".hoodie", config.archive_folder)
    files = sorted(
        (int(m.group(1)), name)
        for name in _list_names(location, folder)
        if (m := ARCHIVE_LOG_FILE.match(name))
    )
    latest: dict[str, Instant] = {}
    for _, name in files:
        path = f"{folder}/{name}"
        data = bytes(location.fs.cat_file(path))
        where = f"{location.uri}: archived file {name}"
        for block in read_blocks(data, where):
            if block.block_type != BlockType.AVRO_DATA:
                continue
            try:
                records = block.avro_records()
            except CorruptTableError as exc:
                raise CorruptTableError(f"{where}: {exc}") from None
            for record in records:
                if not isinstance(record, dict):
                    raise CorruptTableError(f"{where}: an entry is not a record")
                instant = _instant_from_archived_entry(record, name)
                current = latest.get(instant.requested_time)
                if current is None or instant.state_rank >= current.state_rank:
                    latest[instant.requested_time] = instant
    return list(latest.values())


def _instant_from_archived_entry(record: dict[str, object], file_name: str) -> Instant:
    commit_time = record.get("commitTime")
    action = record.get("actionType")
    if not isinstance(commit_time, str) or not isinstance(action, str):
        raise CorruptTableError(f"archived file {file_name}: entry without commitTime/actionType")
    state_text = record.get("actionState") or State.COMPLETED.value
    try:
        state = State(str(state_text))
    except ValueError:
        raise CorruptTableError(
            f"archived file {file_name}: unknown state {state_text!r}"
        ) from None
    completion = record.get("stateTransitionTime") if state is State.COMPLETED else None
    return make_instant(
        commit_time, action, state, str(completion) if completion else None, file_name
    )


def _read_lsm_history(location: Location, config: TableConfig) -> list[Instant]:
    folder = location.join(".hoodie", config.timeline_path, config.timeline_history_path)
    names = _list_names(location, folder)
    version: int | None = None
    if "_version_" in names:
        text = bytes(location.fs.cat_file(f"{folder}/_version_")).decode("latin-1").strip()
        if not text.isdigit():
            raise CorruptTableError(f"{location.uri}: timeline history _version_ is {text!r}")
        version = int(text)
    else:
        numbers = [int(m.group(1)) for n in names if (m := HISTORY_MANIFEST_FILE.match(n))]
        version = max(numbers) if numbers else None
    if version is None:
        return []
    manifest_path = f"{folder}/manifest_{version}"
    where = f"{location.uri}: timeline history manifest_{version}"
    try:
        manifest = load_json(bytes(location.fs.cat_file(manifest_path)), where, "manifest")
        files = [contained_name(str(entry["fileName"]), where) for entry in manifest["files"]]
    except (FileNotFoundError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptTableError(
            f"{location.uri}: timeline history manifest_{version}: {exc}"
        ) from None

    instants: list[Instant] = []
    for file_name in files:
        with location.fs.open(f"{folder}/{file_name}", "rb") as handle:
            table = read_parquet(handle, ["instantTime", "completionTime", "action"])
        for row in table.to_pylist():
            if row["instantTime"] and row["action"]:
                instants.append(
                    make_instant(
                        row["instantTime"],
                        row["action"],
                        State.COMPLETED,
                        row["completionTime"],
                        file_name,
                    )
                )
    return instants
