"""The warehouse layer's size limits: no module under hudi_sync/warehouse over 700 lines,
no class there over 350, measured on the source (lines of each file, each class's span
from its first decorator to its last line), so a target that grows past them is split
before it becomes one file again."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

WAREHOUSE = Path(__file__).resolve().parent.parent / "hudi_sync" / "warehouse"
MAX_MODULE_LINES = 700
MAX_CLASS_LINES = 350


def _modules() -> list[Path]:
    return sorted(WAREHOUSE.rglob("*.py"))


def class_spans(source: str) -> dict[str, int]:
    """Every class (nested ones too, by dotted name) and its length in lines."""
    spans: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                spans[name] = (child.end_lineno or child.lineno) - first + 1
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return spans


def test_the_warehouse_layer_is_measured() -> None:
    # Each target is a package: the measurement sees every one of its modules.
    packages = {p.parent.name for p in _modules() if p.name == "__init__.py"}
    assert {"common", "duckdb", "bigquery", "snowflake"} <= packages


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(WAREHOUSE)))
def test_no_module_or_class_is_too_long(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    lines = len(source.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path}: {lines} lines (at most {MAX_MODULE_LINES})"
    long = {n: s for n, s in class_spans(source).items() if s > MAX_CLASS_LINES}
    assert not long, f"{path}: classes over {MAX_CLASS_LINES} lines: {long}"


def test_class_spans_count_decorators_and_nested_classes() -> None:
    source = "@dataclass\nclass A:\n    x: int\n\n    class B:\n        y: int\n"
    assert class_spans(source) == {"A": 6, "A.B": 2}
