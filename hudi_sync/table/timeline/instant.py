"""Instants: the timeline's file names parsed into (requested time, action, state, completion)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from hudi_sync.errors import CorruptTableError


class State(StrEnum):
    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"


class Action:
    """Timeline action names, as Hudi spells them in file names."""

    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    REPLACE_COMMIT = "replacecommit"
    CLUSTERING = "clustering"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    RESTORE = "restore"
    SAVEPOINT = "savepoint"
    INDEXING = "indexing"
    SCHEMA_COMMIT = "schemacommit"


KNOWN_ACTIONS = frozenset(
    v for k, v in vars(Action).items() if not k.startswith("_") and isinstance(v, str)
)
# Actions whose completed instant makes data files visible.
WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT})
# Pending compaction, log compaction and clustering complete as commit, deltacommit
# and replacecommit: the completed file carries the latter action.

# <requested>[_<completion>].<action>[.<state>]  (14 or 17 digit instants; metadata
# tables also use longer, suffixed instants such as 00000000000000010 or ...001).
_INSTANT_FILE = re.compile(
    r"^(?P<ts>\d{14,})(?:_(?P<completion>\d{14,}))?\.(?P<action>[a-z]+)"
    r"(?:\.(?P<state>requested|inflight))?\Z"
)


@dataclass(frozen=True, order=True)
class Instant:
    """One instant in one state. Orders by requested time, then by state progress."""

    requested_time: str
    state_rank: int
    action: str
    state: State
    completion_time: str | None = None
    file_name: str = ""

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_write(self) -> bool:
        """True for commit, deltacommit, replacecommit (incl. completed compaction/clustering)."""
        return self.action in WRITE_ACTIONS

    def to_json(self) -> dict[str, str | None]:
        return {
            "instant": self.requested_time,
            "completion": self.completion_time,
            "action": self.action,
            "state": self.state.value,
        }


_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


def make_instant(
    requested_time: str,
    action: str,
    state: State,
    completion_time: str | None = None,
    file_name: str = "",
) -> Instant:
    return Instant(requested_time, _STATE_RANK[state], action, state, completion_time, file_name)


def parse_instant_file_name(name: str) -> Instant | None:
    """Parse a timeline file name; ``None`` for names that are not instants at all.

    Raises ``CorruptTableError`` for a name shaped like an instant whose action
    Hudi does not know, so a typo or foreign file is reported, not silently skipped.
    """
    if not name[:1].isdigit():
        return None
    match = _INSTANT_FILE.match(name)
    if match is None:
        if re.match(r"^\d{14,}(_\d+)?\.", name):
            raise CorruptTableError(f"timeline file {name!r} is not a valid instant file name")
        return None
    ts, completion, action, state_text = match.group("ts", "completion", "action", "state")
    if action == "inflight" and state_text is None:
        # A plain commit's inflight file is "<ts>.inflight".
        return make_instant(ts, Action.COMMIT, State.INFLIGHT, None, name)
    if action not in KNOWN_ACTIONS:
        raise CorruptTableError(f"timeline file {name!r} has unknown action {action!r}")
    if state_text == "requested":
        state = State.REQUESTED
    elif state_text == "inflight":
        state = State.INFLIGHT
    else:
        state = State.COMPLETED
    if state is not State.COMPLETED and completion:
        raise CorruptTableError(
            f"timeline file {name!r}: only completed instants have _<completion>"
        )
    return make_instant(ts, action, state, completion, name)


# The same shape as ``_INSTANT_FILE``, one name a line: ``findall`` over the joined names
# of a whole timeline parses them in one C call (30,000 names in a few milliseconds).
_INSTANT_LINES = re.compile(
    r"^(\d{14,})(?:_(\d{14,}))?\.([a-z]+)(?:\.(requested|inflight))?$", re.MULTILINE
)
_BY_RANK = (State.REQUESTED, State.INFLIGHT, State.COMPLETED)


def latest_instants(names: Iterable[str]) -> list[Instant]:
    """Each instant named in ``names`` in its latest state, by requested time.

    The same as ``parse_instant_file_name`` on every name, keeping per requested time
    the instant of the highest state (the first listed of equal states), but only
    those instants become objects: a long timeline has three files per instant.
    Anything unusual (a name that is not a plain instant file, an unknown action)
    takes the name-by-name path, which reports it exactly as ``parse_instant_file_name``
    does.
    """
    listed = [name for name in names if name[:1].isdigit()]
    if not listed:
        return []
    joined = "\n".join(listed)
    rows = _INSTANT_LINES.findall(joined)
    if len(rows) != len(listed) or joined.count("\n") != len(listed) - 1:
        return _latest_instants_slowly(listed)  # some name is not one line of this shape
    best: dict[str, tuple[int, int]] = {}  # requested time -> (state rank, index)
    known = KNOWN_ACTIONS
    for index, (ts, completion, action, state) in enumerate(rows):
        if not state:
            if action in known:
                rank = 2
            elif action == "inflight":  # a plain commit's inflight file "<ts>.inflight"
                rank = 1
            else:
                return _latest_instants_slowly(listed)  # raises: unknown action
        elif completion or action not in known:
            return _latest_instants_slowly(listed)  # raises
        else:
            rank = 0 if state == "requested" else 1
        current = best.get(ts)
        if current is None or rank > current[0]:
            best[ts] = (rank, index)
    instants = []
    for ts in sorted(best, key=comparable_instant):
        rank, index = best[ts]
        _, completion, action, state = rows[index]
        if not state and action == "inflight":
            action, completion = Action.COMMIT, ""
        instants.append(
            Instant(ts, rank, action, _BY_RANK[rank], completion or None, listed[index])
        )
    return instants


def _latest_instants_slowly(names: Iterable[str]) -> list[Instant]:
    latest: dict[str, Instant] = {}
    for name in names:
        instant = parse_instant_file_name(name)
        if instant is None:
            continue
        current = latest.get(instant.requested_time)
        if current is None or instant.state_rank > current.state_rank:
            latest[instant.requested_time] = instant
    return sorted(latest.values(), key=lambda i: comparable_instant(i.requested_time))


def comparable_instant(ts: str) -> str:
    """Instant time in a form that compares correctly as a string.

    Hudi pads second-precision (14-digit) instants with ``999`` milliseconds when
    it compares them against millisecond instants.
    """
    return ts + "999" if len(ts) == 14 else ts
