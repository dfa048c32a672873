"""The fenced snippets of README.md and docs/how-to/*.md, and one shell script per page
that runs them in page order (``tests/test_docs_snippets.py``; the convention is in
docs/testing.md, "Docs snippets").

- ``bash``/``sh``/``shell`` blocks run as written; ``console`` blocks run their ``$ ``
  lines (the rest is output). They share one bash of the page (``set -euo pipefail``), so
  a block may continue an earlier one (its variables, its folder).
- ``python`` blocks each run as a program of their own, in the same order.
- ``properties`` blocks whose first line is ``# NAME`` are written to ``NAME`` in the
  page's folder when the page reaches them (the files the commands' ``--props`` name).
- ``sql`` blocks run only when marked ``<!-- snippet: duckdb -->``: in DuckDB, against
  the page's warehouse file (other dialects' queries are for their warehouses).
- ``<!-- snippet: not-run (REASON) -->`` on the line above a fence keeps that block out
  of the run; it is only parsed (``bash -n``, ``compile``). The reason is required.

Placeholders of the pages (``PLACEHOLDERS``) are replaced by the run's folder.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHELL = frozenset({"bash", "sh", "shell", "console"})
PYTHON = frozenset({"python", "py"})
PROPERTIES = frozenset({"properties"})
SQL = frozenset({"sql"})
HANDLED = SHELL | PYTHON | PROPERTIES | SQL
NOT_RUN = "not-run"
DUCKDB = "duckdb"
MARKS = frozenset({NOT_RUN, DUCKDB})
# Paths the pages write for "your" table and warehouse, and the demo's work folder:
# each stands for the run's folder (``{W}``), which holds the demo's table and warehouse.
PLACEHOLDERS = {
    "/tmp/hudi-sync-demo.XXXXXX": "{W}",
    "/data/lake/trips": "{W}/trips",
    "/data/warehouse.duckdb": "{W}/warehouse.duckdb",
}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)[^\n]*$")
_MARK = re.compile(r"^\s*<!--\s*snippet:\s*(?P<kind>[\w-]+)\s*(?:\((?P<reason>.*)\))?\s*-->\s*$")
_FILE_NAME = re.compile(r"^#\s*(?P<name>[\w.-]+\.properties)\s*(?::.*)?$")


@dataclass(frozen=True)
class Snippet:
    """One fenced block: its page, the line of its opening fence, language, text
    (de-indented), and the mark above it (kind and reason) if any."""

    page: Path
    line: int
    lang: str
    text: str
    mark: str | None = None
    reason: str | None = None

    @property
    def where(self) -> str:
        page = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page
        return f"{page}:{self.line}"

    @property
    def runs(self) -> bool:
        """Whether the page's run executes (or writes) it."""
        if self.mark == NOT_RUN:
            return False
        if self.lang in SQL:
            return self.mark == DUCKDB
        return self.lang in SHELL | PYTHON or self.file_name is not None

    @property
    def file_name(self) -> str | None:
        """The file a ``properties`` block is, from its first line ``# NAME``."""
        if self.lang not in PROPERTIES:
            return None
        first = self.text.split("\n", 1)[0]
        match = _FILE_NAME.match(first)
        return match["name"] if match else None

    def shell_text(self) -> str:
        """The commands of a shell block (a ``console`` block's ``$ `` lines and their
        continuations)."""
        if self.lang != "console":
            return self.text
        commands: list[str] = []
        continued = False
        for line in self.text.splitlines():
            if line.startswith("$ "):
                commands.append(line[2:])
            elif continued:
                commands.append(line)
            else:
                continue
            continued = line.rstrip().endswith("\\")
        return "\n".join(commands) + "\n"


def pages() -> list[Path]:
    """README.md and every how-to page (new pages are picked up as they are added)."""
    return [REPO / "README.md", *sorted((REPO / "docs" / "how-to").glob("*.md"))]


def snippets(page: Path) -> list[Snippet]:
    """Every fenced block of ``page`` in order, with the mark on the line above it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Snippet] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, indent = opening["fence"], opening["indent"]
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            stripped = lines[end].strip()
            if stripped.startswith(fence[0] * len(fence)) and stripped.strip(fence[0]) == "":
                break
            body.append(lines[end])
            end += 1
        # A fence inside a list item is indented: its lines lose that indentation only.
        text = "\n".join(line.removeprefix(indent) for line in body) + "\n"
        mark, reason = _mark_above(lines, index)
        found.append(Snippet(page, index + 1, opening["lang"].lower(), text, mark, reason))
        index = end + 1
    return found


def _mark_above(lines: list[str], index: int) -> tuple[str | None, str | None]:
    above = index - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    if above < 0:
        return None, None
    match = _MARK.match(lines[above])
    if match is None:
        return None, None
    reason = (match["reason"] or "").strip() or None
    return match["kind"], reason


def stray_marks(page: Path) -> list[int]:
    """The lines of ``page`` holding a snippet mark that no fence follows (a mark left
    behind when its block moved would silently stop applying)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    stray = []
    for index, line in enumerate(lines):
        if _MARK.match(line) or "<!-- snippet:" in line:
            after = index + 1
            while after < len(lines) and not lines[after].strip():
                after += 1
            if not (_MARK.match(line) and after < len(lines) and _FENCE.match(lines[after])):
                stray.append(index + 1)
    return stray


def substituted(text: str, folder: Path) -> str:
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value.format(W=folder))
    return text


def page_script(blocks: list[Snippet], folder: Path, python: str) -> str:
    """One bash script running ``blocks`` (those that run) in order in ``folder``; before
    each it writes the block's place to ``$SNIPPET_AT`` so a failure can name it."""
    out = ["set -euo pipefail", f"cd {shlex.quote(str(folder))}"]
    for number, block in enumerate(blocks):
        if not block.runs:
            continue
        out.append(f"printf '%s\\n' {shlex.quote(block.where)} > \"$SNIPPET_AT\"")
        text = substituted(block.text, folder)
        if block.lang in SHELL:
            out.append(substituted(block.shell_text(), folder))
        elif block.lang in PYTHON:
            program = folder / f"snippet_{number}.py"
            program.write_text(text, encoding="utf-8")
            out.append(f"{shlex.quote(python)} {shlex.quote(str(program))}")
        elif block.file_name is not None:
            target = folder / block.file_name
            source = folder / f"snippet_{number}.properties"
            source.write_text(text, encoding="utf-8")
            out.append(f"cp {shlex.quote(str(source))} {shlex.quote(str(target))}")
        elif block.lang in SQL:
            query = folder / f"snippet_{number}.sql"
            query.write_text(text, encoding="utf-8")
            program = (
                "import sys, duckdb\n"
                "db = duckdb.connect(sys.argv[1], read_only=True)\n"
                "db.sql(open(sys.argv[2]).read()).show()\n"
            )
            out.append(
                f"{shlex.quote(python)} -c {shlex.quote(program)} "
                f"{shlex.quote(str(folder / 'warehouse.duckdb'))} {shlex.quote(str(query))}"
            )
    return "\n".join(out) + "\n"
