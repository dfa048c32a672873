"""Decoders that cannot be turned against the process: files a hostile writer of one
table's storage crafts to crash (segfault), hang or exhaust the process that reads them
get one ``CorruptTableError`` line naming the file.

The crash, hang and memory attacks run in a child process with an address-space limit
and a timeout, so that where they work (before bounded decoding) they fail the test
instead of taking the test run down.
"""

from __future__ import annotations

import io
import json
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import fastavro
import pytest

from hudi_sync.errors import CorruptTableError
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table.hfile_format import (
    DATA_MAGIC,
    GZIP_HEADER,
    HEADER_SIZE,
    checksum_bytes,
)
from hudi_sync.table.metadata_table.hfile_reader import read_hfile
from hudi_sync.table.metadata_table.records import decode_records
from hudi_sync.table.records.logfile import BlockType, encode_block, read_blocks
from hudi_sync.table.timeline.commit_metadata import parse_commit_metadata
from hudi_sync.table.write.metadata_table import hfile_writer
from hudi_sync.table.write.metadata_table.hfile_writer import write_hfile
from tests.contained import run_limited

DATA = Path(__file__).resolve().parent / "data"
TIMEOUT = 60  # seconds a child may run (a fixed decoder answers in a few)
V9_TABLE = "cow/v9_txns_simple_meta"


def run_contained(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a child Python (``sys.argv[1:]`` = ``args``) with an address-space
    limit and ``TIMEOUT`` seconds."""
    try:
        return run_limited(["-c", code, *args], TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the decoder ran for more than {TIMEOUT} s")


CLI = "from hudi_sync.cli.app import main; main()"
# A decoder called on one file's bytes; a refusal is printed as the CLI prints it.
DECODE = """
import sys
from hudi_sync.errors import BadInputError
{imports}
path = sys.argv[1]
try:
    {call}
except BadInputError as exc:
    print(f"error: {{exc}}", file=sys.stderr)
    sys.exit(2)
"""
READ_LOG = DECODE.format(
    imports="from hudi_sync.table.records.log_records import read_log_records",
    call='read_log_records(open(path, "rb").read(), path)',
)
READ_MDT_HFILE = DECODE.format(
    imports="from hudi_sync.table.metadata_table.hfile_reader import read_hfile\n"
    "from hudi_sync.table.metadata_table.records import decode_records",
    call='decode_records(read_hfile(open(path, "rb").read(), path), path)',
)


def assert_one_line_naming(result: subprocess.CompletedProcess[str], path: Path) -> str:
    """The child exited 2 with one ``error:`` line on stderr naming the file."""
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("error: ") and path.name in lines[0], lines[0]
    return lines[0]


# -- building hostile files -------------------------------------------------------------------


def zigzag(value: int) -> bytes:
    """Avro's zig-zag varint."""
    number, out = (value << 1) ^ (value >> 63), bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def avro_container(schema: Any, datum: bytes) -> bytes:
    """An Avro object-container file of one datum (built by hand: fastavro's writer
    would itself recurse on a deep datum)."""
    sync = b"0123456789abcdef"
    text = json.dumps(schema).encode()
    meta = zigzag(1) + zigzag(11) + b"avro.schema" + zigzag(len(text)) + text + zigzag(0)
    return b"Obj\x01" + meta + sync + zigzag(1) + zigzag(len(datum)) + datum + sync


def newest_commit(table: Path) -> Path:
    """The newest completed commit file of a v8+ timeline (what ``show files`` parses)."""
    folder = table / ".hoodie" / "timeline"
    commits = [p for p in folder.iterdir() if p.name.endswith((".commit", ".deltacommit"))]
    return max(commits, key=lambda p: p.name.split("_")[0])


def files_base_hfile(table: Path) -> Path:
    """The metadata table's newest ``files`` base HFile (what listing reads)."""
    folder = table / ".hoodie" / "metadata" / "files"
    return max(folder.glob("*.hfile"), key=lambda p: p.name.rsplit("_", 1)[1])


def rewrite_hfile(
    path: Path,
    extra_field: dict[str, Any] | None = None,
    value_suffix: bytes = b"",
    schema_text: bytes | None = None,
    keys: dict[bytes, bytes] | None = None,
) -> None:
    """Rewrite a metadata HFile: an extra field in its writer schema (each value gets
    ``value_suffix``, that field's datum), or another schema text, or renamed keys."""
    content = read_hfile(path.read_bytes(), str(path))
    info = dict(content.file_info)
    schema = json.loads(info[b"schema"])
    if extra_field is not None:
        schema["fields"].append(extra_field)
    info[b"schema"] = schema_text if schema_text is not None else json.dumps(schema).encode()
    kept = {k: v for k, v in info.items() if not k.startswith(b"hfile.") and b"_KEY" not in k}
    kept = {k: v for k, v in kept.items() if k != b"KEY_VALUE_VERSION"}
    entries = sorted(((keys or {}).get(k, k), v + value_suffix) for k, v in content.entries)
    path.write_bytes(write_hfile(entries, kept, meta_blocks=content.meta_blocks))


def gzip_bomb(gigabytes: float) -> bytes:
    """A GZ stream that inflates to ``gigabytes`` of zeros from a few MB: one fully
    flushed deflate run of 1 MiB of zeros (which refers to nothing before it), repeated."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = deflater.compress(bytes(1 << 20)) + deflater.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    return GZIP_HEADER + piece * int(gigabytes * 1024) + final + bytes(8)


# -- 7: recursion on the C stack ------------------------------------------------------------


def test_a_self_referencing_commit_file_5000_levels_deep_is_one_line(fixture_copy) -> None:
    """A 5 KB v9 commit file whose record holds itself 5,000 levels deep killed the
    process (SIGSEGV in fastavro); its recursive schema is refused."""
    table = fixture_copy(V9_TABLE)
    commit = newest_commit(table)
    deep = {
        "type": "record",
        "name": "HoodieCommitMetadata",
        "namespace": "org.apache.hudi.avro.model",
        "fields": [{"name": "next", "type": ["null", "HoodieCommitMetadata"]}],
    }
    commit.write_bytes(avro_container(deep, b"\x02" * 5000 + b"\x00"))
    assert commit.stat().st_size < 6000
    line = assert_one_line_naming(run_contained(CLI, "show", "files", str(table)), commit)
    assert "recursive" in line


def test_a_self_referencing_field_in_a_metadata_hfile_schema_is_refused(fixture_copy) -> None:
    """The same schema check guards a metadata HFile's writer schema. (There fastavro
    skips a field our reader schema lacks, and its skipping does not recurse on the C
    stack; a recursive type is refused all the same, as no Hudi schema has one.)"""
    table = fixture_copy(V9_TABLE)
    hfile = files_base_hfile(table)
    deep = {"type": "record", "name": "Deep", "fields": [{"name": "n", "type": ["null", "Deep"]}]}
    rewrite_hfile(hfile, {"name": "deep", "type": ["null", deep]}, b"\x02" * 5001 + b"\x00")
    line = assert_one_line_naming(run_contained(READ_MDT_HFILE, str(hfile)), hfile)
    assert "recursive" in line


def test_a_schema_nested_past_the_bound_is_refused_but_hudis_own_nest_less() -> None:
    """Nesting is bounded (100 levels), expanded named types too; Hudi's schemas pass."""
    from hudi_sync.table.avro.bounded import schema_from_json, schema_from_text
    from hudi_sync.table.metadata_table.records import metadata_schema

    nested: Any = "long"
    for level in range(150):
        nested = {"type": "record", "name": f"L{level}", "fields": [{"name": "f", "type": nested}]}
    with pytest.raises(CorruptTableError, match=r"^f\.avsc: Avro schema is nested more than 100"):
        schema_from_json(nested, "f.avsc")
    # 2^40 fields from 40 named types, each holding the previous one twice.
    doubling: list[Any] = [{"type": "record", "name": "T0", "fields": []}]
    for level in range(1, 40):
        previous = f"T{level - 1}"
        doubling.append(
            {
                "type": "record",
                "name": f"T{level}",
                "fields": [{"name": "a", "type": previous}, {"name": "b", "type": previous}],
            }
        )
    wide = {"type": "record", "name": "W", "fields": [{"name": "t", "type": doubling}]}
    with pytest.raises(CorruptTableError, match="more than 100000 types"):
        schema_from_text(json.dumps(wide), "w.avsc")
    for version in (8, 9):
        assert schema_from_json(metadata_schema(version), "mdt").walk_datums is False


# -- 8: counts of items that take no bytes ---------------------------------------------------


def test_an_array_of_nulls_claiming_2_62_items_is_one_line(fixture_copy) -> None:
    """An extra ``array<null>`` field whose block claims 2^62 items spun forever."""
    table = fixture_copy(V9_TABLE)
    hfile = files_base_hfile(table)
    field = {"name": "nothing", "type": {"type": "array", "items": "null"}}
    rewrite_hfile(hfile, field, zigzag(2**62) + b"\x00")
    line = assert_one_line_naming(run_contained(READ_MDT_HFILE, str(hfile)), hfile)
    assert "more than 1000000 items" in line


def test_an_array_of_nulls_within_the_bound_still_decodes(fixture_copy) -> None:
    """Such a field is legal Avro: a few items decode, and the records read as before."""
    table = fixture_copy(V9_TABLE)
    hfile = files_base_hfile(table)
    before = decode_records(read_hfile(hfile.read_bytes(), str(hfile)), str(hfile))
    field = {"name": "nothing", "type": {"type": "array", "items": "null"}}
    rewrite_hfile(hfile, field, zigzag(3) + zigzag(-2) + zigzag(0) + b"\x00")
    after = decode_records(read_hfile(hfile.read_bytes(), str(hfile)), str(hfile))
    assert after == before and len(after) > 1


# -- 9: memory ------------------------------------------------------------------------------


def test_a_gz_block_inflating_past_its_declared_size_is_one_line(
    fixture_copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data block whose GZ stream inflates to 2.2 GB (the header declares the real
    size) was inflated whole; now only to the size it declares."""
    table = fixture_copy(V9_TABLE)
    hfile = files_base_hfile(table)
    content = read_hfile(hfile.read_bytes(), str(hfile))
    bomb = gzip_bomb(2.2)

    def bomb_block(magic: bytes, payload: bytes, codec: int, prev_block_offset: int = -1) -> bytes:
        if magic != DATA_MAGIC:
            return original(magic, payload, codec, prev_block_offset)
        with_header = HEADER_SIZE + len(bomb)
        padding = checksum_bytes(with_header)
        sizes = struct.pack(
            ">iiqbii", len(bomb) + padding, len(payload), prev_block_offset, 0, 16384, with_header
        )
        return magic + sizes + bomb + bytes(padding)

    original = hfile_writer.encode_block
    monkeypatch.setattr(hfile_writer, "encode_block", bomb_block)
    info = {k: v for k, v in content.file_info.items() if k in (b"schema",)}
    hfile.write_bytes(write_hfile(content.entries, info, meta_blocks=content.meta_blocks))
    monkeypatch.undo()
    assert hfile.stat().st_size < 3 * 1024**2
    line = assert_one_line_naming(run_contained(READ_MDT_HFILE, str(hfile)), hfile)
    assert "inflates past" in line


def test_a_log_block_claiming_2_31_records_of_negative_length_is_one_line(fixture_copy) -> None:
    """A MOR Avro data block under 1.4 KB whose records have length -4 made the column
    decoder collect 2^31 offsets (a 4 GB cap exhausted)."""
    table = fixture_copy("mor/avro/v9_txns_simple_meta")
    log = min(p for p in table.rglob(".*.log.*") if ".hoodie" not in p.parts)
    blocks = list(read_blocks(log.read_bytes(), str(log)))
    data = next(b for b in blocks if b.block_type == BlockType.AVRO_DATA)
    content = struct.pack(">iii", 3, 2**31 - 1, -4) + bytes(1024)
    log.write_bytes(encode_block(data.block_type, data.header, content, data.footer))
    assert log.stat().st_size < 1400 + len(data.header[2])
    line = assert_one_line_naming(run_contained(READ_LOG, str(log)), log)
    assert "Avro record" in line


# -- 10: tracebacks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (b'["null", "string"]', "is not a record"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"5", "has a type that is a JSON int"),
        (b'"string"', "is not a record"),
        (b"\xff\xfe", "metadata record schema"),
    ],
    ids=["list", "nested", "number", "primitive", "not-utf8"],
)
def test_a_metadata_schema_of_the_wrong_shape_is_one_line(
    fixture_copy, schema: bytes, message: str
) -> None:
    table = fixture_copy(V9_TABLE)
    hfile = files_base_hfile(table)
    rewrite_hfile(hfile, schema_text=schema)
    content = read_hfile(hfile.read_bytes(), str(hfile))
    with pytest.raises(CorruptTableError, match=message) as raised:
        decode_records(content, str(hfile))
    assert str(raised.value).startswith(f"{hfile}: ") and "\n" not in str(raised.value)


def test_a_non_utf8_hfile_row_key_is_one_line(fixture_copy) -> None:
    table = fixture_copy(V9_TABLE)
    hfile = files_base_hfile(table)
    content = read_hfile(hfile.read_bytes(), str(hfile))
    first = content.entries[0][0]
    rewrite_hfile(hfile, keys={first: b"\xff" + first})
    with pytest.raises(CorruptTableError, match="is not UTF-8") as raised:
        decode_records(read_hfile(hfile.read_bytes(), str(hfile)), str(hfile))
    assert str(raised.value).startswith(f"{hfile}: ")


def test_a_deeply_nested_json_commit_is_one_line(fixture_copy) -> None:
    table = fixture_copy("cow/v6_nonpartitioned")
    commit = max((table / ".hoodie").glob("*.commit"))
    commit.write_bytes(b'{"a":' * 100_000 + b"1" + b"}" * 100_000)
    with pytest.raises(CorruptTableError, match="nested too deeply") as raised:
        parse_commit_metadata(commit.read_bytes(), str(commit))
    assert str(raised.value).startswith(f"{commit}: ")


@pytest.mark.parametrize(
    "record",
    [
        {"hoodieRestoreMetadata": [1, 2]},
        {"instantsToRollback": 5},
        {"hoodieRestoreMetadata": {"t": 5}},
        ["not", "an", "object"],
    ],
    ids=["list-of-numbers", "number", "rollbacks-a-number", "list"],
)
def test_a_restore_file_of_an_unexpected_shape_is_one_line(fixture_copy, record: Any) -> None:
    table = fixture_copy("cow/v6_nonpartitioned")
    hoodie = table / ".hoodie"
    for suffix in (".restore.requested", ".restore.inflight"):
        (hoodie / f"29990101000000000{suffix}").write_bytes(b"")
    restore = hoodie / "29990101000000000.restore"
    restore.write_text(json.dumps(record))
    timeline = HudiTable.open(str(table)).timeline
    instant = next(i for i in timeline.instants if i.requested_time == "29990101000000000")
    with pytest.raises(CorruptTableError) as raised:
        timeline.undone_instants(instant)
    assert "29990101000000000.restore" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_duplicate_column_names_in_a_commit_schema_are_one_line(unpack_table, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A commit whose schema names ``city`` twice made the change feed's sync fail with
    pyarrow's KeyError ('Field "city" exists 2 times in schema')."""
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app
    from tests.fixture_tables import fixture_tables
    from tests.test_cdc import _with_cdc_enabled

    (fixture,) = [t for t in fixture_tables() if t.name.endswith("mor/avro/v8_trips_8i3u1d")]
    table = _with_cdc_enabled(unpack_table(fixture), tmp_path / "t")
    commit = newest_commit(table)
    reader = fastavro.reader(io.BytesIO(commit.read_bytes()))
    writer_schema, record = reader.writer_schema, next(iter(reader))
    schema = json.loads(record["extraMetadata"]["schema"])
    schema["fields"].append(dict(schema["fields"][-1]))
    record["extraMetadata"]["schema"] = json.dumps(schema)
    out = io.BytesIO()
    fastavro.writer(out, writer_schema, [record])
    commit.write_bytes(out.getvalue())
    database = tmp_path / "w.duckdb"
    args = ["sync", "duckdb", str(table), "--database", str(database), "--table", "t"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (result.output, result.exception)
    (line,) = result.stderr.splitlines()
    assert commit.name in line and "two fields 'city'" in line


def test_a_bucket_count_past_a_java_int_is_one_line_naming_the_properties(fixture_copy) -> None:
    """Hudi's bucket count is a Java int; 2^32 buckets reached a numpy OverflowError at
    write time. It is refused where the table is opened, naming hoodie.properties."""
    from tests.fixture_tables import set_properties

    table = fixture_copy("cow/v6_nonpartitioned")
    set_properties(table, {"hoodie.bucket.index.num.buckets": str(2**32)})
    with pytest.raises(CorruptTableError, match="must be at most 2147483647") as raised:
        HudiTable.open(str(table))
    assert "hoodie.properties" in str(raised.value)
    set_properties(table, {"hoodie.bucket.index.num.buckets": str(2**31 - 1)})
    assert HudiTable.open(str(table)).config.name


# -- found by the fuzz suite (tests/test_fuzz_decoders.py) ----------------------------------


def test_a_compaction_plan_operation_without_its_fields_is_one_line(fixture_copy) -> None:
    """A plan whose writer schema names ``baseInstantTime`` otherwise (one byte changed)
    raised KeyError."""
    from hudi_sync.table.write.compaction import read_plan

    table = fixture_copy("mor/avro/v9_txns_simple_meta")
    plan = next((table / ".hoodie" / "timeline").glob("*.compaction.requested"))
    data = plan.read_bytes()
    assert len(read_plan(data, str(plan))) >= 1
    broken = data.replace(b'"baseInstantTime"', b'"baseInstantTimf"')
    assert broken != data
    with pytest.raises(CorruptTableError, match="unexpected shape") as raised:
        read_plan(broken, str(plan))
    assert str(raised.value).startswith(f"{plan}: ") and "\n" not in str(raised.value)


def test_a_debezium_schema_field_without_a_name_is_one_line() -> None:
    from hudi_sync.debezium.events import EventError, EventReader, EventSettings, Position

    lines = (DATA / "debezium" / "mysql_inventory.jsonl").read_text().splitlines()
    message = json.loads(lines[1])
    value = json.loads(message["value"])
    after = next(f for f in value["schema"]["fields"] if f.get("field") == "after")
    after["fields"][0].pop("field")
    position = Position(message["topic"], 0, 1)
    with pytest.raises(EventError, match="schema has an unexpected shape") as raised:
        EventReader(EventSettings()).read(position, None, json.dumps(value).encode())
    assert str(raised.value).startswith(str(position)) and "\n" not in str(raised.value)


def test_a_manifest_pointer_nested_past_the_recursion_limit_is_one_line(fixture_copy) -> None:
    from hudi_sync.manifest.snapshot import MANIFEST_FOLDER, POINTER, ManifestStore
    from hudi_sync.sync.job import publish_manifest

    table = fixture_copy("cow/v6_nonpartitioned")
    opened = HudiTable.open(str(table))
    publish_manifest(opened)
    (table / MANIFEST_FOLDER / POINTER).write_bytes(b"[" * 100_000)
    with pytest.raises(CorruptTableError, match=f"{MANIFEST_FOLDER}/{POINTER} is corrupt"):
        ManifestStore(opened).latest()


def test_a_debezium_value_nested_past_the_recursion_limit_is_one_line() -> None:
    """orjson refuses it (1,024 levels at most); the exact-decimal parse it falls back
    to raised RecursionError."""
    from hudi_sync.debezium.events import EventError, EventReader, EventSettings, Position

    position = Position("dbserver1.inventory.products", 0, 7)
    with pytest.raises(EventError, match="neither JSON nor Avro") as raised:
        EventReader(EventSettings()).read(position, None, b'{"a":' + b"[" * 100_000)
    assert str(raised.value).startswith(str(position)) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (struct.pack(">ii", 3, -1), "claims -1 records"),  # was a ValueError from bytearray
        (struct.pack(">iii", 3, 1, 1) + b"\x02", "cannot be decoded"),  # named no file
    ],
    ids=["negative-count", "truncated-record"],
)
def test_a_corrupt_v6_archive_block_is_one_line_naming_the_file(
    fixture_copy, content: bytes, message: str
) -> None:
    from tests.timeline_files import write_v1_archive

    table = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    archive = write_v1_archive(
        table / ".hoodie" / "archived", [("20240101000000000", "commit", "COMPLETED")]
    )
    (block,) = read_blocks(archive.read_bytes(), str(archive))
    archive.write_bytes(encode_block(block.block_type, block.header, content, block.footer))
    with pytest.raises(CorruptTableError, match=message) as raised:
        HudiTable.open(str(table)).instants(include_archived=True)
    assert f"archived file {archive.name}: " in str(raised.value)
    assert "\n" not in str(raised.value)
