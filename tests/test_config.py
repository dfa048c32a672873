"""``hudi_sync.config``: every option declared once, read by one strict set of parsers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from hudi_sync import config as cfg
from hudi_sync.config import OPTIONS, OptionSpec, option
from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.table.config.properties import TableConfig

PACKAGE = Path(cfg.__file__).parent
# A bad value of each kind that can be bad (any text is a string or a list).
BAD = {"boolean": "yes", "integer": "1.5", "number": "often", "choice": "none-of-these"}


def _ids(spec: OptionSpec[Any]) -> str:
    return spec.key


def _as_text(value: object) -> str:
    """A value as an option's text, the way a properties file or --conf would give it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def test_declarations_are_well_formed() -> None:
    assert len(OPTIONS) > 100
    for spec in OPTIONS:
        assert spec.kind in cfg.KINDS, spec
        assert spec.doc and "\n" not in spec.doc, spec
        assert spec.group, spec
        assert (spec.kind == "choice") == bool(spec.choices), spec
        assert spec.minimum is None or spec.kind in ("integer", "number"), spec
        assert option(spec.key) is spec


def test_no_two_specs_share_a_key_or_an_alternate() -> None:
    names = [name for spec in OPTIONS for name in spec.names]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    with pytest.raises(KeyError, match="not a declared option"):
        option("hoodie.no.such.option")


@pytest.mark.parametrize("spec", OPTIONS, ids=_ids)
def test_every_key_parses_its_default(spec: OptionSpec[Any]) -> None:
    absent = spec.read({})
    assert absent == (() if spec.kind == "list" else spec.default)
    if spec.default is not None:
        assert spec.read({spec.key: _as_text(spec.default)}) == absent
    assert spec.read({spec.key: None}) == absent  # None is not given


@pytest.mark.parametrize("spec", [s for s in OPTIONS if s.kind in BAD], ids=_ids)
def test_a_bad_value_is_one_line_naming_the_key(spec: OptionSpec[Any]) -> None:
    for bad in (BAD[spec.kind], "", "  "):  # a blank boolean, number or choice is refused
        with pytest.raises(BadInputError) as caught:
            spec.read({spec.key: bad})
        message = str(caught.value)
        assert len(message.splitlines()) == 1, message
        assert message.startswith(f"{spec.key}="), message
        assert repr(bad.strip().lower() if spec.kind == "choice" else bad) in message


@pytest.mark.parametrize("spec", [s for s in OPTIONS if s.minimum is not None], ids=_ids)
def test_a_value_below_the_minimum_is_refused(spec: OptionSpec[Any]) -> None:
    assert spec.minimum is not None
    assert spec.read({spec.key: str(spec.minimum)}) == spec.minimum
    with pytest.raises(BadInputError, match=rf"^{re.escape(spec.key)}=-?\d.* must be at least"):
        spec.read({spec.key: str(spec.minimum - 1)})


def test_values_of_each_kind() -> None:
    assert cfg.AUTO_CLEAN.read({cfg.AUTO_CLEAN.key: " FALSE "}) is False
    assert cfg.AUTO_CLEAN.read({cfg.AUTO_CLEAN.key: True}) is True  # a CLI flag's bool
    for lenient in ("1", "yes", "on", "t"):  # once read as false (or true) somewhere
        with pytest.raises(BadInputError, match="is not true or false"):
            cfg.AUTO_CLEAN.read({cfg.AUTO_CLEAN.key: lenient})
    assert cfg.MAX_FILE_SIZE.read({cfg.MAX_FILE_SIZE.key: " 42 "}) == 42
    assert cfg.DELTA_COMMITS.read({cfg.DELTA_COMMITS.key: 3}) == 3  # a CLI flag's int
    with pytest.raises(BadInputError, match="is not a whole number"):
        cfg.DELTA_COMMITS.read({cfg.DELTA_COMMITS.key: True})
    threshold = cfg.RECORD_SIZE_THRESHOLD
    assert threshold.read({threshold.key: "0.5"}) == 0.5
    with pytest.raises(BadInputError, match="is not a number"):
        threshold.read({threshold.key: "nan"})
    assert cfg.OPERATION.read({cfg.OPERATION.key: " Insert_Overwrite "}) == "insert_overwrite"
    assert cfg.RECORD_KEY.read({cfg.RECORD_KEY.key: " a, ,b "}) == ("a", "b")
    assert cfg.RECORD_KEY.read({cfg.RECORD_KEY.key: ["a", " b"]}) == ("a", "b")
    assert cfg.ORDERING.read({cfg.ORDERING.key: "  ts "}) == "ts"
    assert cfg.ORDERING.read({cfg.ORDERING.key: "  "}) is None  # blank text is unset
    assert cfg.DELETE_MARKER.text({cfg.DELETE_MARKER.key: " d "}) == " d "  # data: as given
    assert cfg.CDC_MODE.text({}) == "DATA_BEFORE_AFTER"


@pytest.mark.parametrize("spec", [s for s in OPTIONS if s.alternates], ids=_ids)
def test_alternates_are_honoured(spec: OptionSpec[Any]) -> None:
    value = {"integer": "7", "choice": (spec.choices or ("",))[-1]}.get(spec.kind, "x,y")
    expected = spec.read({spec.key: value})
    for alternate in spec.alternates:
        assert spec.read({alternate: value}) == expected
        # The key wins over an alternate, and a blank spelling gives way to a given one.
        assert spec.read({alternate: value, spec.key: _as_text(expected)}) == expected
        assert spec.read({spec.key: " ", alternate: value}) == expected
        if spec.kind in BAD:  # an error names the spelling the user gave
            with pytest.raises(BadInputError, match=rf"^{re.escape(alternate)}="):
                spec.read({alternate: BAD[spec.kind]})
    assert cfg.option(spec.alternates[0]) is spec


def test_streamer_options_accept_the_older_deltastreamer_names() -> None:
    from hudi_sync.debezium.ingest import IngestConfig

    old = {
        "hoodie.deltastreamer.source.kafka.topic": "a,b",
        "hoodie.deltastreamer.kafka.source.maxEvents": "7",
        "hoodie.deltastreamer.debezium.on.error": "SKIP",
    }
    config = IngestConfig.from_options("/tmp/t", old)
    assert (config.kafka.topics, config.max_events, config.on_error) == (("a", "b"), 7, "skip")
    flag = IngestConfig.from_options("/tmp/t", old, max_events=3)  # the CLI's flag wins
    assert flag.max_events == 3


def test_table_properties_are_read_strictly() -> None:
    props = {
        cfg.TABLE_NAME.key: "t",
        cfg.TABLE_VERSION_PROPERTY.key: "6",
        cfg.POPULATE_META_FIELDS.key: "no",  # once silently read as false
    }
    with pytest.raises(CorruptTableError) as caught:
        TableConfig.from_mapping(props, "t/.hoodie/hoodie.properties")
    assert str(caught.value) == (
        "t/.hoodie/hoodie.properties: hoodie.populate.meta.fields='no' is not true or false"
    )
    props[cfg.POPULATE_META_FIELDS.key] = "FALSE"
    props[cfg.PRECOMBINE_FIELD.key] = "ts"
    config = TableConfig.from_mapping(props, "t")
    assert (config.populate_meta_fields, config.ordering_fields) == (False, ("ts",))


def test_target_option_keys_are_the_declared_ones() -> None:
    from hudi_sync.warehouse.bigquery import config as bigquery_target
    from hudi_sync.warehouse.snowflake import config as snowflake_target

    declared = {s.key.removeprefix(cfg.SNOWFLAKE_PREFIX) for s in cfg.group("sync/snowflake")}
    roles = {
        *snowflake_target.CONNECTION_KEYS,
        *snowflake_target._STAGE_KEYS,
        *snowflake_target.ICEBERG_KEYS,
        "table_name",
    }
    assert snowflake_target.OPTION_KEYS == declared == roles
    assert bigquery_target.API_ENDPOINT not in bigquery_target._OPTION_KEYS
    assert {s.key for s in cfg.group("sync/bigquery")} == {
        *bigquery_target._OPTION_KEYS,
        bigquery_target.API_ENDPOINT,
    }


def test_sync_commands_share_one_declaration_of_their_common_options() -> None:
    from dataclasses import fields

    from hudi_sync.cli.app import app
    from hudi_sync.cli.sync import SyncRun

    shared = [f.name for f in fields(SyncRun)]
    group = typer.main.get_command(app).commands["sync"]  # type: ignore[attr-defined]
    for name in ("duckdb", "bigquery", "snowflake"):
        params = [p.name for p in group.commands[name].params]
        assert params[-len(shared) :] == shared, name


def test_no_hoodie_option_literal_outside_config() -> None:
    """Option keys are declared in hudi_sync.config and used by name everywhere else."""
    # A key literal: "hoodie." then a name (an f-string's "hoodie.{name}" namespace is none).
    literal = re.compile(r"""["']hoodie\.[a-z]""")
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == "config.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if literal.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "declare these in hudi_sync/config.py:\n" + "\n".join(found)
