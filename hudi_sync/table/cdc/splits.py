"""The CDC query's unit of work: a ``ChangeSplit``, one write stat's changes, planned on
the driver (``plan``) and read wherever its files open (``read``).

A split carries its inference case, Hudi's names for where a commit's changes are found:

- ``AS_IS``: the stat lists CDC log files (``cdcStats``); their records are the
  changes. Images the logging mode did not keep are looked up by key: ``before`` in
  the file group's previous base file, ``after`` in the one the commit wrote.
- ``BASE_FILE_INSERT``: a new base file holding only inserts; every row is ``i``.
- ``BASE_FILE_DELETE``: a delete that emptied a file group; every row of the previous
  base file is ``d``.
- ``LOG_FILE`` (Merge-on-Read): the file group as a snapshot reader saw it just
  before the commit against what it sees after, both merged by the table's merge
  rules, for the keys the commit's log records name. One split per file group and
  commit, however many log files the commit rolled over to.
- ``REPLACE_COMMIT``: every row of a file group a replacecommit replaced is ``d``.
- ``BASE_FILE_DIFF`` (only when inferring the changes of a table without CDC, which
  Hudi's CDC query refuses): a base file rewritten without a CDC log, compared with the
  version it replaced by record key: its rows this commit wrote are ``i`` or ``u``, the
  keys it no longer holds ``d``. Reads both files.

Splits travel as JSON to Spark's Python workers; ``divide_splits`` groups them into parts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum

from hudi_sync.table.cdc.log import (
    CdcMode,
)
from hudi_sync.table.records.merge import MergeMode, MergeRules
from hudi_sync.table.timeline.instant import Instant


class InferenceCase(StrEnum):
    AS_IS = "AS_IS"
    BASE_FILE_INSERT = "BASE_FILE_INSERT"
    BASE_FILE_DELETE = "BASE_FILE_DELETE"
    LOG_FILE = "LOG_FILE"
    REPLACE_COMMIT = "REPLACE_COMMIT"
    BASE_FILE_DIFF = "BASE_FILE_DIFF"


@dataclass(frozen=True)
class ChangeSplit:
    """The changes one commit made to one file group, and the files that tell them.

    Paths are relative to the table base. ``committed`` lists, for ``LOG_FILE``, the
    instants whose log blocks count as the file group's earlier state; ``merge_mode``,
    ``ordering_field``, ``delete_field`` and ``delete_marker`` are the table's merge
    rules, which merge a slice's log records (``LOG_FILE``, a replaced MOR slice)."""

    instant: str
    case: InferenceCase
    partition_path: str
    file_id: str
    mode: str = CdcMode.DATA_BEFORE_AFTER.value
    cdc_files: tuple[str, ...] = ()
    before_file: str | None = None
    after_file: str | None = None
    log_files: tuple[str, ...] = ()
    committed: tuple[str, ...] = ()
    merge_mode: str = MergeMode.COMMIT_TIME_ORDERING.value
    ordering_field: str | None = None
    delete_field: str | None = None
    delete_marker: str | None = None
    read_bytes: int | None = None  # what reading it costs, from the write stats (None: unknown)
    # AS_IS: the part-th of ``parts`` equal runs of the CDC log's records (a large log
    # read by several tasks); other cases are not divided.
    part: int = 0
    parts: int = 1

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @property
    def rules(self) -> MergeRules:
        return MergeRules(
            MergeMode(self.merge_mode), self.ordering_field, self.delete_field, self.delete_marker
        )

    @classmethod
    def from_json(cls, text: str) -> ChangeSplit:
        raw = json.loads(text)
        for name in ("cdc_files", "log_files", "committed"):
            raw[name] = tuple(raw[name])
        raw["case"] = InferenceCase(raw["case"])
        return cls(**raw)


@dataclass(frozen=True)
class ChangePlan:
    """A CDC query's commits and splits."""

    begin: str | None
    end: str | None
    instants: tuple[Instant, ...]
    splits: tuple[ChangeSplit, ...] = field(default_factory=tuple)

    @property
    def read_bytes(self) -> int | None:
        """Bytes the splits read, from the commits' write stats and the slices' files
        (``None`` if any split reads files of unknown size: a base file a commit
        deleted from, an inferred diff)."""
        sizes = [s.read_bytes for s in self.splits]
        return None if any(size is None for size in sizes) else sum(s or 0 for s in sizes)


def divide_splits(splits: Iterable[ChangeSplit], part_bytes: int, most: int) -> list[ChangeSplit]:
    """The splits with each large CDC log that needs no lookup (``data_before_after``)
    divided into parts of about ``part_bytes`` (at most ``most``), so that several
    tasks decode it; splits that look images up in base files stay whole (each part
    would read the whole base files again)."""
    divided: list[ChangeSplit] = []
    for split in splits:
        count = 1
        if (
            split.case is InferenceCase.AS_IS
            and CdcMode(split.mode) is CdcMode.DATA_BEFORE_AFTER
            and split.read_bytes
            and split.parts == 1
        ):
            count = max(1, min(most, -(-split.read_bytes // max(part_bytes, 1))))
        if count == 1:
            divided.append(split)
        else:
            divided += [replace(split, part=k, parts=count) for k in range(count)]
    return divided


__all__ = ["ChangePlan", "ChangeSplit", "InferenceCase", "divide_splits"]
