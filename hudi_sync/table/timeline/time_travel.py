"""Time-travel timestamps (RFC-07): every accepted spelling mapped to an instant time."""

from __future__ import annotations

import datetime as dt
import re

from hudi_sync.errors import TimeTravelError
from hudi_sync.table.timeline.active import format_instant

_DIGITS = re.compile(r"^\d+\Z")
_DASHED_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}\Z")
_DASHED_LOCAL = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(\.\d{1,3})?\Z")
# Epoch timestamps by digit count (Hudi's 14- and 17-digit instants never collide).
_EPOCH_DIVISOR = {10: 1, 13: 1_000, 16: 1_000_000, 19: 1_000_000_000}


def to_instant_time(value: str, zone: dt.tzinfo | None) -> str:
    """Normalise a time-travel value to an instant time (``yyyyMMddHHmmss[SSS]``).

    Accepted: ``yyyyMMddHHmmss[SSS]``; ``yyyy-MM-dd HH:mm:ss[.SSS]`` and ``yyyy-MM-dd``
    (in the table's timeline zone; missing milliseconds mean ``999`` and a bare date
    means its start, as in Hudi); ISO-8601 with an offset; epoch seconds, millis,
    micros or nanos. ``zone`` is the timeline zone (``None`` = machine local).
    """
    text = value.strip()
    if _DIGITS.match(text):
        if len(text) in (14, 17):
            _check_instant_digits(text, value)
            return text
        divisor = _EPOCH_DIVISOR.get(len(text))
        if divisor is None:
            raise TimeTravelError(
                f"time-travel value {value!r}: {len(text)} digits is neither an instant "
                "(14 or 17 digits) nor epoch seconds/millis/micros/nanos"
            )
        seconds, remainder = divmod(int(text), divisor)
        moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC) + dt.timedelta(
            microseconds=remainder * 1_000_000 // divisor
        )
        return format_instant(moment.astimezone(zone))
    if _DASHED_DATE.match(text):
        _parse_or_fail(text, "%Y-%m-%d", value)
        return text.replace("-", "") + "000000000"
    local = _DASHED_LOCAL.match(text)
    if local:
        date_part, time_part, millis = local.groups()
        _parse_or_fail(f"{date_part} {time_part}", "%Y-%m-%d %H:%M:%S", value)
        fraction = (millis[1:] if millis else "999").ljust(3, "0")
        return (date_part + time_part).replace("-", "").replace(":", "") + fraction
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise TimeTravelError(
            f"time-travel value {value!r} is not an instant, date, date-time, "
            "ISO-8601 timestamp with offset or epoch number"
        ) from None
    if moment.tzinfo is None:
        raise TimeTravelError(
            f"time-travel value {value!r}: an ISO-8601 timestamp needs an offset (e.g. Z or +02:00)"
        )
    return format_instant(moment.astimezone(zone))


def to_begin_bound(value: str | None, zone: dt.tzinfo | None) -> str | None:
    """An incremental query's exclusive begin as an instant time; ``None`` means "from the
    start". A begin is a bound, not a time-travel target: as in Hudi's quickstart, ``earliest``,
    an empty value and any run of zeros (``0``, ``000``) come before every commit."""
    text = (value or "").strip()
    if not text or text.lower() == "earliest" or (_DIGITS.match(text) and int(text) == 0):
        return None
    return to_instant_time(text, zone)


def _check_instant_digits(text: str, original: str) -> None:
    _parse_or_fail(text[:14], "%Y%m%d%H%M%S", original)


def _parse_or_fail(text: str, pattern: str, original: str) -> None:
    try:
        dt.datetime.strptime(text, pattern)
    except ValueError:
        raise TimeTravelError(f"time-travel value {original!r} is not a valid date/time") from None
