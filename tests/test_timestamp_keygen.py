"""Partition values of the TIMESTAMP key generator, against Hudi's rules.

Two kinds of expected values: the partition paths Hudi's own key generator tests
assert (``TestTimestampBasedKeyGenerator``, as literals), and values derived here
independently of the module's formatter, with ``datetime``/``zoneinfo`` and ``strftime``
(DST changes, leap days, epoch 0, negative epochs, sub-second units), following the
Java rules Hudi applies: ``TimeUnit.convert`` truncates toward zero, Joda takes the
earlier offset of an autumn overlap and refuses a spring gap.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.table.keys.partition_paths import (
    SIMPLE,
    TIMESTAMP,
    PartitionScheme,
    partition_paths,
    partition_specs,
)
from hudi_sync.table.keys.timestamp_keygen import TimestampPartition

P = "hoodie.keygen.timebased."
NY = ZoneInfo("America/New_York")
UTC = dt.UTC


def _keygen(kind: str, output: str, **more: str) -> TimestampPartition:
    options = {P + "timestamp.type": kind, P + "output.dateformat": output}
    options.update({P + k.replace("_", "."): v for k, v in more.items()})
    return TimestampPartition.from_options(options)


def _one(keygen: TimestampPartition, value: Any) -> str:
    return str(keygen.values(pa.array([value]), "t", False)[0])


# Hudi's TestTimestampBasedKeyGenerator: (settings, value, its asserted partition path).
# Its five-argument config sets hoodie.keygen.timebased.timezone (input and output).
HUDI_VECTORS = [
    (
        ("EPOCHMILLISECONDS", "yyyy-MM-dd hh", {"timezone": "GMT+8:00"}),
        1578283932000,
        "2020-01-06 12",
    ),
    (("EPOCHMILLISECONDS", "yyyy-MM-dd hh", {"timezone": "GMT"}), 1578283932000, "2020-01-06 04"),
    (
        ("EPOCHMILLISECONDS", "yyyy-MM-dd hh", {"timezone": "GMT+8:00"}),
        Decimal("1578283932000.0001"),
        "2020-01-06 12",
    ),
    (("EPOCHMILLISECONDS", "yyyy-MM-dd hh", {"timezone": "GMT+8:00"}), None, "1970-01-01 08"),
    (
        (
            "DATE_STRING",
            "yyyy-MM-dd hh",
            {"timezone": "GMT+8:00", "input_dateformat": "yyyy-MM-dd hh:mm:ss"},
        ),
        "2020-01-06 12:12:12",
        "2020-01-06 12",
    ),
    (
        (
            "DATE_STRING",
            "yyyy-MM-dd hh",
            {"timezone": "GMT", "input_dateformat": "yyyy-MM-dd hh:mm:ss"},
        ),
        "2020-01-06 12:12:12",
        "2020-01-06 12",
    ),
    (
        (
            "DATE_STRING",
            "yyyy-MM-dd hh:mm:ss",
            {"timezone": "GMT", "input_dateformat": "yyyy-MM-dd hh:mm:ss"},
        ),
        None,
        "1970-01-01 12:00:00",
    ),
    (
        ("EPOCHMICROSECONDS", "yyyy-MM-dd hh", {"timezone": "GMT+8:00"}),
        1578283932123456,
        "2020-01-06 12",
    ),
    (
        ("EPOCHMICROSECONDS", "yyyy-MM-dd hh", {"timezone": "GMT+8:00"}),
        Decimal("1578283932123456.0001"),
        "2020-01-06 12",
    ),
    (
        ("SCALAR", "yyyy-MM-dd hh", {"timezone": "GMT", "timestamp_scalar_time_unit": "days"}),
        20000,
        "2024-10-04 12",
    ),
    (
        ("SCALAR", "yyyy-MM-dd hh", {"timezone": "GMT", "timestamp_scalar_time_unit": "days"}),
        None,
        "1970-01-02 12",
    ),
    (
        ("SCALAR", "yyyy-MM-dd", {"timezone": "GMT", "timestamp_scalar_time_unit": "DAYS"}),
        18736,
        "2021-04-19",
    ),
    (
        ("SCALAR", "yyyy/MM/dd", {"timezone": "GMT", "timestamp_scalar_time_unit": "MICROSECONDS"}),
        1638513806000000,
        "2021/12/03",
    ),
]
_ISO = "yyyy-MM-dd'T'HH:mm:ssZ,yyyy-MM-dd'T'HH:mm:ss.SSSZ"
HUDI_STRING_VECTORS = [
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "GMT", "2020-04-01T13:01:33.428Z", "yyyyMMddHH", "2020040113"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "", "2020-04-01T13:01:33.428Z", "yyyyMMddHH", "2020040113"),
    (_ISO, "UTC", "2020-04-01T13:01:33.428Z", "yyyyMMddHH", "2020040113"),
    (_ISO, "UTC", "2020-04-01T13:01:33Z", "yyyyMMddHH", "2020040113"),
    (_ISO, "UTC", "2020-04-01T13:01:33-05:00", "yyyyMMddHH", "2020040118"),
    (_ISO, "UTC", "2020-04-01T13:01:33.123-05:00", "yyyyMMddHH", "2020040118"),
    # Joda reads Java's old id EST as New York's rules: daylight time in April.
    (_ISO, "EST", "2020-04-01T13:01:33.123Z", "yyyyMMddHH", "2020040109"),
    (f"{_ISO},yyyyMMdd", "UTC", "20200401", "MM/dd/yyyy", "04/01/2020"),
]


@pytest.mark.parametrize(("settings", "value", "expected"), HUDI_VECTORS)
def test_hudi_test_vectors(
    settings: tuple[str, str, dict[str, str]], value: Any, expected: str
) -> None:
    kind, output, more = settings
    assert _one(_keygen(kind, output, **more), value) == expected


@pytest.mark.parametrize(("inputs", "out_zone", "value", "output", "expected"), HUDI_STRING_VECTORS)
def test_hudi_date_string_vectors(
    inputs: str, out_zone: str, value: str, output: str, expected: str
) -> None:
    keygen = _keygen("DATE_STRING", output, input_dateformat=inputs, output_timezone=out_zone)
    assert _one(keygen, value) == expected


def test_a_date_no_input_format_reads_is_refused_as_hudi_fails_it() -> None:
    keygen = _keygen("DATE_STRING", "yyyyMMddHH", input_dateformat=_ISO, output_timezone="UTC")
    with pytest.raises(BadInputError, match=r"2020-04-01 13:01:33\.123-05:00.*not a date"):
        _one(keygen, "2020-04-01 13:01:33.123-05:00")


def _strftime(millis: int, zone: dt.tzinfo, pattern: str) -> str:
    """An independent rendering: the instant from the epoch by timedelta, strftime."""
    instant = dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=millis)
    return instant.astimezone(zone).strftime(pattern)


# (type, unit, value, millis by Java's TimeUnit rule, output zone)
NUMBER_VECTORS = [
    ("UNIX_TIMESTAMP", None, 0, 0, "UTC"),
    ("UNIX_TIMESTAMP", None, -1, -1000, "UTC"),
    ("UNIX_TIMESTAMP", None, 1709251200, 1709251200000, "UTC"),  # 2024-03-01
    ("UNIX_TIMESTAMP", None, 1709164800, 1709164800000, "UTC"),  # 2024-02-29 leap day
    ("EPOCHMILLISECONDS", None, -1, -1, "UTC"),
    ("EPOCHMILLISECONDS", None, -86_400_001, -86_400_001, "UTC"),
    ("EPOCHMICROSECONDS", None, -1, 0, "UTC"),  # truncated toward zero, not floored
    ("EPOCHMICROSECONDS", None, -1999, -1, "UTC"),
    ("EPOCHMICROSECONDS", None, 1_709_164_800_999_999, 1_709_164_800_999, "UTC"),
    ("SCALAR", "NANOSECONDS", 1_999_999, 1, "UTC"),
    ("SCALAR", "NANOSECONDS", -1_999_999, -1, "UTC"),
    ("SCALAR", "MILLISECONDS", 1234, 1234, "UTC"),
    ("SCALAR", "SECONDS", 86_400, 86_400_000, "UTC"),
    ("SCALAR", "MINUTES", -1, -60_000, "UTC"),
    ("SCALAR", "HOURS", 1, 3_600_000, "UTC"),
    ("SCALAR", "DAYS", 19_782, 19_782 * 86_400_000, "UTC"),  # 2024-02-29
    # America/New_York's spring change (2024-03-10 07:00Z) and autumn change (06:00Z).
    ("EPOCHMILLISECONDS", None, 1_710_053_999_999, 1_710_053_999_999, "America/New_York"),
    ("EPOCHMILLISECONDS", None, 1_710_054_000_000, 1_710_054_000_000, "America/New_York"),
    ("EPOCHMILLISECONDS", None, 1_730_611_800_000, 1_730_611_800_000, "America/New_York"),
    ("EPOCHMILLISECONDS", None, 1_730_615_400_000, 1_730_615_400_000, "America/New_York"),
    ("UNIX_TIMESTAMP", None, 0, 0, "America/New_York"),
    ("UNIX_TIMESTAMP", None, 1_709_200_800, 1_709_200_800_000, "Asia/Kolkata"),
    (
        "EPOCHMILLISECONDS",
        None,
        1.5e12 + 0.9,
        1_500_000_000_000,
        "UTC",
    ),  # a double's fraction dropped
]


@pytest.mark.parametrize(("kind", "unit", "value", "millis", "zone"), NUMBER_VECTORS)
def test_numbers_print_in_the_output_zone(
    kind: str, unit: str | None, value: Any, millis: int, zone: str
) -> None:
    more = {"output_timezone": zone}
    if unit:
        more["timestamp_scalar_time_unit"] = unit
    keygen = _keygen(kind, "yyyy-MM-dd HH:mm:ss.SSS ZZ", **more)
    tz = UTC if zone == "UTC" else ZoneInfo(zone)
    expected = _strftime(millis, tz, "%Y-%m-%d %H:%M:%S.") + f"{millis % 1000:03d} "
    offset = _strftime(millis, tz, "%z")
    assert _one(keygen, value) == expected + offset[:3] + ":" + offset[3:]


def test_the_new_york_changes_print_both_offsets() -> None:
    keygen = _keygen("EPOCHMILLISECONDS", "yyyy-MM-dd HH:mm Z", output_timezone="America/New_York")
    # the spring gap: 01:59 EST is followed by 03:00 EDT; the autumn overlap: 01:30 twice
    assert _one(keygen, 1_710_053_999_999) == "2024-03-10 01:59 -0500"
    assert _one(keygen, 1_710_054_000_000) == "2024-03-10 03:00 -0400"
    assert _one(keygen, 1_730_611_800_000) == "2024-11-03 01:30 -0400"
    assert _one(keygen, 1_730_615_400_000) == "2024-11-03 01:30 -0500"


def test_zoneless_strings_read_in_the_input_zone_across_dst() -> None:
    keygen = _keygen(
        "DATE_STRING",
        "yyyy-MM-dd'T'HH:mm",
        input_dateformat="yyyy-MM-dd HH:mm:ss",
        input_timezone="America/New_York",
        output_timezone="UTC",
    )

    def utc(local: dt.datetime) -> str:
        return local.replace(tzinfo=NY).astimezone(UTC).strftime("%Y-%m-%dT%H:%M")

    assert _one(keygen, "2024-03-10 01:59:00") == utc(dt.datetime(2024, 3, 10, 1, 59))
    assert _one(keygen, "2024-03-10 03:00:00") == utc(dt.datetime(2024, 3, 10, 3, 0))
    # the autumn overlap takes the earlier instant (daylight time), as Joda does
    assert _one(keygen, "2024-11-03 01:30:00") == "2024-11-03T05:30"
    assert _one(keygen, "2024-02-29 23:00:00") == utc(dt.datetime(2024, 2, 29, 23, 0))
    # a local time the spring change skips is no instant: Joda refuses it
    with pytest.raises(BadInputError, match="not a date"):
        _one(keygen, "2024-03-10 02:30:00")
    with pytest.raises(BadInputError, match="not a date"):
        _one(keygen, "2023-02-29 00:00:00")  # no leap day in 2023


def test_without_an_output_zone_a_string_prints_in_its_own_zone() -> None:
    keygen = _keygen("DATE_STRING", "yyyy-MM-dd HH ZZ", input_dateformat="yyyy-MM-dd HH:mmZ")
    assert _one(keygen, "2024-02-29 23:30+05:30") == "2024-02-29 23 +05:30"
    keygen = _keygen(
        "DATE_STRING",
        "yyyy-MM-dd HH ZZZ",
        input_dateformat="yyyy-MM-dd HH",
        input_timezone="Asia/Tokyo",
    )
    assert _one(keygen, "2024-02-29 23") == "2024-02-29 23 Asia/Tokyo"
    # an offset in the string places the instant; the input zone still prints it
    keygen = _keygen(
        "DATE_STRING",
        "yyyy-MM-dd HH",
        input_dateformat="yyyy-MM-dd HH:mmZ",
        input_timezone="Asia/Tokyo",
    )
    tokyo = dt.datetime.fromisoformat("2024-02-29 23:30+00:00").astimezone(ZoneInfo("Asia/Tokyo"))
    assert (
        _one(keygen, "2024-02-29 23:30+00:00") == tokyo.strftime("%Y-%m-%d %H") == "2024-03-01 08"
    )


def test_mixed_reads_strings_and_refuses_numbers() -> None:
    keygen = _keygen("MIXED", "yyyy/MM/dd", input_dateformat="yyyy-MM-dd")
    assert _one(keygen, "2024-02-29") == "2024/02/29"
    with pytest.raises(BadInputError, match="takes strings"):
        _one(keygen, 1)
    with pytest.raises(BadInputError, match="DATE_STRING and MIXED take strings"):
        _one(_keygen("UNIX_TIMESTAMP", "yyyy"), "2024")


def test_pattern_letters_print_as_joda_prints_them() -> None:
    millis = 1_709_164_800_123 + 13 * 3_600_000  # 2024-02-29T13:00:00.123Z, a Thursday
    expected = (
        _strftime(millis, dt.timezone(-dt.timedelta(hours=4)), "%y|%b|%B|%a|%A|%j|%I|%p|")
        + "123000|"
        + "9|AD|20|2024-W09-4|'|T"
    )
    pattern = "yy|MMM|MMMM|E|EEEE|DDD|hh|a|SSSSSS|H|G|C|xxxx-'W'ww-e|''|'T'"
    keygen = _keygen("EPOCHMILLISECONDS", pattern, output_timezone="GMT-4")
    assert _one(keygen, millis) == expected
    assert _one(_keygen("EPOCHMILLISECONDS", "yyyy/MM/dd", timezone="UTC"), millis) == "2024/02/29"
    assert _one(_keygen("EPOCHMILLISECONDS", "k K", timezone="UTC"), 0) == "24 0"


def test_input_patterns_read_text_months_half_days_and_adjacent_numbers() -> None:
    keygen = _keygen(
        "DATE_STRING",
        "yyyy-MM-dd HH:mm",
        input_dateformat="dd MMM yyyy hh:mm a,yyyyMMddHH",
        timezone="UTC",
    )
    assert _one(keygen, "29 feb 2024 01:05 PM") == "2024-02-29 13:05"
    assert _one(keygen, "2024022913") == "2024-02-29 13:00"
    keygen = _keygen(
        "DATE_STRING",
        "yyyy",
        input_dateformat="yyyy-MM-dd|yyyy.MM",
        input_dateformat_list_delimiter_regex=r"\|",
    )
    assert _one(keygen, "2024.02") == "2024"


@pytest.mark.parametrize(
    ("option", "pattern", "letters"),
    [
        ("output.dateformat", "yyyy-MM-dd'T'HH:mmXXX", "XXX"),  # Joda has no X
        ("output.dateformat", "yyyy z", "z"),  # locale names
        ("input.dateformat", "yy-MM-dd", "yy"),  # read relative to today's year
        ("input.dateformat", "yyyy-MM-dd EEE", "EEE"),
        ("input.dateformat", "yyyy-MM-dd ZZZ", "ZZZ"),
    ],
)
def test_unsupported_pattern_letters_are_refused_naming_the_option(
    option: str, pattern: str, letters: str
) -> None:
    options = {
        P + "timestamp.type": "DATE_STRING",
        P + "output.dateformat": "yyyy",
        P + "input.dateformat": "yyyy",
        P + option: pattern,
    }
    with pytest.raises(
        BadInputError, match=f"{P}{option}=.*'{letters}' are not supported"
    ) as caught:
        TimestampPartition.from_options(options)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({P + "output.dateformat": "yyyy"}, "timestamp.type is required"),
        ({P + "timestamp.type": "EPOCH", P + "output.dateformat": "yyyy"}, "timestamp.type=EPOCH"),
        ({P + "timestamp.type": "UNIX_TIMESTAMP"}, "output.dateformat is required"),
        (
            {P + "timestamp.type": "DATE_STRING", P + "output.dateformat": "yyyy"},
            "input.dateformat is required",
        ),
        (
            {
                P + "timestamp.type": "SCALAR",
                P + "output.dateformat": "y",
                P + "timestamp.scalar.time.unit": "weeks",
            },
            "scalar.time.unit=WEEKS",
        ),
        (
            {
                P + "timestamp.type": "UNIX_TIMESTAMP",
                P + "output.dateformat": "y",
                P + "output.timezone": "Mars/Base",
            },
            "output.timezone=Mars/Base: not a time zone",
        ),
        (
            {
                P + "timestamp.type": "UNIX_TIMESTAMP",
                P + "output.dateformat": "y",
                "hoodie.keygen.datetime.parser.class": "com.example.OwnParser",
            },
            "parser.class=com.example.OwnParser: only Hudi's",
        ),
    ],
)
def test_missing_or_bad_settings_are_refused_in_one_line(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(BadInputError, match=message):
        TimestampPartition.from_options(options)


def test_the_older_deltastreamer_names_are_read() -> None:
    keygen = TimestampPartition.from_options(
        {
            "hoodie.deltastreamer.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
            "hoodie.deltastreamer.keygen.timebased.output.dateformat": "yyyy",
        }
    )
    assert _one(keygen, 0) == "1970"


def test_paths_are_url_encoded_and_hive_style_after_printing() -> None:
    keygen = _keygen("UNIX_TIMESTAMP", "yyyy/MM/dd", output_timezone="UTC")
    rows = pa.table(
        {"region": ["eu", None, "a/b"], "ts": pa.array([1709164800, None, 0], pa.int64())}
    )
    scheme = PartitionScheme(("region", "ts"), (SIMPLE, TIMESTAMP), True, True, keygen)
    assert partition_paths(rows, scheme, "t").to_pylist() == [
        "region=eu/ts=2024%2F02%2F29",
        "region=__HIVE_DEFAULT_PARTITION__/ts=1970%2F01%2F01",  # a null time is epoch + 1 s
        "region=a%2Fb/ts=1970%2F01%2F01",
    ]
    plain = PartitionScheme(("ts",), (TIMESTAMP,), False, False, keygen)
    assert partition_paths(rows, plain, "t").to_pylist() == [
        "2024/02/29",
        "1970/01/01",
        "1970/01/01",
    ]


def test_numbers_as_text_reach_the_formatter_exact() -> None:
    keygen = _keygen(
        "SCALAR",
        "yyyy-MM-dd HH:mm:ss.SSS",
        timestamp_scalar_time_unit="NANOSECONDS",
        timezone="UTC",
    )
    nanos = 1_709_164_800_123_456_789  # beyond a double's exact integers
    printed = keygen.values(pa.array([str(nanos), None]), "t", numeric_text=True).to_pylist()
    assert printed == ["2024-02-29 00:00:00.123", "1970-01-01 00:00:00.000"]


def test_custom_specs_name_each_field_kind() -> None:
    option = "hoodie.datasource.write.partitionpath.field"
    assert partition_specs(("region:simple", "ts:TIMESTAMP"), True, option) == (
        ("region", "ts"),
        (SIMPLE, TIMESTAMP),
    )
    with pytest.raises(BadInputError, match="field:SIMPLE or field:TIMESTAMP"):
        partition_specs(("region", "ts:timestamp"), True, option)
    with pytest.raises(BadInputError, match="CUSTOM key generator's"):
        partition_specs(("ts:timestamp",), False, option)


def test_the_debezium_ingest_names_a_custom_specs_fields(tmp_path: Any) -> None:
    """The ingest writes through ``write``/``write_arrow`` (the paths above); it reads the
    partition fields itself only to check that a delete carries their values, by name."""
    from hudi_sync.debezium.events import ChangeEvent, EventError, Position
    from hudi_sync.debezium.ingest import IngestConfig
    from hudi_sync.debezium.ingest.writes import BatchWriter

    options = {
        "hoodie.streamer.source.kafka.topic": "t",
        "hoodie.datasource.write.keygenerator.type": "CUSTOM",
        "hoodie.datasource.write.partitionpath.field": "region:SIMPLE,ts:TIMESTAMP",
    }
    writer = BatchWriter(None, IngestConfig.from_options(str(tmp_path), options), tuple)  # type: ignore[arg-type]
    assert writer.partition_fields() == ["region", "ts"]

    def delete(row: dict[str, Any]) -> ChangeEvent:
        return ChangeEvent("d", '["1"]', row, {}, "1", "db", None, Position("t", 0, 1))

    writer._check_partition_values([delete({"id": 1, "region": "eu", "ts": 5})])
    with pytest.raises(EventError, match="no value for partition field region,ts"):
        writer._check_partition_values([delete({"id": 1, "region": "eu"})])


def test_date_columns_are_epoch_days_in_the_unit() -> None:
    """Hudi's LocalDate branch: the epoch day as a number of the type's unit."""
    days = _keygen("SCALAR", "yyyy-MM-dd", timestamp_scalar_time_unit="DAYS")
    dates = pa.array([dt.date(2024, 2, 29), dt.date(1969, 12, 31), None])
    assert days.values(dates, "t", False).to_pylist() == ["2024-02-29", "1969-12-31", "1970-01-02"]
    with pytest.raises(BadInputError, match="takes strings"):
        _keygen("DATE_STRING", "y", input_dateformat="y").values(dates, "t", False)


def test_timestamp_columns_need_hudis_consistent_logical_timestamps() -> None:
    stamps = pa.array([-1, 1_709_164_800_999_999, None], pa.timestamp("us", "UTC"))
    with pytest.raises(BadInputError, match=r"consistent\.logical\.timestamp\.enabled=true"):
        _keygen("EPOCHMILLISECONDS", "yyyy").values(stamps, "t", False)
    keygen = _keygen("EPOCHMICROSECONDS", "yyyy-MM-dd HH:mm:ss.SSS", output_timezone="UTC")
    keygen = TimestampPartition.from_options(
        {
            **keygen.settings,
            "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled": "true",
        }
    )
    # the instant's milliseconds, truncated toward zero (-1 µs is the epoch); a null is
    # the type's default (1 µs: the epoch)
    assert keygen.values(stamps, "t", False).to_pylist() == [
        "1970-01-01 00:00:00.000",
        "2024-02-29 00:00:00.999",
        "1970-01-01 00:00:00.000",
    ]
