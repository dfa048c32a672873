"""MkDocs hooks (``hooks:`` in mkdocs.yml): reference pages generated at build time.

A page that holds one of the markers below gets it replaced, on every build, by:

- ``<!-- generated: cli-reference -->``: the ``--help`` of every command of the typer app
  ``hudi_sync.cli.app.app``, walked through its Click command tree, so the page is what
  ``hudi-sync ... --help`` prints and cannot drift from the code;
- ``<!-- generated: options-reference -->``: every option declared in
  ``hudi_sync.config.OPTIONS`` (``OptionSpec``: key, alternates, default, kind, choices,
  versions, doc, group; ``minimum`` too when declared), one table per group, groups and
  options in declaration order;
- ``<!-- generated: module-map -->``: every module of ``hudi_sync`` with the first paragraph
  of its docstring (read from the source, nothing imported), so the layout page follows
  the tree as modules are added, moved or split.

The build fails (PluginError) when a generator cannot run (``hudi_sync.config`` missing,
``OPTIONS`` empty or of another shape) or when a marker is on no page, rather than
publishing an empty or stale reference.
"""

from __future__ import annotations

import ast
import enum
import importlib
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

CLI_MARKER = "<!-- generated: cli-reference -->"
OPTIONS_MARKER = "<!-- generated: options-reference -->"
MODULES_MARKER = "<!-- generated: module-map -->"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / "hudi_sync"
OPTION_FIELDS = ("key", "alternates", "default", "kind", "choices", "versions", "doc", "group")
HELP_WIDTH = 100
PROGRAM = "hudi-sync"

_rendered: set[str] = set()


# --- CLI reference --------------------------------------------------------------------


def _subcommands(command: Any, ctx: Any) -> list[tuple[str, Any]]:
    """A group's visible subcommands in its own order (duck-typed: typer ships its own
    copy of Click, so ``isinstance(..., click.Group)`` would not hold)."""
    if not hasattr(command, "list_commands"):
        return []
    found = []
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is not None and not getattr(sub, "hidden", False):
            found.append((name, sub))
    return found


def _walk(command: Any, name: str, parent: Any) -> Iterator[tuple[Any, Any]]:
    ctx = command.context_class(
        command,
        info_name=name,
        parent=parent,
        terminal_width=HELP_WIDTH,
        max_content_width=HELP_WIDTH,
    )
    yield command, ctx
    for sub_name, sub in _subcommands(command, ctx):
        yield from _walk(sub, sub_name, ctx)


def render_cli() -> str:
    try:
        import typer.main

        from hudi_sync.cli.app import app
    except Exception as error:
        raise PluginError(f"CLI reference: cannot import hudi_sync.cli.app: {error!r}") from error
    root = typer.main.get_command(app)
    lines = []
    commands = 0
    for command, ctx in _walk(root, PROGRAM, None):
        path = ctx.command_path
        depth = min(path.count(" ") + 2, 4)  # hudi-sync: ##, hudi-sync sync: ###, deeper: ####
        help_text = command.get_help(ctx).rstrip()
        lines += [f"{'#' * depth} `{path}`", "", "```text", help_text, "```", ""]
        commands += 1
    if commands < 2:
        raise PluginError(f"CLI reference: the typer app has {commands} command(s)")
    return "\n".join(lines)


# --- options reference ----------------------------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _prose(text: str) -> str:
    """Docstring text as Markdown: Sphinx roles (``:class:`X` ``) become code spans."""
    return re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)


def _plain(text: str) -> str:
    """Text outside code spans: ``<x>`` shown, not taken for HTML; pipes not cell breaks."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def _cell(text: str) -> str:
    """One table cell: a single line, escaped outside code spans only (Python-Markdown's
    tables keep a code span's pipes, and would show a backslash there)."""
    parts = re.split(r"(`+ .*? `+|`[^`]*`)", " ".join(text.split()))
    return "".join(part if part.startswith("`") else _plain(part) for part in parts)


def _code(value: Any) -> str:
    text = _text(value)
    if text == "":
        return '`""`'
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _many(values: Any) -> list[Any]:
    if values is None:
        return []
    if isinstance(values, (str, bytes, enum.Enum)) or not isinstance(values, Iterable):
        return [values]
    return list(values)


def _option_row(spec: Any) -> str:
    key = _code(spec.key)
    alternates = _many(spec.alternates)
    if alternates:
        key += "<br>also " + ", ".join(_code(name) for name in alternates)
    if spec.default is None:
        default = "—"  # no default
    elif isinstance(spec.default, (tuple, list)):
        default = ", ".join(_code(item) for item in spec.default) or "—"
    else:
        default = _code(spec.default)
    kind = _text(spec.kind) if spec.kind is not None else ""
    choices = _many(spec.choices)
    if choices:
        kind = (kind + ": " if kind else "") + ", ".join(_code(choice) for choice in choices)
    minimum = getattr(spec, "minimum", None)  # optional field: the smallest accepted number
    if minimum is not None:
        kind += f", ≥ {_text(minimum)}"
    versions = _many(spec.versions)  # () means every table version
    versions_text = ", ".join(_text(version) for version in versions) if versions else "all"
    doc = _prose(_text(spec.doc)) if spec.doc is not None else ""
    cells = (key, default, kind or "—", versions_text, doc)
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _load_options() -> tuple[Any, ...]:
    try:
        config = importlib.import_module("hudi_sync.config")
    except ModuleNotFoundError as error:
        if error.name not in ("hudi_sync.config", "hudi_sync"):
            raise PluginError(
                f"options reference: hudi_sync.config failed to import: {error!r}"
            ) from error
        raise PluginError(
            "options reference: hudi_sync.config is missing; the options page is generated "
            "from hudi_sync.config.OPTIONS (a tuple of OptionSpec) and is not built without it"
        ) from error
    except Exception as error:
        raise PluginError(
            f"options reference: hudi_sync.config failed to import: {error!r}"
        ) from error
    options = getattr(config, "OPTIONS", None)
    if options is None:
        raise PluginError("options reference: hudi_sync.config has no OPTIONS")
    options = tuple(options)
    if not options:
        raise PluginError("options reference: hudi_sync.config.OPTIONS is empty")
    for spec in options:
        missing = [name for name in OPTION_FIELDS if not hasattr(spec, name)]
        if missing:
            raise PluginError(
                f"options reference: {spec!r} lacks the OptionSpec field(s) {', '.join(missing)}"
            )
    keys = [spec.key for spec in options]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise PluginError(f"options reference: keys declared twice: {', '.join(duplicates)}")
    return options


def render_options() -> str:
    options = _load_options()
    groups: dict[str, list[Any]] = {}
    for spec in options:
        groups.setdefault(_text(spec.group) or "Other", []).append(spec)
    lines = [
        f"{len(options)} options in {len(groups)} groups, generated from "
        "`hudi_sync.config.OPTIONS`.",
        "",
    ]
    for group, specs in groups.items():
        lines += [
            f"## {group}",
            "",
            "| option | default | type / values | table versions | meaning |",
            "|---|---|---|---|---|",
            *(_option_row(spec) for spec in specs),
            "",
        ]
    return "\n".join(lines)


# --- module map -----------------------------------------------------------------------


def _summary(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not docstring:
        return "*(no module docstring)*"
    first = docstring.strip().split("\n\n")[0]  # the first paragraph
    return _prose(first)


def render_modules() -> str:
    if not PACKAGE_DIR.is_dir():
        raise PluginError(f"module map: no package at {PACKAGE_DIR}")
    lines = ["| module | what it is |", "|---|---|"]
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = path.relative_to(PACKAGE_DIR.parent)
        if any(part.startswith((".", "_")) and part != "__init__.py" for part in relative.parts):
            continue
        if path.name == "__init__.py":
            shown = f"{relative.parent.as_posix()}/"
        else:
            shown = relative.as_posix()
        lines.append(f"| `{shown}` | {_cell(_summary(path))} |")
    return "\n".join(lines)


# --- MkDocs events --------------------------------------------------------------------

GENERATORS: dict[str, Callable[[], str]] = {
    CLI_MARKER: render_cli,
    OPTIONS_MARKER: render_options,
    MODULES_MARKER: render_modules,
}


def on_pre_build(config: Any) -> None:
    _rendered.clear()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for marker, render in GENERATORS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
            _rendered.add(marker)
    return markdown


def on_post_build(config: Any) -> None:
    unused = [marker for marker in GENERATORS if marker not in _rendered]
    if unused:
        raise PluginError(f"generated reference markers on no page: {', '.join(unused)}")
