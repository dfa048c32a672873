"""Arrow arrays built and read without ``pyarrow.array`` / ``to_numpy`` (which import
pandas): the same arrays as pyarrow's own conversions, and a first sync of a
Merge-on-Read table that never imports pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hudi_sync.arrow_numpy import arrow_to_numpy, numpy_to_arrow, string_array, string_scalar


@pytest.mark.parametrize(
    "values",
    [
        np.array([3, -1, 2**40], dtype=np.int64),
        np.array([1, 2, 7], dtype=np.int32),
        np.array([1, 255], dtype=np.uint8),
        np.array([0.5, np.nan, -0.0, np.inf], dtype=np.float64),
        np.array([1.5, -2.0], dtype=np.float32),
        np.array([True, False, True, True, False, False, True, False, True], dtype=bool),
        np.arange(20, dtype=np.int64)[::3],  # not contiguous
        np.array([5, 6], dtype=">i8"),  # big-endian
        np.zeros(0, dtype=np.int64),
    ],
)
def test_numbers_convert_as_pyarrow_converts_them(values: np.ndarray) -> None:  # type: ignore[type-arg]
    built = numpy_to_arrow(values)
    expected = pa.array(values.astype(values.dtype.newbyteorder("<")))
    assert built.type == expected.type and built.null_count == 0
    np.testing.assert_array_equal(built.to_pylist(), expected.to_pylist())  # NaN is NaN
    for start in (0, 1):
        part = built.slice(start)
        np.testing.assert_array_equal(arrow_to_numpy(part), part.to_numpy(zero_copy_only=False))
        assert arrow_to_numpy(part).dtype == part.to_numpy(zero_copy_only=False).dtype


def test_a_type_casts_and_a_mask_makes_nulls() -> None:
    values = np.array([1, 2, 3], dtype=np.int64)
    assert numpy_to_arrow(values, pa.int32()).equals(pa.array(values, pa.int32()))
    valid = np.array([True, False, True])
    assert numpy_to_arrow(values, valid=valid).equals(pa.array(values, mask=~valid))
    with pytest.raises(pa.ArrowInvalid):
        numpy_to_arrow(np.array([2**40]), pa.int32())  # a safe cast, as pyarrow's
    with pytest.raises(ValueError, match="numbers"):
        numpy_to_arrow(np.array(["a"], dtype=object))


def test_arrays_with_nulls_or_chunks_read_as_pyarrow_reads_them() -> None:
    with_nulls = pa.array([1, None, 3], pa.int64())
    np.testing.assert_array_equal(
        arrow_to_numpy(with_nulls), with_nulls.to_numpy(zero_copy_only=False)
    )
    chunked = pa.chunked_array([pa.array([1, 2]), pa.array([3])])
    np.testing.assert_array_equal(arrow_to_numpy(chunked), [1, 2, 3])


def test_strings_build_as_pyarrow_builds_them() -> None:
    values = ["a", "", None, "é€😀", "x" * 300]
    assert string_array(values).equals(pa.array(values, pa.string()))
    assert string_array([]).equals(pa.array([], pa.string()))
    assert string_array([None, None]).equals(pa.array([None, None], pa.string()))
    ascii_only = ["p0001", "name-2-17", ""]
    assert string_array(ascii_only).equals(pa.array(ascii_only, pa.string()))
    assert string_scalar("\n").equals(pa.scalar("\n", pa.string()))


def test_a_first_sync_of_a_merge_on_read_table_never_imports_pandas(
    fixture_copy,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """In a fresh interpreter (this one has pandas): the fold decodes the fixture's Avro
    logs (with a delete block), merges them and writes the folded file, the view and
    the lists; the snapshot's rows are checked so a sync that did nothing cannot pass."""
    path: Path = fixture_copy("mor/avro/v8_trips_8i3u1d")
    database = tmp_path / "w.duckdb"
    code = (
        "import sys\n"
        "from hudi_sync.sync.job import sync_table\n"
        "from hudi_sync.warehouse.duckdb import DuckDBTarget\n"
        f"target = DuckDBTarget({str(database)!r}, 't')\n"
        f"assert sync_table({str(path)!r}, [target], fold_processes=1).ok\n"
        "print('pandas' in sys.modules)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path.cwd()
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
    import duckdb

    with duckdb.connect(str(database), read_only=True) as connection:
        (count,) = connection.execute("select count(*) from t_rt").fetchone() or (0,)
    assert count > 0
