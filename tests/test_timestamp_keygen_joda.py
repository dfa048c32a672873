"""The timestamp key generator's patterns and zones against Joda-Time itself.

Hudi's ``TimestampBasedAvroKeyGenerator`` prints with Joda's ``DateTimeFormat`` and reads
with the formatter ``HoodieDateTimeParser`` builds (its input patterns' parsers appended
as alternatives, the input zone or the parsed offset). Spark's JVM carries Joda, so the
generated cases here are checked against the library Hudi calls: printing instants
around DST changes, leap days, the epoch and before it, in named, fixed and Java's old
three-letter zones; reading strings Joda printed, and strings Joda refuses.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.table.keys.timestamp_keygen import (
    TimestampPartition,
    compile_pattern,
    print_instant,
    to_millis,
    zone_of,
)

P = "hoodie.keygen.timebased."
PRINTED = [
    "yyyy/MM/dd",
    "yyyy-MM-dd HH:mm:ss.SSS",
    "yyyyMMddHH",
    "yy-M-d H:m:s",
    "EEE, dd MMM yyyy hh:mm a",
    "EEEE MMMM DDD ww xxxx e",
    "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
    "ZZ ZZZ",
    "G C k K S SS SSSSSS",
    "'it''s' yyyy 'at' HH",
]
ZONES = [
    "UTC",
    "America/New_York",
    "Asia/Kolkata",
    "GMT+8:00",
    "GMT-03:30",
    "EST",
    "PST",
    "Australia/Lord_Howe",
    "Europe/London",
]
_DAY = 86_400_000
SPECIAL = [
    0,
    -1,
    1,
    -_DAY - 1,
    1_710_053_999_999,  # New York, just before the spring change
    1_710_054_000_000,
    1_730_611_800_000,  # 01:30 EDT, then 01:30 EST an hour later
    1_730_615_400_000,
    1_709_164_800_000,  # 2024-02-29
    951_782_400_000,  # 2000-02-29
    -2_208_988_800_000,  # 1900-01-01
]


@pytest.fixture(scope="module")
def joda(spark):  # type: ignore[no-untyped-def]
    return spark.sparkContext._jvm


def _zone(jvm: Any, name: str) -> Any:
    return jvm.org.joda.time.DateTimeZone.forTimeZone(jvm.java.util.TimeZone.getTimeZone(name))


def test_printing_matches_joda(joda: Any) -> None:
    draw = random.Random(20240229)
    instants = SPECIAL + [draw.randint(-2_208_988_800_000, 4_102_444_800_000) for _ in range(40)]
    checked = 0
    for pattern in PRINTED:
        tokens = compile_pattern(pattern, "p", parsing=False)
        formatter = joda.org.joda.time.format.DateTimeFormat.forPattern(pattern)
        for name in ZONES:
            zone, jzone = zone_of(name, "z"), _zone(joda, name)
            for millis in instants:
                expected = formatter.withZone(jzone).print(millis)
                assert print_instant(tokens, millis, zone, "t") == expected, (pattern, name, millis)
                checked += 1
    assert checked == len(PRINTED) * len(ZONES) * len(instants)
    iso = joda.org.joda.time.format.DateTimeFormat.forPattern("yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    assert (
        iso.withZone(_zone(joda, "EST")).print(1_730_615_400_000) == "2024-11-03T01:30:00.000-0500"
    )


INPUTS = [
    "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
    "yyyy-MM-dd'T'HH:mm:ssZZ",
    "yyyy-MM-dd HH:mm:ss",
    "yyyyMMddHHmm",
    "dd MMM yyyy hh:mm a",
    "yyyy/M/d k:mm",
    "yyyy-MM-dd hh:mm",  # a clock hour without a half-day marker: before noon
]
OUTPUT = "yyyy-MM-dd HH:mm:ss.SSS ZZ"


def _joda_partition(
    jvm: Any, inputs: list[str], in_zone: str, out_zone: str, text: str
) -> str | None:
    """What Hudi's key generator prints for ``text`` (None: Joda refuses it):
    HoodieDateTimeParser's formatter (the input patterns' parsers as alternatives, the
    input zone or else the parsed offset), then the output pattern in the output zone or
    else the parsed date's zone."""
    try:
        parsed = _joda_parser(jvm, tuple(inputs), in_zone).parseDateTime(text)
    except Exception:  # Joda's IllegalArgumentException / IllegalInstantException
        return None
    printer = (
        _joda_printer(jvm, out_zone)
        if out_zone
        else _joda_printer(jvm, "").withZone(parsed.getZone())
    )
    return str(printer.print(parsed.getMillis()))


_JODA: dict[tuple[str, ...], Any] = {}  # Joda's formatters are immutable: built once


def _joda_parser(jvm: Any, inputs: tuple[str, ...], in_zone: str) -> Any:
    """HoodieDateTimeParser's formatter for ``inputs`` in ``in_zone`` (or the parsed offset)."""
    key = ("parse", in_zone, *inputs)
    if key not in _JODA:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        assert gateway is not None
        parsers = gateway.new_array(jvm.org.joda.time.format.DateTimeParser, len(inputs))
        for i, pattern in enumerate(inputs):
            parsers[i] = jvm.org.joda.time.format.DateTimeFormat.forPattern(pattern).getParser()
        formatter = (
            jvm.org.joda.time.format.DateTimeFormatterBuilder().append(None, parsers).toFormatter()
        )
        _JODA[key] = (
            formatter.withZone(_zone(jvm, in_zone)) if in_zone else formatter.withOffsetParsed()
        )
    return _JODA[key]


def _joda_printer(jvm: Any, out_zone: str) -> Any:
    """The output pattern's formatter, in ``out_zone`` ("": the caller sets the zone)."""
    key = ("print", out_zone)
    if key not in _JODA:
        printer = jvm.org.joda.time.format.DateTimeFormat.forPattern(OUTPUT)
        _JODA[key] = printer.withZone(_zone(jvm, out_zone)) if out_zone else printer
    return _JODA[key]


def test_reading_matches_joda(joda: Any) -> None:
    draw = random.Random(1710054000)
    instants = SPECIAL + [draw.randint(-2_208_988_800_000, 4_102_444_800_000) for _ in range(12)]
    settings = [("", ""), ("America/New_York", ""), ("", "Asia/Kolkata"), ("GMT+8:00", "UTC")]
    checked = refused = 0
    for pattern in INPUTS:
        printer = joda.org.joda.time.format.DateTimeFormat.forPattern(pattern)
        texts = [
            printer.withZone(_zone(joda, z)).print(m)
            for m in instants
            for z in ("UTC", "America/New_York")
        ]
        # and strings Joda refuses: a spring-gap time, a day February lacks, junk
        texts += ["2024-03-10 02:30:00", "2023-02-29 00:00:00", "202402301200", "x"]
        for in_zone, out_zone in settings:
            options = {
                P + "timestamp.type": "DATE_STRING",
                P + "input.dateformat": pattern,
                P + "output.dateformat": OUTPUT,
                P + "input.timezone": in_zone,
                P + "output.timezone": out_zone,
            }
            keygen = TimestampPartition.from_options(options)
            for text in texts:
                expected = _joda_partition(joda, [pattern], in_zone, out_zone, text)
                if expected is None:
                    with pytest.raises(BadInputError):
                        keygen.value(text, "t")
                    refused += 1
                else:
                    assert keygen.value(text, "t") == expected, (pattern, in_zone, out_zone, text)
                checked += 1
    assert checked > 500 and refused > 20
    # Joda's own answers where Java libraries differ: the autumn overlap's earlier
    # instant, the spring gap refused
    ny = ["yyyy-MM-dd HH:mm:ss"]
    assert _joda_partition(joda, ny, "America/New_York", "", "2024-11-03 01:30:00") == (
        "2024-11-03 01:30:00.000 -04:00"
    )
    assert _joda_partition(joda, ny, "America/New_York", "", "2024-03-10 02:30:00") is None
    # several input formats: the first that reads the whole string
    listed = ["yyyy-MM-dd'T'HH:mm:ssZ", "yyyy-MM-dd'T'HH:mm:ss.SSSZ", "yyyyMMdd"]
    keygen = TimestampPartition.from_options(
        {
            P + "timestamp.type": "MIXED",
            P + "input.dateformat": ",".join(listed),
            P + "output.dateformat": OUTPUT,
        }
    )
    for text in ["2020-04-01T13:01:33Z", "2020-04-01T13:01:33.123-05:00", "20200401", "2020-04-01"]:
        expected = _joda_partition(joda, listed, "", "", text)
        assert expected is not None or text == "2020-04-01"
        if expected is not None:
            assert keygen.value(text, "t") == expected


def test_units_convert_as_javas_time_unit(joda: Any) -> None:
    """Numbers become milliseconds by ``TimeUnit.MILLISECONDS.convert``: finer units
    truncated toward zero, coarser ones saturating at Long's bounds."""
    draw = random.Random(7)
    values = [0, 1, -1, 999, -999, 1_999_999, -1_999_999, 2**62, -(2**62), 2**63 - 1, -(2**63)]
    values += [draw.randint(-(2**63), 2**63 - 1) for _ in range(30)]
    millis = joda.java.util.concurrent.TimeUnit.MILLISECONDS
    for unit in (
        "NANOSECONDS",
        "MICROSECONDS",
        "MILLISECONDS",
        "SECONDS",
        "MINUTES",
        "HOURS",
        "DAYS",
    ):
        java_unit = joda.java.util.concurrent.TimeUnit.valueOf(unit)
        for value in values:
            assert to_millis(value, unit) == millis.convert(value, java_unit), (unit, value)


def test_old_three_letter_zone_ids_map_as_joda_maps_them(joda: Any) -> None:
    from hudi_sync.table.keys.timestamp_keygen import _JODA_IDS

    for old, zone in _JODA_IDS.items():
        assert _zone(joda, old).getID() == zone, old
