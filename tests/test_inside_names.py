"""Names a Hudi table may hold stay readable; only names that leave the table are
refused (``hudi_sync.table.inside_names``)."""

from __future__ import annotations

import pytest

from hudi_sync.errors import CorruptTableError
from hudi_sync.table.inside_names import check_file_name, check_partition, check_relative

WHERE = "t/.hoodie/20240101000000000.commit"


@pytest.mark.parametrize(
    "relative", ["p=a\\b", "p=x\ny", "year=2024/..month", ".hidden/x", "a b/c,d"]
)
def test_odd_names_hudi_writes_stay_readable(relative: str) -> None:
    """A backslash or control character is refused later, where a manifest line cannot
    carry it (as unsupported, with the urlencode hint), not taken for an escape."""
    assert check_relative(relative, WHERE) == relative
    assert check_partition(relative, WHERE) == relative


@pytest.mark.parametrize("relative", ["../x", "a/../../x", "/x", "a//b", "a/./b", "a/", ".", ""])
def test_names_that_leave_the_table_are_refused_naming_their_file(relative: str) -> None:
    with pytest.raises(CorruptTableError) as refused:
        check_relative(relative, WHERE)
    assert str(refused.value).startswith(f"{WHERE}: ") and "\n" not in str(refused.value)


def test_the_root_partition_and_file_names() -> None:
    assert check_partition("", WHERE) == ""
    assert check_file_name("f_1-0-1_1.parquet", WHERE) == "f_1-0-1_1.parquet"
    assert check_file_name(".f_1.log.1_0-1-1", WHERE) == ".f_1.log.1_0-1-1"
    for name in ("a/b", "..", ".", "", "../x"):
        with pytest.raises(CorruptTableError, match="not one file name"):
            check_file_name(name, WHERE)
