"""Event times of messages and time windows of join subscriptions.

A feed names the format of its event-time values (:data:`FORMATS`); :func:`parse_event_time` turns
one value into an aware UTC datetime, or ``None`` when it is missing or unparsable, and such a message
takes part in no join. :func:`xs_datetime` writes a time as the manifest of the stream module
(``stream.xq``) carries it, and :func:`parse_window` reads a window as ``fr:followed-by`` and
``fr:within`` do.

>>> parse_event_time("2024-05-01T10:30:00+02:00", "iso8601")
datetime.datetime(2024, 5, 1, 8, 30, tzinfo=datetime.timezone.utc)
>>> xs_datetime(parse_event_time("Wed, 01 May 2024 08:30:00 GMT", "rfc822"))
'2024-05-01T08:30:00Z'
>>> parse_window("P1DT6H")
datetime.timedelta(days=1, seconds=21600)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from decimal import ROUND_FLOOR, Decimal, localcontext
from email.utils import parsedate_to_datetime
from typing import cast

from feedrouter import kernel
from feedrouter.lang.windows import parse_window

__all__ = [
    "FORMATS",
    "MAX_LENGTH",
    "microseconds",
    "parse_event_micros",
    "parse_event_time",
    "parse_window",
    "xs_datetime",
]

FORMATS = ("iso8601", "rfc822", "epoch-seconds")

# Longer values are unparsable: a feed's value is untrusted, and parsing it stays bounded work.
MAX_LENGTH = 64

# XML Schema collapses whitespace around date, time and duration values (str.strip would also take
# Unicode spaces that Saxon refuses).
_XML_SPACE = " \t\r\n"

_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})",
    re.ASCII,
)
_EPOCH = re.compile(r"[+-]?\d+(?:\.\d+)?", re.ASCII)
_EPOCH_START = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = Decimal("0.000001")
_ONE_MICROSECOND = timedelta(microseconds=1)


def parse_event_time(text: str | None, fmt: str) -> datetime | None:
    """Parses an event-time value in a feed's format.

    Args:
        text: The value, as found at the feed's event-time path; ``None`` when there is none.
        fmt: One of :data:`FORMATS`.

    Returns:
        The time as an aware datetime in UTC, or ``None`` when the value is missing, longer than
        :data:`MAX_LENGTH` characters or not a time in that format.

    Raises:
        ValueError: ``fmt`` is not a known format.
    """
    parse = _PARSERS.get(fmt)
    if parse is None:
        raise ValueError(f"unknown event-time format {fmt!r}: the formats are {', '.join(FORMATS)}")
    if text is None or len(text) > MAX_LENGTH:
        return None
    text = text.strip(_XML_SPACE)
    # the usual form read in C (every message of a feed with joins has its time parsed: the
    # library costs about 3 us); any other value is the library's to decide
    found = _usual_form(kernel.event_time, text, fmt)
    if found is not None:
        return cast(datetime, found)
    try:
        parsed = parse(text)
        return None if parsed is None else parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError, TypeError, IndexError):
        # out-of-range fields and dates; TypeError and IndexError: email.utils on some malformed
        # dates in the Python versions feedrouter supports
        return None


def parse_event_micros(text: str | None, fmt: str) -> int | None:
    """:func:`parse_event_time`'s time as microseconds since the epoch (what the witness tables
    hold), read in C without a datetime where the value has the format's usual form (every
    message of a feed with joins has its time read); the library's answer otherwise.

    >>> parse_event_micros("Thu, 01 Jan 1970 00:00:01 GMT", "rfc822")
    1000000
    """
    if text is not None and len(text) <= MAX_LENGTH:
        found = _usual_form(kernel.event_micros, text.strip(_XML_SPACE), fmt)
        if found is not None:
            return cast(int, found)
    time = parse_event_time(text, fmt)
    return None if time is None else microseconds(time)


def microseconds(time: datetime) -> int:
    """An event time as microseconds since the epoch (how the witness tables and the join stage's
    arrays hold it)."""
    return (time - _EPOCH_START) // _ONE_MICROSECOND


def _usual_form(read: Callable[[str, int], object] | None, text: str, fmt: str) -> object | None:
    """What the compiled reader ``read`` (:func:`feedrouter.kernel.event_time` or
    :func:`~feedrouter.kernel.event_micros`) gives of ``text`` (stripped) in ``fmt``; None where
    it is not built, does not know the format, or leaves the value to the library."""
    code = kernel.EVENT_FORMATS.get(fmt)
    return None if read is None or code is None else read(text, code)


def _iso8601(text: str) -> datetime | None:
    # A time without a timezone is refused: feeds come from anywhere, and a zone-less time could be
    # any of 28 hours, so comparing it with another feed's times would be a guess.
    match = _ISO.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))  # sub-microsecond digits are dropped
    midnight = hour == "24"  # xs:dateTime's 24:00:00 is the first instant of the next day
    if midnight and (minute, second, micro) != ("00", "00", 0):
        return None
    clock = (0 if midnight else int(hour), int(minute), int(second), micro)
    local = datetime(int(year), int(month), int(day), *clock, tzinfo=_zone(zone))
    return local + timedelta(days=1) if midnight else local


def _zone(text: str) -> timezone:
    if text == "Z":
        return timezone.utc
    hours, minutes = int(text[1:3]), int(text[4:6])
    if minutes > 59 or hours * 60 + minutes > 14 * 60:  # the range XML Schema allows
        raise ValueError(f"timezone out of range: {text}")
    offset = timedelta(hours=hours, minutes=minutes)
    return timezone(-offset if text[0] == "-" else offset)


def _rfc822(text: str) -> datetime | None:
    parsed = parsedate_to_datetime(text)
    if parsed.tzinfo is not None:
        return parsed
    # A naive result means the zone was missing (refused, as for iso8601) or "-0000", which RFC 5322
    # defines as a time in UTC whose local zone is unknown.
    return parsed.replace(tzinfo=timezone.utc) if text.endswith("-0000") else None


def _epoch_seconds(text: str) -> datetime | None:
    if _EPOCH.fullmatch(text) is None:
        return None
    with localcontext() as context:
        context.prec = 2 * MAX_LENGTH  # every digit kept: the default 28 rounds .999...9 up
        seconds = Decimal(text)
        whole = seconds.to_integral_value(rounding=ROUND_FLOOR)
        micro = int((seconds - whole) / _MICROSECOND)  # truncated, as for iso8601
    return _EPOCH_START + timedelta(seconds=int(whole), microseconds=micro)


_PARSERS: dict[str, Callable[[str], datetime | None]] = {
    "iso8601": _iso8601,
    "rfc822": _rfc822,
    "epoch-seconds": _epoch_seconds,
}


def xs_datetime(dt: datetime) -> str:
    """Writes an aware datetime as an xs:dateTime in UTC.

    Args:
        dt: The time; it must carry a timezone.

    Returns:
        The lexical form with ``Z``, with fractional seconds only when there are microseconds (and
        without trailing zeros, as the canonical form has them), e.g. ``2024-05-01T08:30:00.25Z``.

    Raises:
        ValueError: ``dt`` is naive.
    """
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"a naive datetime has no place in a stream: {dt.isoformat()}")
    utc = dt.astimezone(timezone.utc)
    text = f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"
