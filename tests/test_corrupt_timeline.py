"""Corrupt timeline and properties files: the CLI fails with one line naming the file
(and the instant), exits 2 and writes nothing.

The rule: whenever a snapshot is computed (latest or as of a time), the commit metadata
of the newest completed write at or before it is parsed, so a corrupt one fails the
listing and the sync before anything is published. Older commits are parsed only when
something needs them (a time-travel query at them, an incremental manifest, replaced
file ids).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app

runner = CliRunner()

WRITE_ACTIONS = (".commit", ".deltacommit", ".replacecommit")


def _completed_writes(table: Path) -> list[Path]:
    """The table's completed write files, oldest first (by requested time)."""
    hoodie = table / ".hoodie"
    folder = hoodie / "timeline" if (hoodie / "timeline").is_dir() else hoodie
    files = [p for p in folder.iterdir() if p.is_file() and p.name.endswith(WRITE_ACTIONS)]
    return sorted(files, key=lambda p: _instant_of(p))


def _instant_of(file: Path) -> str:
    """The requested time in a completed instant file's name (``T.a`` or ``T_C.a``)."""
    return file.name.split(".")[0].split("_")[0]


def _one_line_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert result.stdout == ""
    return lines[0]


def _sync_args(table: Path, database: Path, *extra: str) -> list[str]:
    return ["sync", "duckdb", str(table), "--database", str(database), "--table", "t", *extra]


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (empty when the folder is missing)."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _garbage(data: bytes) -> bytes:
    return b"\x13\x37 this is not an instant file \xff\x00"


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _json_garbage(data: bytes) -> bytes:
    return b"{not json"


CORRUPTIONS = [
    pytest.param("cow/v6_nonpartitioned", _json_garbage, id="v6-json-garbage"),
    pytest.param("cow/v6_nonpartitioned", _truncated, id="v6-json-truncated"),
    pytest.param("cow/v8_nonpartitioned", _garbage, id="v8-garbage"),
    pytest.param("cow/v8_nonpartitioned", _truncated, id="v8-avro-truncated"),
    pytest.param("cow/v9_txns_simple_meta", _garbage, id="v9-garbage"),
    pytest.param("cow/v9_txns_simple_meta", _truncated, id="v9-avro-truncated"),
]


@pytest.mark.parametrize(("name", "corrupt"), CORRUPTIONS)
def test_corrupt_newest_commit_fails_show_files_and_sync(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path, name: str, corrupt: Callable[[bytes], bytes]
) -> None:
    table = fixture_copy(name)
    newest = _completed_writes(table)[-1]
    assert newest.name.endswith(".commit")
    if name.startswith("cow/v6"):
        assert newest.read_bytes().lstrip().startswith(b"{")  # v6 commits are JSON
    else:
        assert newest.read_bytes().startswith(b"Obj\x01")  # v8/v9 commits are Avro
    newest.write_bytes(corrupt(newest.read_bytes()))
    instant = _instant_of(newest)

    for args in (["show", "files", str(table)], ["show", "files", str(table), "--json"]):
        message = _one_line_error(runner.invoke(app, args))
        assert str(table) in message and newest.name in message
        assert f"instant {instant}" in message and "corrupt" in message

    database = tmp_path / "warehouse.duckdb"
    for extra in ((), ("--dry-run",), ("--as-of", instant)):
        message = _one_line_error(runner.invoke(app, _sync_args(table, database, *extra)))
        assert newest.name in message and f"instant {instant}" in message
        assert not database.exists()
        assert _tree(table / ".hoodie" / "manifest") == {}


def test_commit_corrupted_after_a_sync_fails_the_next_sync(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The second sync derives its manifest incrementally and has no new commit to read:
    # the snapshot's commit is still parsed, and nothing is rewritten.
    table = fixture_copy("cow/v8_nonpartitioned")
    database = tmp_path / "warehouse.duckdb"
    first = runner.invoke(app, _sync_args(table, database))
    assert first.exit_code == 0, first.output
    manifest_before = _tree(table / ".hoodie" / "manifest")
    database_before = database.read_bytes()
    assert manifest_before

    newest = _completed_writes(table)[-1]
    newest.write_bytes(_truncated(newest.read_bytes()))
    for args in (_sync_args(table, database), ["manifest", str(table)]):
        message = _one_line_error(runner.invoke(app, args))
        assert newest.name in message and f"instant {_instant_of(newest)}" in message
    assert _tree(table / ".hoodie" / "manifest") == manifest_before
    assert database.read_bytes() == database_before


@pytest.mark.parametrize("name", ["cow/v6_nonpartitioned", "cow/v9_txns_simple_meta"])
def test_corrupt_older_commit_fails_time_travel_to_it(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path, name: str
) -> None:
    table = fixture_copy(name)
    *earlier, newest = _completed_writes(table)
    # A plain commit (replacecommits are always read: their replaced file ids hide files).
    older = [p for p in earlier if p.name.endswith(".commit")][-1]
    older.write_bytes(_garbage(older.read_bytes()))
    instant = _instant_of(older)

    # The snapshot at the older instant is read at the corrupt commit: refused.
    args = ["show", "files", str(table), "--as-of", instant]
    message = _one_line_error(runner.invoke(app, args))
    assert older.name in message and f"instant {instant}" in message
    database = tmp_path / "warehouse.duckdb"
    message = _one_line_error(runner.invoke(app, _sync_args(table, database, "--as-of", instant)))
    assert older.name in message
    assert not database.exists() and _tree(table / ".hoodie" / "manifest") == {}

    # The latest snapshot is read at the newest commit; a superseded commit's metadata
    # is not needed to list it, and is not read (one commit file per listing).
    assert runner.invoke(app, ["show", "files", str(table), "--json"]).exit_code == 0
    # The timeline itself still lists, so the corrupt instant can be found.
    shown = runner.invoke(app, ["show", "instants", str(table), "--json"])
    assert shown.exit_code == 0 and instant in shown.stdout and _instant_of(newest) in shown.stdout


def test_empty_newest_commit_is_legal(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Hudi reads an empty completed commit file as empty commit metadata.
    table = fixture_copy("cow/v6_nonpartitioned")
    _completed_writes(table)[-1].write_bytes(b"")
    assert runner.invoke(app, ["show", "files", str(table), "--json"]).exit_code == 0
    database = tmp_path / "warehouse.duckdb"
    result = runner.invoke(app, _sync_args(table, database))
    assert result.exit_code == 0, result.output
    assert database.exists() and _tree(table / ".hoodie" / "manifest")


def _replace_with_directory(props: Path) -> None:
    props.unlink()
    props.mkdir()
    (props / "hoodie.table.name").write_text("x\n")


def _remove_line(key: str) -> Callable[[Path], None]:
    def mutate(props: Path) -> None:
        lines = props.read_text().splitlines()
        props.write_text("\n".join(line for line in lines if not line.startswith(key)) + "\n")

    return mutate


PROPERTIES = [
    pytest.param(
        lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00"), "not a text file", id="binary"
    ),
    pytest.param(lambda p: p.write_bytes(b"\x00" * 512), "NUL byte", id="zeros"),
    pytest.param(lambda p: p.write_bytes(b""), "the file is empty", id="empty"),
    pytest.param(
        lambda p: p.write_bytes(p.read_bytes()[:20]), "missing required key", id="truncated"
    ),
    pytest.param(
        _remove_line("hoodie.table.name="),
        "missing required key hoodie.table.name",
        id="missing-name",
    ),
    pytest.param(
        _remove_line("hoodie.table.version="),
        "missing required key hoodie.table.version",
        id="missing-version",
    ),
    pytest.param(_replace_with_directory, "is a directory", id="directory"),
    pytest.param(lambda p: (p.unlink(), os.symlink(p, p)), "cannot be read", id="symlink-loop"),
]


@pytest.mark.parametrize(("mutate", "fragment"), PROPERTIES)
def test_unreadable_properties_fail_show_table_and_sync(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path, mutate: Callable[[Path], object], fragment: str
) -> None:
    table = fixture_copy("cow/v6_nonpartitioned")
    props = table / ".hoodie" / "hoodie.properties"
    mutate(props)
    database = tmp_path / "warehouse.duckdb"
    for args in (["show", "table", str(table)], _sync_args(table, database)):
        message = _one_line_error(runner.invoke(app, args))
        assert f"{props}: " in message and fragment in message, message
    assert not database.exists()
    assert _tree(table / ".hoodie" / "manifest") == {}
