"""The decoders' fuzz run: real files of the fixture tables, mutated (seeded), handed to
every decoder that reads storage. Run by ``tests/test_fuzz_decoders.py`` in a child
process with an address-space limit and a timeout, so that a decoder that crashes, hangs
or blows up fails that test instead of the test run.

``python -m tests.fuzz_decoders <seed> <mutants per file> <table>...`` prints one
JSON object: per decoder family, the cases run and the failures (a result or one
``BadInputError`` line naming the file is a pass; any other exception, a message of
several lines or one that does not name the file, or a case slower than
``SLOW_SECONDS``, is a failure). The case being run is written to stderr first, so a
crash or a hang names it.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hudi_sync.debezium.events import EventReader, EventSettings, Position
from hudi_sync.errors import BadInputError
from hudi_sync.manifest.snapshot import MANIFEST_FOLDER, POINTER, ManifestStore
from hudi_sync.sync.job import publish_manifest
from hudi_sync.table import HudiTable
from hudi_sync.table.config.properties import TableConfig, decode_properties
from hudi_sync.table.metadata_table.hfile_reader import read_hfile
from hudi_sync.table.metadata_table.reader import _block_records as mdt_block_records
from hudi_sync.table.metadata_table.records import decode_records
from hudi_sync.table.records.log_records import delete_keys, read_log_records
from hudi_sync.table.records.logfile import BlockType, read_blocks
from hudi_sync.table.timeline.active import read_instant_record, undone_by_record
from hudi_sync.table.timeline.commit_metadata import (
    CleanMetadata,
    RollbackMetadata,
    parse_commit_metadata,
)
from hudi_sync.table.write.compaction import read_plan
from hudi_sync.table.write.metadata_table.compaction import read_plan as read_mdt_plan

SLOW_SECONDS = 5.0
# Values that break length and count fields: extremes of int32/int64, small negatives.
_INTERESTING = [
    b"\x00",
    b"\xff",
    b"\x7f",
    b"\x80",
    b"\x7f\xff\xff\xff",
    b"\xff\xff\xff\xfc",
    b"\x80\x00\x00\x00",
    b"\x7f\xff\xff\xff\xff\xff\xff\xff",
    b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f",  # a zig-zag varint of about 2^62
    b"\xfe\xff\xff\xff\x0f",  # a zig-zag varint of 2^31 - 1
    b"[" * 100_000,  # JSON nested past the interpreter's recursion limit
    b'{"a":' * 50_000,
]


def mutants(data: bytes, rng: random.Random, count: int) -> Iterator[bytes]:
    """``count`` variants of ``data``, each with one to three mutations."""
    for _ in range(count):
        mutant = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            where = rng.randrange(len(mutant) + 1)
            kind = rng.randrange(6)
            if kind == 0 and mutant:  # flip a bit
                at = min(where, len(mutant) - 1)
                mutant[at] ^= 1 << rng.randrange(8)
            elif kind == 1:  # overwrite with an interesting value
                value = rng.choice(_INTERESTING)
                mutant[where : where + len(value)] = value
            elif kind == 2:  # truncate
                del mutant[where:]
            elif kind == 3:  # insert random bytes
                mutant[where:where] = rng.randbytes(rng.randint(1, 8))
            elif kind == 4 and mutant:  # repeat a slice
                end = min(len(mutant), where + rng.randint(1, 64))
                mutant[where:where] = mutant[where:end] * rng.randint(1, 4)
            else:  # drop a slice
                del mutant[where : where + rng.randint(1, 16)]
        yield bytes(mutant)


def _commit(data: bytes, where: str) -> Any:
    return parse_commit_metadata(data, where)


def _instant_record(data: bytes, where: str) -> Any:
    """A clean, rollback or restore file as the timeline reads each."""
    for reader in (CleanMetadata.from_record, RollbackMetadata.from_record, undone_by_record):
        read_instant_record(data, where, reader)


def _plans(data: bytes, where: str) -> Any:
    read_plan(data, where)
    read_mdt_plan(data, where)


def _hfile(data: bytes, where: str) -> Any:
    return decode_records(read_hfile(data, where), where)


def _mdt_log(data: bytes, where: str) -> Any:
    """A metadata table log file: HFILE_DATA blocks and delete blocks."""
    records: list[Any] = []
    for block in read_blocks(data, where):
        if block.block_type == BlockType.HFILE_DATA:
            records.extend(mdt_block_records(block, where))
        elif block.block_type == BlockType.DELETE:
            records.extend(delete_keys(block.content, where))
    return records


def _avro_records(data: bytes, where: str) -> Any:
    """Each Avro block decoded record by record (CDC logs, the v6 archive, the
    fallback of schemas the column decoder lacks) and column-wise."""
    for block in read_blocks(data, where):
        if block.block_type == BlockType.AVRO_DATA:
            try:
                block.avro_records()
                block.avro_columns()
            except BadInputError as exc:
                raise BadInputError(f"{where}: {exc}") from None


def _properties(data: bytes, where: str) -> Any:
    return TableConfig.parse(decode_properties(data, where), where)


_READER = EventReader(EventSettings())


def _debezium(data: bytes, where: str) -> Any:
    """One event value; ``where`` is its position (``topic T partition P offset O``)."""
    words = where.split()
    return _READER.read(Position(words[1], int(words[3]), int(words[5])), None, data)


class ManifestReads:
    """The manifest store's reader (``ManifestStore.latest``) over a scratch copy of a
    table with a published manifest: each mutant takes the place of one of its files
    (named by its path in the table, as errors name it) while the manifest is read."""

    def __init__(self, source: Path) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="fuzz-manifest-")) / source.name
        shutil.copytree(source, self.base)
        table = HudiTable.open(str(self.base))
        publish_manifest(table)
        self.store = ManifestStore(table)
        folder = self.base / MANIFEST_FOLDER
        self.seeds = [folder / POINTER, *sorted(folder.glob("snapshots/*/*s.csv"))]

    def names(self) -> list[tuple[str, bytes]]:
        return [(str(p.relative_to(self.base)), p.read_bytes()) for p in self.seeds]

    def __call__(self, data: bytes, where: str) -> Any:
        path = self.base / where
        original = path.read_bytes()
        path.write_bytes(data)
        try:
            return self.store.latest()
        finally:
            path.write_bytes(original)


def _files(roots: list[Path], pattern: str, inside_hoodie: bool | None = None) -> list[Path]:
    found = sorted(
        p for root in roots for p in root.rglob(pattern) if p.is_file() and p.stat().st_size
    )
    if inside_hoodie is None:
        return found
    return [p for p in found if (".hoodie" in p.parts) == inside_hoodie]


def families(roots: list[Path]) -> dict[str, tuple[Callable[[bytes, str], Any], list[Path]]]:
    """Decoder families and their seed files in the unpacked fixture tables ``roots``."""
    commits = [
        p
        for p in _files(roots, "*commit", True)
        if p.name.endswith((".commit", ".deltacommit", ".replacecommit"))
    ]
    json_commits = [p for p in commits if p.read_bytes()[:1] == b"{"]
    avro_commits = [p for p in commits if p.read_bytes()[:3] == b"Obj"]
    undo = _files(roots, "*.clean", True) + _files(roots, "*.rollback", True)
    undo += _files(roots, "*.restore", True)
    logs = _files(roots, ".*.log.*")
    return {
        "timeline-json": (_commit, json_commits[:6]),
        "timeline-avro": (_commit, avro_commits[:6]),
        "clean-rollback-restore": (_instant_record, undo[:6]),
        "compaction-plans": (_plans, _files(roots, "*.compaction.requested", True)[:4]),
        "log-blocks": (read_log_records, [p for p in logs if ".hoodie" not in p.parts][:6]),
        "avro-blocks": (_avro_records, [p for p in logs if ".hoodie" not in p.parts][:3]),
        "mdt-log-blocks": (_mdt_log, [p for p in logs if ".hoodie" in p.parts][:6]),
        "hfile": (_hfile, _files(roots, "*.hfile", True)[:6]),
        "properties": (_properties, _files(roots, "hoodie.properties", True)[:4]),
    }


def debezium_events(repo: Path) -> list[tuple[str, bytes]]:
    """Real Debezium (MySQL connector) event values, named by their position."""
    lines = (repo / "tests" / "data" / "debezium" / "mysql_inventory.jsonl").read_text()
    events = []
    for offset, line in enumerate(lines.splitlines()):
        message = json.loads(line)
        if message["value"] is not None:
            position = Position(message["topic"], int(message["partition"]), offset)
            events.append((str(position), message["value"].encode()))
    return events[:6]


def check(decoder: Callable[[bytes, str], Any], data: bytes, where: str) -> str | None:
    """None when ``decoder`` returns or raises one BadInputError line naming ``where``;
    else what went wrong."""
    try:
        decoder(data, where)
    except BadInputError as exc:
        message = str(exc)
        if "\n" in message.strip() or where not in message:
            return f"{where}: a refusal that is not one line naming the file: {message[:500]!r}"
    except Exception as exc:
        return f"{where}: {type(exc).__name__}: {str(exc)[:300]}"
    return None


def run(roots: list[Path], repo: Path, seed: int, per_file: int) -> dict[str, Any]:
    rng = random.Random(seed)
    report: dict[str, Any] = {}
    cases: dict[str, tuple[Callable[[bytes, str], Any], list[tuple[str, bytes]]]] = {
        name: (decoder, [(str(p), p.read_bytes()) for p in paths])
        for name, (decoder, paths) in families(roots).items()
    }
    cases["debezium-events"] = (_debezium, debezium_events(repo))
    manifests = ManifestReads(next(r for r in roots if r.name == "v6_nonpartitioned"))
    cases["manifests"] = (manifests, manifests.names())
    for name, (decoder, seeds) in cases.items():
        failures: list[str] = []
        count = slowest = 0.0
        for where, original in seeds:
            for index, mutant in enumerate([original, *mutants(original, rng, per_file)]):
                print(f"{name} {where} mutant {index}", file=sys.stderr, flush=True)
                started = time.perf_counter()
                problem = check(decoder, mutant, where)
                elapsed = time.perf_counter() - started
                slowest = max(slowest, elapsed)
                count += 1
                if problem is not None:
                    failures.append(f"mutant {index}: {problem}")
                if elapsed > SLOW_SECONDS:
                    failures.append(f"mutant {index} of {where}: {elapsed:.1f} s")
        report[name] = {
            "seeds": len(seeds),
            "cases": count,
            "slowest": slowest,
            "failures": failures,
        }
    return report


if __name__ == "__main__":
    seed, per_file, roots = int(sys.argv[1]), int(sys.argv[2]), [Path(a) for a in sys.argv[3:]]
    print(json.dumps(run(roots, Path(__file__).resolve().parents[1], seed, per_file)))
