"""Which paths a manifest can list: the one check every manifest line passes before
any manifest file is written.

Manifests are line files read as CSV by every target (DuckDB's ``read_csv``, BigQuery
CSV and manifest-file external tables, Snowflake CSV external tables). A value holding
a line break would add a row, so a folder named ``10/<an old file's name>\\n10`` would
list a superseded file; a tab, the one-column tables' field delimiter, would cut a row.
Percent-encoding the lines instead would not do: the views compare the lines with
``_hoodie_file_name`` byte for byte, and a BigQuery manifest-file table reads its URIs
as they are. So:

- a partition path or file name with a control character (U+0000-U+001F, U+007F) is
  refused, naming it. Hudi's ``hoodie.datasource.write.partitionpath.urlencode`` escapes
  exactly these (with ``%XX``), so an encoded table never holds one;
- a base file name with a comma or a double quote is refused too: Hudi's names are
  ``<fileId>_<writeToken>_<instant>.<ext>`` with a UUID-like file id, and the delta
  manifests' ``<group>,<name>`` rows take the name as their last, unquoted field.

A comma or quote in a partition folder is fine: full lists have no delimiter to cut
(the one-column tables read whole lines), and delta rows quote their first field.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync.config import URL_ENCODE_PARTITIONS
from hudi_sync.errors import CorruptTableError, UnsupportedTableError

# RE2 (Arrow) and Python spellings of one character class.
_CONTROL_RE2 = r"[\x00-\x1f\x7f]"
_CONTROL = re.compile(_CONTROL_RE2)
_NAME_SPECIAL_RE2 = r'[,"][^/]*$'  # a comma or quote after a path's last "/"
_NAME_SPECIAL = re.compile(r'[,"]')


def check_path(partition: str, name: str, table: str) -> None:
    """Refuse a partition path or file name a manifest line cannot carry (one line,
    naming it)."""
    if _CONTROL.search(partition):
        raise _partition_refusal(partition, table)
    if _CONTROL.search(name) or _NAME_SPECIAL.search(name):
        raise _name_refusal(partition, name, table)


def check_paths(paths: pa.Array, table: str) -> None:
    """``check_path`` of relative paths (``<partition>/<file name>``), vectorised: a
    manifest of a million files is checked without a Python string per file."""
    bad = pc.or_(
        pc.match_substring_regex(paths, _CONTROL_RE2),
        pc.match_substring_regex(paths, _NAME_SPECIAL_RE2),
    )
    if not pc.any(bad).as_py():
        return
    first = str(paths.filter(bad)[0].as_py())
    partition, _, name = first.rpartition("/")
    check_path(partition, name, table)
    raise AssertionError(f"unchecked path {first!r}")  # pragma: no cover


def _partition_refusal(partition: str, table: str) -> UnsupportedTableError:
    return UnsupportedTableError(
        f"{table}: partition folder {partition!r} holds a control character, which no "
        f"manifest line can carry; write such values with {URL_ENCODE_PARTITIONS.key}=true"
    )


def _name_refusal(partition: str, name: str, table: str) -> CorruptTableError:
    where = f"{partition}/{name}" if partition else name
    return CorruptTableError(
        f"{table}: base file {where!r} is not a Hudi file name "
        "(a control character, comma or quote): no manifest lists it"
    )
