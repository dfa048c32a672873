"""Partition values of Hudi's timestamp-based key generator (TIMESTAMP, and CUSTOM's
``field:TIMESTAMP`` parts), by the rules of ``TimestampBasedAvroKeyGenerator`` and
``HoodieDateTimeParser`` (Hudi 0.14 to 1.1, which agree on them):

- a number is a time in the unit of ``hoodie.keygen.timebased.timestamp.type``
  (UNIX_TIMESTAMP: seconds, EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR: the unit of
  ``hoodie.keygen.timebased.timestamp.scalar.time.unit``), truncated toward zero to
  milliseconds as Java's ``TimeUnit.convert`` does (a fraction of a floating or decimal
  value dropped first, as ``longValue`` drops it; a date is its epoch day so, a
  timestamp its instant with Hudi's consistent logical timestamps); a string is parsed
  by the input date formats (DATE_STRING, MIXED), the first that reads it whole winning;
- the instant is printed with the output date format in the output zone; without
  one, a parsed string's zone (the input zone, else its offset) and otherwise UTC
  (Hudi takes the JVM's zone, UTC on the clusters it documents);
- ``hoodie.keygen.timebased.timezone``, when given, is both the input and the output zone;
- a null is the epoch plus 1 of the unit (a string type: that instant printed in the
  first input format, then parsed), never Hudi's default partition; a string that no
  input format reads, a string for a numeric type or a number for a string type, fails
  the write as Hudi's ``HoodieKeyGeneratorException`` does;
- url-encoding and hive-style apply to the printed value.

Patterns are Joda's (``DateTimeFormat``), compiled once by ``compile_pattern``: the
letters ``PRINTED`` print, ``PARSED`` parse; another letter is refused in one line
naming the option (Joda refuses the letters it lacks, e.g. ``X``; the ones refused
here it has: their text depends on a locale or on today's date, or their parse moves a
date). Unknown zone names are refused (Java's ``TimeZone`` falls back to GMT silently).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError

TIMESTAMP_TYPES = (
    "UNIX_TIMESTAMP",
    "DATE_STRING",
    "MIXED",
    "EPOCHMILLISECONDS",
    "EPOCHMICROSECONDS",
    "SCALAR",
)
_STRING_TYPES = ("DATE_STRING", "MIXED")
# Java TimeUnit names -> (numerator, denominator) of one unit in milliseconds.
_UNITS = {
    "NANOSECONDS": (1, 1_000_000),
    "MICROSECONDS": (1, 1_000),
    "MILLISECONDS": (1, 1),
    "SECONDS": (1_000, 1),
    "MINUTES": (60_000, 1),
    "HOURS": (3_600_000, 1),
    "DAYS": (86_400_000, 1),
}
_TYPE_UNITS = {
    "UNIX_TIMESTAMP": "SECONDS",
    "EPOCHMILLISECONDS": "MILLISECONDS",
    "EPOCHMICROSECONDS": "MICROSECONDS",
}
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

PRINTED = "GCyYxwMdDeEaKhHkmsSZ"
PARSED = "yYMdaKhHkmsSZ"
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
# Joda's most digits a lenient numeric field reads.
_MAX_DIGITS = {"M": 2, "d": 2, "H": 2, "h": 2, "K": 2, "k": 2, "m": 2, "s": 2}

Token = tuple[str, int] | str  # (letter, count), or literal text


def compile_pattern(pattern: str, option: str, parsing: bool) -> tuple[Token, ...]:
    """Joda pattern ``pattern`` as tokens; a letter this cannot print (or, ``parsing``,
    parse) is refused in one line naming ``option``."""
    tokens: list[Token] = []
    i = 0
    allowed = PARSED if parsing else PRINTED
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = i + 1
            text = []
            while True:
                if end >= len(pattern):
                    raise BadInputError(f"{option}={pattern}: an unclosed quote")
                if pattern[end] == "'":
                    if end + 1 < len(pattern) and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            tokens.append("".join(text) if end > i + 1 else "'")
            i = end + 1
        elif c.isascii() and c.isalpha():
            count = 1
            while i + count < len(pattern) and pattern[i + count] == c:
                count += 1
            if (
                c not in allowed
                or (parsing and c == "Z" and count > 2)
                or (parsing and c in "yY" and count == 2)
            ):
                shown = c * count
                raise BadInputError(
                    f"{option}={pattern}: pattern letters {shown!r} are not supported "
                    f"({'parsed' if parsing else 'printed'}: {', '.join(allowed)}"
                    f"{'; Z and ZZ only, and yyyy not yy' if parsing else ''})"
                )
            tokens.append((c, count))
            i += count
        else:
            tokens.append(c)
            i += 1
    return tuple(tokens)


# Java's old three-letter zone ids as Joda's ``DateTimeZone.forTimeZone`` converts them
# (``EST`` is New York's rules there, not a fixed -05:00 as in the IANA database).
_JODA_IDS = {
    "WET": "WET",
    "CET": "CET",
    "MET": "CET",
    "ECT": "CET",
    "EET": "EET",
    "MIT": "Pacific/Apia",
    "HST": "Pacific/Honolulu",
    "AST": "America/Anchorage",
    "PST": "America/Los_Angeles",
    "MST": "America/Denver",
    "PNT": "America/Phoenix",
    "CST": "America/Chicago",
    "EST": "America/New_York",
    "IET": "America/Indiana/Indianapolis",
    "PRT": "America/Puerto_Rico",
    "CNT": "America/St_Johns",
    "AGT": "America/Argentina/Buenos_Aires",
    "BET": "America/Sao_Paulo",
    "ART": "Africa/Cairo",
    "CAT": "Africa/Harare",
    "EAT": "Africa/Addis_Ababa",
    "NET": "Asia/Yerevan",
    "PLT": "Asia/Karachi",
    "IST": "Asia/Kolkata",
    "BST": "Asia/Dhaka",
    "VST": "Asia/Ho_Chi_Minh",
    "CTT": "Asia/Shanghai",
    "JST": "Asia/Tokyo",
    "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney",
    "SST": "Pacific/Guadalcanal",
    "NST": "Pacific/Auckland",
}


def zone_of(name: str, option: str) -> dt.tzinfo:
    """A zone as Joda takes Java's ``TimeZone.getTimeZone`` name: an IANA name, ``UTC``/
    ``GMT``, ``GMT+h[:mm]``, or an old three-letter id (``_JODA_IDS``); any other name
    is refused (Java would take it for GMT)."""
    text = _JODA_IDS.get(name.strip(), name.strip())
    if text.upper() in ("UTC", "GMT", "Z", "UT"):
        return dt.UTC
    fixed = re.fullmatch(r"(?:GMT|UTC)([+-])(\d{1,2})(?::?(\d{2}))?", text)
    if fixed:
        sign = -1 if fixed.group(1) == "-" else 1
        minutes = int(fixed.group(2)) * 60 + int(fixed.group(3) or 0)
        return dt.timezone(sign * dt.timedelta(minutes=minutes))
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInputError(
            f"{option}={name}: not a time zone (an IANA name such as America/New_York, UTC, "
            "or GMT+hh:mm)"
        ) from None


def _zone_id(zone: dt.tzinfo, instant: dt.datetime) -> str:
    if zone is dt.UTC:
        return "UTC"
    if isinstance(zone, ZoneInfo):
        return zone.key
    return _offset_text(instant.utcoffset() or dt.timedelta(), True)


def _offset_text(offset: dt.timedelta, colon: bool) -> str:
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    hours, minutes = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}{':' if colon else ''}{minutes:02d}"


def print_instant(tokens: Sequence[Token], millis: int, zone: dt.tzinfo, where: str) -> str:
    """The instant ``millis`` (since the epoch) in ``zone`` as Joda prints ``tokens``."""
    try:
        local = (_EPOCH + dt.timedelta(milliseconds=millis)).astimezone(zone)
    except OverflowError:
        raise BadInputError(
            f"{where}: {millis} ms since the epoch is outside years 1 to 9999"
        ) from None
    out = []
    for token in tokens:
        if isinstance(token, str):
            out.append(token)
            continue
        letter, count = token
        out.append(_printed(letter, count, local, zone))
    return "".join(out)


def _printed(letter: str, count: int, local: dt.datetime, zone: dt.tzinfo) -> str:
    def number(value: int) -> str:
        return f"{value:0{count}d}" if value >= 0 else f"-{-value:0{count}d}"

    if letter in "yY":
        return f"{local.year % 100:02d}" if count == 2 else number(local.year)
    if letter == "x" and count == 2:
        return f"{local.isocalendar().year % 100:02d}"
    numbers: dict[str, Callable[[], int]] = {
        "C": lambda: local.year // 100,
        "x": lambda: local.isocalendar().year,
        "w": lambda: local.isocalendar().week,
        "d": lambda: local.day,
        "D": lambda: local.timetuple().tm_yday,
        "e": lambda: local.isoweekday(),
        "K": lambda: local.hour % 12,
        "h": lambda: local.hour % 12 or 12,
        "H": lambda: local.hour,
        "k": lambda: local.hour or 24,
        "m": lambda: local.minute,
        "s": lambda: local.second,
    }
    if letter in numbers:
        return number(numbers[letter]())
    if letter == "M":
        if count >= 3:
            name = _MONTHS[local.month - 1]
            return name if count >= 4 else name[:3]
        return number(local.month)
    if letter == "E":
        name = _DAYS[local.weekday()]
        return name if count >= 4 else name[:3]
    if letter == "a":
        return "AM" if local.hour < 12 else "PM"
    if letter == "G":
        return "AD"
    if letter == "S":
        return f"{local.microsecond // 1000:03d}"[:count].ljust(count, "0")
    # Z: an offset without (Z) or with (ZZ) a colon, or the zone's id (ZZZ).
    offset = local.utcoffset() or dt.timedelta()
    if count >= 3:
        return _zone_id(zone, local)
    return _offset_text(offset, count == 2)


@dataclass(frozen=True)
class _Parser:
    """One input format as a regular expression whose groups are its fields."""

    regex: re.Pattern[str]
    fields: tuple[tuple[str, int], ...]  # (letter, count) of each group


def _parser(tokens: Sequence[Token]) -> _Parser:
    parts = []
    fields = []
    for index, token in enumerate(tokens):
        if isinstance(token, str):
            parts.append(re.escape(token))
            continue
        letter, count = token
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        # Joda's isNumericToken: a numeric field follows (MMM and longer are text)
        adjacent = isinstance(following, tuple) and (
            following[0] in "yYdHhKkmsS" or (following[0] == "M" and following[1] <= 2)
        )
        if letter in "yY":
            # Joda reads up to 9 digits, or exactly as many as the letters when a
            # number follows.
            parts.append(rf"([-+]?\d{{1,{count if adjacent else 9}}}+)")
        elif letter == "M" and count >= 3:
            names = "|".join([*_MONTHS, *(m[:3] for m in _MONTHS)])
            parts.append(rf"((?i:{names}))")
        elif letter == "a":
            parts.append(r"((?i:AM|PM))")
        elif letter == "S":
            parts.append(rf"(\d{{1,{count}}}+)")
        elif letter == "Z":
            parts.append(r"([Zz]|[-+]\d{2}(?::?\d{2})?)")
        else:
            parts.append(rf"(\d{{1,{_MAX_DIGITS[letter]}}}+)")
        fields.append(token)
    return _Parser(re.compile("".join(parts)), tuple(fields))


def _parsed_instant(
    parser: _Parser, text: str, zone: dt.tzinfo | None
) -> tuple[int, dt.tzinfo] | None:
    """``text`` read whole by ``parser``: its instant (ms) and the zone Joda gives the
    parsed date, or None (Joda's defaults for unsaid fields: 1970-01-01T00:00:00.000)."""
    match = parser.regex.fullmatch(text)
    if match is None:
        return None
    values = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
    half: int | None = None
    clock: tuple[str, int] | None = None
    offset: dt.tzinfo | None = None
    for (letter, count), group in zip(parser.fields, match.groups(), strict=True):
        if letter in "yY":
            values["y"] = int(group)
        elif letter == "M":
            values["M"] = (
                int(group)
                if count < 3
                else 1 + [m[:3].lower() for m in _MONTHS].index(group[:3].lower())
            )
        elif letter == "a":
            half = 0 if group.upper() == "AM" else 1
        elif letter in "hKk":
            clock = (letter, int(group))
        elif letter == "S":
            values["S"] = int(group.ljust(3, "0")[:3])
        elif letter == "Z":
            offset = dt.UTC if group in "Zz" else _fixed_offset(group)
        else:
            values[letter] = int(group)
    hour = values["H"]
    if clock is not None:
        letter, value = clock
        if letter == "k":
            if not 1 <= value <= 24:
                return None
            hour = value % 24
        else:
            if (letter == "h" and not 1 <= value <= 12) or (letter == "K" and value > 11):
                return None
            hour = value % 12 + 12 * (half or 0)
    # with H, a half-day marker changes nothing: Joda sets the hour of day last
    try:
        local = dt.datetime(
            values["y"],
            values["M"],
            values["d"],
            hour,
            values["m"],
            values["s"],
            values["S"] * 1000,
        )
    except ValueError:
        return None
    reading = offset or zone or dt.UTC
    instant = local.replace(tzinfo=reading)
    # A local time a zone skips (a DST gap) is no instant: Joda refuses it.
    if instant.astimezone(dt.UTC).astimezone(reading).replace(tzinfo=None) != local:
        return None
    delta = instant - _EPOCH
    millis = (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    # The parsed date's zone: the input zone when set (Joda's withZone), else the
    # string's offset (withOffsetParsed), else the default zone.
    return millis, zone or offset or dt.UTC


def _fixed_offset(text: str) -> dt.tzinfo:
    digits = text[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + int(digits[2:4] or 0)
    return dt.timezone((-1 if text[0] == "-" else 1) * dt.timedelta(minutes=minutes))


def to_millis(value: int, unit: str) -> int:
    """Java's ``MILLISECONDS.convert(value, unit)``: finer units truncated toward zero,
    coarser ones saturating at Long's bounds."""
    numerator, denominator = _UNITS[unit]
    if denominator > 1:
        quotient = abs(value) // denominator
        return -quotient if value < 0 else quotient
    return max(_LONG_MIN, min(_LONG_MAX, value * numerator))


@dataclass(frozen=True)
class TimestampPartition:
    """The timestamp key generator's settings, compiled."""

    timestamp_type: str
    unit: str | None  # the numeric types' unit
    input_formats: tuple[tuple[Token, ...], ...]
    parsers: tuple[_Parser, ...]  # the input formats as regular expressions
    output_format: tuple[Token, ...]
    input_zone: dt.tzinfo | None
    output_zone: dt.tzinfo | None
    # hoodie.keygen.timebased.* as given, stored in a new table's hoodie.properties
    settings: Mapping[str, str]
    # timestamp columns formatted as their instants (Hudi's consistent logical timestamps)
    logical_timestamps: bool = False

    @classmethod
    def from_options(cls, raw: Mapping[str, str]) -> TimestampPartition:
        """The settings ``raw`` states (a write's options over the table's properties);
        a type or output format unsaid is refused, as Hudi's key generator refuses it."""
        parser = str(cfg.KEYGEN_PARSER_CLASS.read(raw)).strip()
        if parser.rsplit(".", 1)[-1] != "HoodieDateTimeParser":
            raise BadInputError(
                f"{cfg.KEYGEN_PARSER_CLASS.key}={parser}: only Hudi's HoodieDateTimeParser "
                "rules are applied"
            )
        kind = cfg.KEYGEN_TIMESTAMP_TYPE.read(raw)
        if not kind:
            raise BadInputError(
                f"{cfg.KEYGEN_TIMESTAMP_TYPE.key} is required by the TIMESTAMP key generator "
                f"(one of {', '.join(TIMESTAMP_TYPES)})"
            )
        kind = kind.strip()
        if kind not in TIMESTAMP_TYPES:
            raise BadInputError(
                f"{cfg.KEYGEN_TIMESTAMP_TYPE.key}={kind}: one of {', '.join(TIMESTAMP_TYPES)}"
            )
        unit: str | None = _TYPE_UNITS.get(kind)
        if kind == "SCALAR":
            unit = str(cfg.KEYGEN_SCALAR_UNIT.read(raw)).strip().upper()
            if unit not in _UNITS:
                raise BadInputError(
                    f"{cfg.KEYGEN_SCALAR_UNIT.key}={unit}: one of {', '.join(_UNITS)}"
                )
        output = cfg.KEYGEN_OUTPUT_FORMAT.read(raw)
        if not output:
            raise BadInputError(
                f"{cfg.KEYGEN_OUTPUT_FORMAT.key} is required by the TIMESTAMP key generator"
            )
        inputs: tuple[tuple[Token, ...], ...] = ()
        if kind in _STRING_TYPES:
            listed = cfg.KEYGEN_INPUT_FORMAT.read(raw) or ""
            delimiter = (cfg.KEYGEN_INPUT_FORMAT_DELIMITER.read(raw) or ",").strip() or ","
            patterns = [p.strip() for p in re.split(delimiter, listed)] if listed else []
            if not patterns:
                raise BadInputError(
                    f"{cfg.KEYGEN_INPUT_FORMAT.key} is required by timestamp type {kind}"
                )
            key = cfg.KEYGEN_INPUT_FORMAT.key
            inputs = tuple(compile_pattern(p, key, parsing=True) for p in patterns)
        both = cfg.KEYGEN_TIMEZONE.text(raw) if cfg.KEYGEN_TIMEZONE.given(raw) else None
        if both is not None:
            in_name, out_name = both, both
            in_key = out_key = cfg.KEYGEN_TIMEZONE.key
        else:
            in_name = cfg.KEYGEN_INPUT_TIMEZONE.text(raw) or ""
            out_name = cfg.KEYGEN_OUTPUT_TIMEZONE.text(raw) or ""
            in_key, out_key = cfg.KEYGEN_INPUT_TIMEZONE.key, cfg.KEYGEN_OUTPUT_TIMEZONE.key
        settings = {spec.key: str(spec.text(raw)) for spec in KEYGEN_OPTIONS if spec.given(raw)}
        return cls(
            timestamp_type=kind,
            unit=unit,
            input_formats=inputs,
            parsers=tuple(_parser(tokens) for tokens in inputs),
            output_format=compile_pattern(output, cfg.KEYGEN_OUTPUT_FORMAT.key, parsing=False),
            input_zone=zone_of(str(in_name), in_key) if str(in_name).strip() else None,
            output_zone=zone_of(str(out_name), out_key) if str(out_name).strip() else None,
            settings=settings,
            logical_timestamps=cfg.KEYGEN_LOGICAL_TIMESTAMPS.read(raw),
        )

    def value(self, value: Any, where: str) -> str:
        """The partition value of one field value (before url-encoding and hive-style)."""
        if value is None:
            value = self._default()
        if isinstance(value, str):
            if self.timestamp_type not in _STRING_TYPES:
                raise BadInputError(
                    f"{where}: a string ({value!r}) for timestamp type {self.timestamp_type} "
                    f"({cfg.KEYGEN_TIMESTAMP_TYPE.key}); DATE_STRING and MIXED take strings"
                )
            for parser in self.parsers:
                parsed = _parsed_instant(parser, value, self.input_zone)
                if parsed is not None:
                    millis, zone = parsed
                    return print_instant(
                        self.output_format, millis, self.output_zone or zone, where
                    )
            raise BadInputError(
                f"{where}: {value!r} is not a date in {cfg.KEYGEN_INPUT_FORMAT.key} "
                "(Hudi's key generator fails the write on it)"
            )
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise BadInputError(
                f"{where}: a {type(value).__name__} value: the TIMESTAMP key generator takes "
                "numbers and strings"
            )
        if self.unit is None:
            raise BadInputError(
                f"{where}: a number ({value}) for timestamp type {self.timestamp_type} "
                f"({cfg.KEYGEN_TIMESTAMP_TYPE.key}), which takes strings"
            )
        if isinstance(value, float) and value != value:
            whole = 0  # Java's NaN longValue
        else:
            try:
                whole = max(_LONG_MIN, min(_LONG_MAX, int(value)))
            except (OverflowError, InvalidOperation):
                whole = _LONG_MAX if value > 0 else _LONG_MIN
        millis = to_millis(whole, self.unit)
        return print_instant(self.output_format, millis, self.output_zone or dt.UTC, where)

    def _default(self) -> Any:
        """Hudi's stand-in for a null: 1 (of the unit), or for the string types that
        instant printed in the first input format."""
        if self.timestamp_type not in _STRING_TYPES:
            return 1
        zone = self.input_zone or self.output_zone or dt.UTC
        return print_instant(self.input_formats[0], 1, zone, "the default value")

    def values(
        self, column: pa.Array | pa.ChunkedArray, where: str, numeric_text: bool
    ) -> pa.Array:
        """Each row's partition value, computed once per distinct value. ``numeric_text``:
        the column holds numbers as text (how Spark hands integers and decimals over
        exactly)."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        kind = column.type
        if pa.types.is_date(kind):
            # Hudi's LocalDate: its epoch day, a number in the type's unit
            column = column.cast(pa.date32()).cast(pa.int32())
        elif pa.types.is_timestamp(kind):
            return self._timestamps(column, where)
        elif not (
            pa.types.is_integer(kind)
            or pa.types.is_floating(kind)
            or pa.types.is_decimal(kind)
            or pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_null(kind)
        ):
            raise BadInputError(
                f"{where}: a {kind} column: the TIMESTAMP key generator takes integer, "
                "floating, decimal, date, timestamp and string columns"
            )
        distinct = pc.unique(column)
        texts = []
        for item in distinct.to_pylist():
            if numeric_text and item is not None:
                try:
                    item = int(Decimal(item))
                except (InvalidOperation, ValueError):
                    raise BadInputError(f"{where}: {item!r} is not a number") from None
            texts.append(self.value(item, where))
        return pc.take(pa.array(texts, pa.string()), pc.index_in(column, distinct))

    def _timestamps(self, column: pa.Array, where: str) -> pa.Array:
        """A timestamp column as Hudi's Spark writer formats it: only with
        ``hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled``,
        as the instant's milliseconds (``java.sql.Timestamp.getTime`` of the value's
        microseconds divided by 1000), whatever the timestamp type; a null is the type's
        default value."""
        if not self.logical_timestamps:
            raise BadInputError(
                f"{where}: a {column.type} column: Hudi's writer formats timestamp columns "
                f"only with {cfg.KEYGEN_LOGICAL_TIMESTAMPS.key}=true"
            )
        micros = pc.cast(column, pa.timestamp("us", column.type.tz), safe=False).cast(pa.int64())
        distinct = pc.unique(micros)
        texts = []
        for item in distinct.to_pylist():
            if item is None:
                texts.append(self.value(None, where))
                continue
            millis = -(-item // 1000) if item < 0 else item // 1000  # toward zero, as Java
            zone = self.output_zone or dt.UTC
            texts.append(print_instant(self.output_format, millis, zone, where))
        return pc.take(pa.array(texts, pa.string()), pc.index_in(micros, distinct))


# The options ``hoodie.properties`` keeps (Hudi's HoodieTableConfig.PERSISTED_CONFIG_LIST).
def _keygen_options() -> tuple[cfg.OptionSpec[Any], ...]:
    return (
        cfg.KEYGEN_TIMESTAMP_TYPE,
        cfg.KEYGEN_SCALAR_UNIT,
        cfg.KEYGEN_INPUT_FORMAT_DELIMITER,
        cfg.KEYGEN_INPUT_FORMAT,
        cfg.KEYGEN_INPUT_TIMEZONE,
        cfg.KEYGEN_OUTPUT_FORMAT,
        cfg.KEYGEN_OUTPUT_TIMEZONE,
        cfg.KEYGEN_TIMEZONE,
        cfg.KEYGEN_PARSER_CLASS,
    )


KEYGEN_OPTIONS = _keygen_options()
