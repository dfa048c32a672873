"""The package's layers, as the architecture page draws them, hold in its imports.

Every import counts: module level, inside functions and under ``TYPE_CHECKING`` alike, since
each is a dependency a reader has to follow. The walk is over the source files themselves
(``ast``), so a new module is checked without being listed here.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import hudi_sync

PACKAGE = Path(hudi_sync.__file__).parent

# Sub-packages of hudi_sync, lowest first; a module imports only its own layer and those
# before it. The foundation is every top-level module (errors, storage, config...).
PACKAGE_LAYERS = ["", "table", "manifest", "warehouse", "sync", "spark", "debezium", "cli"]

# The table core's rooms, lowest first. ``table`` is table.py (``HudiTable``), ``""`` the
# package's ``__init__`` that re-exports the public names.
TABLE_ROOMS = [
    "avro",
    "config",
    "keys",
    "records",
    "timeline",
    "files",
    "metadata_table",
    "table",
    "read",
    "cdc",
    "write",
    "",
]


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the hudi_sync modules it imports (a name imported from a package resolves
    to the submodule of that name when there is one, else to the package)."""

    def resolve(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.level == 0 and node.module.split(".")[0] == "hudi_sync":
                    for alias in node.names:
                        targets.add(resolve(f"{node.module}.{alias.name}"))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "hudi_sync":
                        targets.add(resolve(alias.name))
        graph[module] = targets - {module}
    return graph


GRAPH = _imports(_modules())


def _position(module: str, prefix: str, order: list[str]) -> int:
    """Where ``module`` (under ``prefix``) stands in ``order``: its first name part below
    the prefix, or ``""`` for the prefix itself and its top-level modules."""
    rest = module.removeprefix(prefix).lstrip(".")
    first = rest.split(".")[0] if "." in rest or rest in order else ""
    return order.index(first)


def test_no_relative_imports_escape_the_walk() -> None:
    relative = [
        f"{module}:{node.lineno}"
        for module, path in _modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level
    ]
    assert relative == []


def test_the_walk_sees_real_edges() -> None:
    """A guard for the checks below: a walk that found nothing would pass them all."""
    assert "hudi_sync.table.table" in GRAPH["hudi_sync.table.read.snapshot"]
    assert "hudi_sync.table.write.timeline" in GRAPH["hudi_sync.table.write.commit"]
    assert sum(len(targets) for targets in GRAPH.values()) > 500


def test_no_import_cycle_in_the_package() -> None:
    try:
        tuple(graphlib.TopologicalSorter(GRAPH).static_order())
    except graphlib.CycleError as cycle:
        raise AssertionError(f"import cycle: {' -> '.join(cycle.args[1])}") from None


def test_each_layer_imports_only_the_layers_below() -> None:
    upward = [
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _position(target, "hudi_sync", PACKAGE_LAYERS)
        > _position(module, "hudi_sync", PACKAGE_LAYERS)
    ]
    assert upward == []


def test_each_table_room_imports_only_the_rooms_before_it() -> None:
    """Above all, no read-side room imports ``table.write``."""
    core = "hudi_sync.table"
    upward = [
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if module.startswith(core + ".") or module == core
        for target in targets
        if target.startswith(core + ".")
        and _position(target, core, TABLE_ROOMS) > _position(module, core, TABLE_ROOMS)
    ]
    assert upward == []


def test_every_table_module_is_in_a_room() -> None:
    core = "hudi_sync.table."
    loose = [
        module
        for module in GRAPH
        if module.startswith(core) and module.removeprefix(core).split(".")[0] not in TABLE_ROOMS
    ]
    assert loose == []
