"""The column-wise merge of a slice's logs (``vector_merge``) against Hudi's rules.

Each case states the rows Hudi's merge keeps, checks the column-wise merge gives them
(it must not hand the case to the exact merge) and that the record-by-record merge
(``merge_records``) agrees.
"""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest

from hudi_sync.table.records.merge import DeleteKey, MergeMode, MergeRules, merge_records
from hudi_sync.table.records.vector_merge import columnar_merge, merge_slice

KEY = "_hoodie_record_key"
EVENT = MergeRules(MergeMode.EVENT_TIME_ORDERING, "ts")
COMMIT = MergeRules(MergeMode.COMMIT_TIME_ORDERING)


def _rows(rows: list[tuple[str, object, str]], ts: pa.DataType) -> pa.Table:
    schema = pa.schema([(KEY, pa.string()), ("ts", ts), ("v", pa.string())])
    return pa.Table.from_pylist([{KEY: k, "ts": t, "v": v} for k, t, v in rows], schema=schema)


def _same(left: pa.Table, right: pa.Table) -> bool:
    """Equal tables, NaN equal to NaN and -0.0 told from 0.0 (their reprs)."""
    return left.schema == right.schema and repr(left.to_pylist()) == repr(right.to_pylist())


def _merged(base: pa.Table | None, log: pa.Table, rules: MergeRules) -> list[tuple]:
    entries = list(range(log.num_rows))
    fast = columnar_merge(base, log, entries, rules)
    assert fast is not None, "the common shape must be merged column-wise"
    exact = merge_records(base, log, entries, rules)
    assert _same(fast, exact)
    unordered = columnar_merge(base, log, entries, rules, in_file_order=False)
    assert unordered is not None
    assert sorted(map(repr, unordered.to_pylist())) == sorted(map(repr, exact.to_pylist()))
    return [(r[KEY], r["v"]) for r in fast.to_pylist()]


def test_doubles_order_as_java_compares_them() -> None:
    base = _rows(
        [
            ("a", 1.0, "base"),
            ("b", 0.0, "base"),
            ("c", -0.0, "base"),
            ("e", 3.0, "base"),
            ("f", 4.0, "base"),
            ("h", math.nan, "base"),
        ],
        pa.float64(),
    )
    log = _rows(
        [
            ("a", math.nan, "nan"),
            ("a", 5.0, "five"),  # below NaN: NaN stays
            ("b", -0.0, "negative zero"),  # below 0.0: the base stays
            ("c", 0.0, "zero"),  # above -0.0: replaces
            ("d", 2.0, "first"),
            ("d", 2.0, "second"),  # a tie: the later record
            ("e", 3.0, "log"),  # a tie with the base: the log
            ("f", 3.0, "log"),  # below the base
            ("h", math.nan, "log"),  # NaN equals NaN: a tie, the log
            ("g", -math.inf, "new"),
        ],
        pa.float64(),
    )
    assert _merged(base, log, EVENT) == [
        ("a", "nan"),
        ("b", "base"),
        ("c", "zero"),
        ("e", "log"),
        ("f", "base"),
        ("h", "log"),
        ("d", "second"),
        ("g", "new"),
    ]


def test_a_null_ordering_value_is_int_zero_in_an_int_column() -> None:
    base = _rows([("a", 0, "base"), ("b", -1, "base"), ("c", 1, "base")], pa.int32())
    log = _rows([("a", None, "log"), ("b", None, "log"), ("c", None, "log")], pa.int32())
    assert _merged(base, log, EVENT) == [("a", "log"), ("b", "log"), ("c", "base")]


def test_commit_time_ordering_keeps_the_last_log_record() -> None:
    base = _rows([("a", 9, "base"), ("b", 9, "base")], pa.int64())
    log = _rows([("a", 5, "first"), ("a", 1, "last"), ("c", 3, "new")], pa.int64())
    assert _merged(base, log, COMMIT) == [("a", "last"), ("b", "base"), ("c", "new")]


def test_a_log_version_meets_the_first_base_row_of_its_key_only() -> None:
    base = _rows([("a", 1, "first"), ("b", 1, "base"), ("a", 1, "second")], pa.int64())
    log = _rows([("a", 2, "log")], pa.int64())
    assert _merged(base, log, EVENT) == [("a", "log"), ("b", "base"), ("a", "second")]


def test_strings_order_by_code_point() -> None:
    base = _rows([("a", "b", "base"), ("b", "é", "base")], pa.string())
    log = _rows([("a", "ab", "log"), ("b", "z", "log")], pa.string())
    assert _merged(base, log, EVENT) == [("a", "base"), ("b", "base")]


def test_no_base_file_keeps_each_keys_log_version_in_log_order() -> None:
    log = _rows([("b", 1, "b1"), ("a", 1, "a1"), ("b", 0, "b0")], pa.int64())
    assert _merged(None, log, EVENT) == [("b", "b1"), ("a", "a1")]


@pytest.mark.parametrize(
    ("base_ts", "log_ts", "entries", "kept"),
    [
        # a delete-block record among the entries
        (1, 2, [0, DeleteKey("a")], []),
        # a null ordering value outside an int column (Java may fail there): the exact
        # merge says, here int 0 against int 0, a tie
        (None, None, [0], [("a", "log")]),
    ],
)
def test_other_shapes_go_to_the_exact_merge(
    base_ts: int | None, log_ts: int | None, entries: list, kept: list[tuple[str, str]]
) -> None:
    base = _rows([("a", base_ts, "base")], pa.int64())
    log = _rows([("a", log_ts, "log")], pa.int64())
    assert columnar_merge(base, log, entries, EVENT) is None
    merged = merge_slice(base, log, entries, EVENT)
    assert [(r[KEY], r["v"]) for r in merged.to_pylist()] == kept


def test_a_record_marked_deleted_goes_to_the_exact_merge() -> None:
    schema = pa.schema([(KEY, pa.string()), ("ts", pa.int64()), ("_hoodie_is_deleted", pa.bool_())])
    base = pa.Table.from_pylist([{KEY: "a", "ts": 1, "_hoodie_is_deleted": False}], schema=schema)
    log = pa.Table.from_pylist([{KEY: "a", "ts": 2, "_hoodie_is_deleted": True}], schema=schema)
    assert columnar_merge(base, log, [0], EVENT) is None
    assert merge_slice(base, log, [0], EVENT).num_rows == 0


@pytest.mark.parametrize("seed", range(20))
def test_random_slices_merge_as_record_by_record(seed: int) -> None:
    chooser = random.Random(seed)
    values = [math.nan, -math.inf, -1.5, -0.0, 0.0, 1.5, math.inf]
    keys = [f"k{i}" for i in range(8)]
    base_keys = chooser.sample(keys, 5) + chooser.sample(keys, 2)  # some twice
    base = _rows(
        [(k, chooser.choice(values), f"base{i}") for i, k in enumerate(base_keys)], pa.float64()
    )
    log = _rows(
        [(chooser.choice(keys), chooser.choice(values), f"log{i}") for i in range(30)],
        pa.float64(),
    )
    for rules in (EVENT, COMMIT):
        _merged(base, log, rules)
        _merged(None, log, rules)
