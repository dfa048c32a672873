"""The test files a change can break, for ``scripts/test.sh --quick``.

A change is every file that differs from the merge base with ``main`` (committed or not,
untracked included). A test file is selected when it changed itself or when its import
closure (its own imports, through ``tests/`` helpers and ``hudi_sync``, packages' own
``__init__`` included: importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``)
reaches a changed module. A change to ``tests/conftest.py`` or to something that every test
imports selects every test; a change outside Python (docs, terraform, data) selects the
tests that name that file, or a pattern of its path (``docs/how-to/*.md``). Prints one
path per line.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("hudi_sync", "tests", "benchmarks")
# A path pattern a test names for the files it reads: folders, then a "*" name.
PATTERN = re.compile(r"[\w.-]+(?:/[\w.-]+)*/[\w.-]*\*[\w.*-]*")


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout


def changed_files(base_ref: str) -> set[str]:
    """Paths changed since the merge base of HEAD and ``base_ref`` (worktree included)."""
    base = git("merge-base", "HEAD", base_ref).strip()
    paths = set(git("diff", "--name-only", base).split())
    paths |= set(git("ls-files", "--others", "--exclude-standard").split())
    return paths


def module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {
        module_of(path): path
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if ".venv" not in path.parts
    }


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``module`` imports anywhere in its body, with their packages."""
    names: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    found: set[str] = set()
    for name in names:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):  # a.b.c runs a/__init__ and a/b/__init__
            prefix = ".".join(parts[:end])
            if prefix in modules and prefix != module:
                found.add(prefix)
    return found


def select(changed: set[str]) -> list[str]:
    modules = all_modules()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    tests = sorted(n for n in modules if n.startswith("tests.test_"))
    changed_modules = {
        module_of(REPO / p) for p in changed if p.endswith(".py") and (REPO / p).exists()
    }
    others = [p for p in changed if not p.endswith(".py")]

    def closure(start: str) -> set[str]:
        """What ``start`` imports, following ``tests`` helpers but not ``hudi_sync``'s own
        imports (through them every Spark test reaches every Spark module)."""
        seen, todo = {start}, [start]
        while todo:
            for name in graph.get(todo.pop(), ()):
                if name not in seen:
                    seen.add(name)
                    if not name.startswith("hudi_sync"):
                        todo.append(name)
        return seen

    # A changed module's direct importers in hudi_sync count as changed (one step): a test
    # of the writer is chosen when a module the writer calls changed.
    changed_modules |= {
        name
        for name, deps in graph.items()
        if name.startswith("hudi_sync")
        and modules[name].name != "__init__.py"
        and deps & changed_modules
    }

    if closure("tests.conftest") & changed_modules or "pyproject.toml" in changed:
        return [str(modules[t].relative_to(REPO)) for t in tests]
    chosen = []
    for test in tests:
        path = modules[test]
        text = path.read_text()
        patterns = PATTERN.findall(text)
        if closure(test) & changed_modules or any(
            Path(o).name in text or any(fnmatch.fnmatch(o, p) for p in patterns) for o in others
        ):
            chosen.append(str(path.relative_to(REPO)))
    return chosen


def main() -> None:
    base_ref = os.environ.get("HUDI_SYNC_QUICK_BASE", "main")
    changed = set(sys.argv[1:]) or changed_files(base_ref)
    for path in select(changed):  # nothing at all when nothing is chosen
        print(path)


if __name__ == "__main__":
    main()
