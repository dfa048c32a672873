"""Partition values as folder names: Hudi's ``hoodie.datasource.write.partitionpath.urlencode``.

With it, each partition value is escaped as Hudi's ``PartitionPathEncodeUtils``
escapes path names (Hive's rule): the control characters U+0000-U+001F and U+007F and
``"#%'*/:=?\\{[]^`` become ``%XX`` (upper-case hex), everything else stays. Without
it, values are used as they are, and one holding a control character is refused: such
a folder name would break every line-based manifest (``hudi_sync.manifest.safe_paths``).
"""

from __future__ import annotations

import re

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import contained_partition

# ``%`` first: the escapes the others become must not be escaped again.
ESCAPED = "%" + "".join(chr(c) for c in range(0x20)) + "\"#'*/:=?\\\x7f{[]^"
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# RE2 (Spark's Java regex and Arrow read it too) spelling of ``CONTROL``.
CONTROL_PATTERN = r"[\x00-\x1f\x7f]"


def escape(character: str) -> str:
    """``%XX`` of one escaped character."""
    return f"%{ord(character):02X}"


def escape_value(value: str) -> str:
    """A partition value as Hudi writes it with url-encoding on."""
    return "".join(escape(c) if c in ESCAPED else c for c in value)


def partition_refusal(partition: str, table: str, url_encoded: bool, option: str) -> str | None:
    """Why a write of rows into ``partition`` (a path built from the rows' values) is
    refused, or None: a path that would leave the table (a value ``..``, or ``a/../..``
    of a slash-separated value; url-encoding escapes ``/`` but not ``.``) is never
    written, and one holding a control character only url-encoded."""
    if partition:
        try:
            contained_partition(partition, table)
        except CorruptTableError:
            return (
                f"{table}: partition path {partition!r} would leave the table (a '.', '..' "
                "or empty segment): no partition value may name a folder outside it"
            )
    if not url_encoded and CONTROL.search(partition):
        return control_character_refusal(partition, table, option)
    return None


def control_character_refusal(partition: str, table: str, option: str) -> str:
    """Why a write of rows into ``partition`` is refused."""
    return (
        f"{table}: partition path {partition!r} holds a control character, which would "
        f"make a folder no manifest can list; set {option}=true to escape it as Hudi does"
    )
