"""What ``hudi_sync`` imports is what ``pyproject.toml`` declares.

A plain ``pip install hudi-sync`` brings only ``[project] dependencies``; the suite's venv
has every extra, so an import only an extra (or only the test extra) brings would pass here
and fail for a user (numpy once made every ``hudi-sync`` command, ``--help`` included, fail
so). These tests read the imports from the source, so they fail at once, without a clean
venv; ``scripts/install_check.sh`` then proves the installs in clean venvs.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from hudi_sync.extras import EXTRAS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hudi_sync"
# What a plain install runs: the CLI (every command's --help), the table core, the
# manifest, the sync and the DuckDB target (the embedded default warehouse).
CORE_ROOTS = (
    "hudi_sync.cli.app",
    "hudi_sync.table",
    "hudi_sync.manifest",
    "hudi_sync.sync",
    "hudi_sync.warehouse.duckdb",
)
DEVELOPMENT_EXTRAS = {"test", "dev", "docs"}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. hudi_sync.table.records.log_records
    name: str  # the imported module, e.g. numpy.typing
    eager: bool  # runs when the module is imported (not in a function, not TYPE_CHECKING)
    line: int


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module, module: str) -> list[Import]:
    found: list[Import] = []

    def visit(node: ast.AST, eager: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend(Import(module, a.name, eager, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, f"{module}:{node.lineno}: relative import"
            found.append(Import(module, node.module, eager, node.lineno))
            # ``from hudi_sync.x import y`` imports the submodule hudi_sync.x.y if there is one
            found.extend(
                Import(module, f"{node.module}.{a.name}", eager, node.lineno) for a in node.names
            )
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                lazy = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) or (
                    isinstance(node, ast.If) and field == "body" and _is_type_checking(node.test)
                )
                visit(child, eager and not lazy)

    visit(tree, True)
    return found


@functools.cache
def _all_imports() -> tuple[set[str], list[Import]]:
    modules: set[str] = set()
    imports: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        modules.add(module)
        imports.extend(_imports(ast.parse(path.read_text(), str(path)), module))
    return modules, imports


def _third_party(name: str) -> str | None:
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top in ("hudi_sync", "__future__"):
        return None
    return top


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        assert match, requirement
        names.add(_normalized(match.group(1)))
    return names


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = {
        extra: _requirement_names(requirements)
        for extra, requirements in project["optional-dependencies"].items()
        if extra not in DEVELOPMENT_EXTRAS
    }
    return _requirement_names(project["dependencies"]), extras


@functools.cache
def _providers() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distributions(top: str) -> set[str]:
    """The installed distributions that provide the top-level module ``top``."""
    found = _providers().get(top)
    assert found, f"no installed distribution provides {top!r} (the suite's venv has all extras)"
    return {_normalized(d) for d in found}


def _eager_closure(modules: set[str], imports: list[Import]) -> set[str]:
    """The hudi_sync modules importing ``CORE_ROOTS`` runs (with their parent packages)."""
    edges: dict[str, set[str]] = {}
    for i in imports:
        if i.eager and i.name in modules:
            edges.setdefault(i.module, set()).add(i.name)
    reached: set[str] = set()
    pending = list(CORE_ROOTS)
    while pending:
        module = pending.pop()
        parts = module.split(".")
        for upto in range(1, len(parts) + 1):
            name = ".".join(parts[:upto])
            if name in modules and name not in reached:
                reached.add(name)
                pending.extend(edges.get(name, ()))
    return reached


def test_every_import_is_declared() -> None:
    """Each third-party module hudi_sync imports comes from a dependency or a user extra
    (not only from the test, dev or docs extras)."""
    core, extras = _declared()
    runtime = core.union(*extras.values())
    _, imports = _all_imports()
    undeclared = sorted(
        f"{i.module}:{i.line} imports {top} ({', '.join(sorted(_distributions(top)))})"
        for i in imports
        if (top := _third_party(i.name)) and not _distributions(top) & runtime
    )
    assert not undeclared, "undeclared in pyproject.toml:\n" + "\n".join(undeclared)


def test_a_plain_install_has_what_the_core_imports() -> None:
    """What the CLI, the table core, the sync and the DuckDB target import when loaded is
    in ``dependencies``; what an extra brings is imported inside the function that needs
    it (or under TYPE_CHECKING)."""
    core, _ = _declared()
    modules, imports = _all_imports()
    closure = _eager_closure(modules, imports)
    assert {
        "hudi_sync.cli.sync",
        "hudi_sync.table.records.log_records",
    } <= closure  # the walk works
    missing = sorted(
        f"{i.module}:{i.line} imports {top} ({', '.join(sorted(_distributions(top)))})"
        for i in imports
        if i.eager
        and i.module in closure
        and (top := _third_party(i.name))
        and not _distributions(top) & core
    )
    assert not missing, "not in [project] dependencies:\n" + "\n".join(missing)


def test_every_core_dependency_is_imported() -> None:
    """A core dependency nothing in hudi_sync imports (one only the tests use) costs every
    user its download; it belongs in the test extra."""
    core, _ = _declared()
    _, imports = _all_imports()
    imported = set().union(*(_distributions(top) for i in imports if (top := _third_party(i.name))))
    assert sorted(core - imported) == []


def test_each_extra_module_names_the_extra_that_brings_it() -> None:
    """``hudi_sync.extras.EXTRAS`` (what a missing module's error tells to install) covers
    every module only an extra brings, and names an extra that declares it."""
    core, extras = _declared()
    _, imports = _all_imports()
    extras_only = {
        top for i in imports if (top := _third_party(i.name)) and not _distributions(top) & core
    }
    assert extras_only <= set(EXTRAS), sorted(extras_only - set(EXTRAS))
    wrong = sorted(
        f"{module}: [{extra}] declares none of {sorted(_distributions(module))}"
        for module, extra in EXTRAS.items()
        if not _distributions(module) & extras.get(extra, set())
    )
    assert not wrong


def test_loading_the_cli_imports_no_extra() -> None:
    """``hudi-sync --help`` loads the CLI only: none of the modules that only an extra
    brings (pyspark, google, snowflake, ...) is needed until a command needs it. They
    are made unimportable in a child that loads the CLI, as in a plain install (pyarrow
    imports pandas when it is there and goes on without it when it is not)."""
    core, _ = _declared()
    _, imports = _all_imports()
    extras_only = sorted(
        {top for i in imports if (top := _third_party(i.name)) and not _distributions(top) & core}
    )
    assert "pyspark" in extras_only and "snowflake" in extras_only
    # A finder first on the meta path refuses them, as a plain install's Python would.
    child = (
        "import sys\n"
        f"ABSENT = {extras_only!r}\n"
        "class Absent:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ABSENT:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "import hudi_sync.cli.app\n"
        "print(*sorted({m.split('.')[0] for m in sys.modules}))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", child],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert "hudi_sync" in loaded.stdout.split()
    assert sorted(set(loaded.stdout.split()) & set(extras_only)) == []


def test_the_reading_side_of_spark_loads_without_the_writer() -> None:
    """A Python worker that plans a ``format("hudi")`` query or unpickles a reader's
    function imports the reading modules only: the writer's (about a second of imports
    in every fresh worker) load on first use of ``hudi_sync.spark.write``."""
    child = (
        "import sys\n"
        "import hudi_sync.spark.datasource\n"
        "before = 'hudi_sync.spark.writing.writer' in sys.modules\n"
        "from hudi_sync.spark import write\n"
        "print(before, 'hudi_sync.spark.writing.writer' in sys.modules, write.__module__)\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.split() == ["False", "True", "hudi_sync.spark.writing.writer"]


def test_the_reading_side_of_spark_loads_without_pandas() -> None:
    """The processes Spark starts to plan a ``format("hudi")`` query import
    ``hudi_sync.spark.datasource`` and need no pandas: loading it (half a CPU-second,
    a third of their imports) waits for code that converts to or from pandas."""
    child = "import sys\nimport hudi_sync.spark.datasource\nprint('pandas' in sys.modules)\n"
    loaded = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.split() == ["False"]
