"""The one function that turns a name read from storage into a path: every name that
would leave its table is refused in one line naming the file it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import (
    contained_name,
    contained_partition,
    contained_relative,
    open_location,
)

ESCAPES = [
    "../other/x.parquet",
    "a/../../b",
    "/etc/passwd",
    "",
    ".",
    "a//b",
    "a/./b",
    "10/\x00x",
    "a/",
]


@pytest.mark.parametrize("relative", ESCAPES)
def test_a_name_that_leaves_the_table_is_refused_naming_its_source(
    tmp_path: Path, relative: str
) -> None:
    location = open_location(str(tmp_path / "table"))
    with pytest.raises(CorruptTableError) as refused:
        location.inside(relative, ".hoodie/20240101000000000.commit")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(".hoodie/20240101000000000.commit: ")


@pytest.mark.parametrize(
    ("partition", "name"),
    [
        ("../other", "f_1-0-1_1.parquet"),
        ("10", "a/../../x_1-0-1_1.parquet"),
        ("10", ".."),
        ("", "../x"),
        ("a/../..", "x"),
    ],
)
def test_a_file_name_is_one_segment_inside_a_contained_partition(
    tmp_path: Path, partition: str, name: str
) -> None:
    location = open_location(str(tmp_path / "table"))
    with pytest.raises(CorruptTableError, match="files/x"):
        location.file_inside(partition, name, "files/x")


def test_names_inside_the_table_resolve_below_it(tmp_path: Path) -> None:
    location = open_location(str(tmp_path / "table"))
    inside = location.file_inside("year=2024/month=01", "f_1-0-1_1.parquet", "s")
    assert Path(inside).resolve().is_relative_to((tmp_path / "table").resolve())
    assert inside.endswith("/table/year=2024/month=01/f_1-0-1_1.parquet")
    assert location.file_inside("", ".f_1.log.1_0-1-1", "s").endswith("/table/.f_1.log.1_0-1-1")
    assert location.inside("a b/..c/c..", "s").endswith("/table/a b/..c/c..")
    # Hudi writes these in partition values it does not URL-encode: they stay inside.
    assert location.inside("a\\..\\b/c\nd", "s").endswith("/table/a\\..\\b/c\nd")


def test_a_literal_move_never_expands_a_glob(tmp_path: Path) -> None:
    location = open_location(str(tmp_path))
    (tmp_path / "a*").write_text("star")
    (tmp_path / "ab").write_text("sibling")
    location.move(str(tmp_path / "a*"), str(tmp_path / "moved"))
    assert (tmp_path / "moved").read_text() == "star"
    assert (tmp_path / "ab").read_text() == "sibling"


WHERE = "t/.hoodie/20240101000000000.commit"


@pytest.mark.parametrize(
    "relative", ["p=a\\b", "p=x\ny", "year=2024/..month", ".hidden/x", "a b/c,d"]
)
def test_odd_names_hudi_writes_stay_readable(relative: str) -> None:
    """A backslash or control character is refused later, where a manifest line cannot
    carry it (as unsupported, with the urlencode hint), not taken for an escape."""
    assert contained_relative(relative, WHERE) == relative
    assert contained_partition(relative, WHERE) == relative


@pytest.mark.parametrize("relative", ["../x", "a/../../x", "/x", "a//b", "a/./b", "a/", ".", ""])
def test_names_that_leave_the_table_are_refused_naming_their_file(relative: str) -> None:
    with pytest.raises(CorruptTableError) as refused:
        contained_relative(relative, WHERE)
    assert str(refused.value).startswith(f"{WHERE}: ") and "\n" not in str(refused.value)


def test_the_root_partition_and_file_names() -> None:
    assert contained_partition("", WHERE) == ""
    assert contained_name("f_1-0-1_1.parquet", WHERE) == "f_1-0-1_1.parquet"
    assert contained_name(".f_1.log.1_0-1-1", WHERE) == ".f_1.log.1_0-1-1"
    for name in ("a/b", "..", ".", "", "../x"):
        with pytest.raises(CorruptTableError, match="not one file name"):
            contained_name(name, WHERE)
