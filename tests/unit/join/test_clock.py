"""Event times in the feeds' formats, their xs:dateTime form and join windows."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from feedrouter.join.clock import FORMATS, MAX_LENGTH, parse_event_time, parse_window, xs_datetime

UTC = timezone.utc


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T08:30:00Z", utc(2024, 5, 1, 8, 30)),
        ("2024-05-01T10:30:00+02:00", utc(2024, 5, 1, 8, 30)),
        ("2024-05-01T03:00:00-05:30", utc(2024, 5, 1, 8, 30)),
        ("2024-05-01T08:30:00.25Z", utc(2024, 5, 1, 8, 30, 0, 250000)),
        ("2024-05-01T08:30:00.1234567Z", utc(2024, 5, 1, 8, 30, 0, 123456)),
        ("2024-12-31T24:00:00Z", utc(2025, 1, 1)),
        ("2024-05-01T08:30:00+14:00", utc(2024, 4, 30, 18, 30)),
        (" \n2024-05-01T08:30:00Z\t", utc(2024, 5, 1, 8, 30)),
    ],
)
def test_iso8601_gives_utc(text: str, expected: datetime) -> None:
    parsed = parse_event_time(text, "iso8601")
    assert parsed == expected
    assert parsed is not None and parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-01T08:30:00",  # no timezone: ambiguous across feeds
        "2024-05-01 08:30:00Z",
        "2024-05-01T08:30Z",
        "2024-02-30T08:30:00Z",
        "2024-05-01T25:00:00Z",
        "2024-05-01T24:00:01Z",
        "2024-05-01T08:30:00+14:30",
        "2024-05-01T08:30:00+01:60",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T24:00:00Z",
        "-2024-05-01T08:30:00Z",
        "\uff12\uff10\uff12\uff14-05-01T08:30:00Z",  # fullwidth digits
        "2024-05-01T08:30:00Z" + "0" * MAX_LENGTH,
        "",
    ],
)
def test_iso8601_refuses(text: str) -> None:
    assert parse_event_time(text, "iso8601") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Wed, 01 May 2024 08:30:00 GMT", utc(2024, 5, 1, 8, 30)),
        ("Wed, 01 May 2024 10:30:00 +0200", utc(2024, 5, 1, 8, 30)),
        ("01 May 2024 03:30:00 EST", utc(2024, 5, 1, 8, 30)),
        ("Wed, 01 May 2024 08:30:00 -0000", utc(2024, 5, 1, 8, 30)),
    ],
)
def test_rfc822_gives_utc(text: str, expected: datetime) -> None:
    assert parse_event_time(text, "rfc822") == expected


@pytest.mark.parametrize(
    "text", ["Wed, 01 May 2024 08:30:00", "Wed, 41 May 2024 08:30:00 GMT", "yesterday", "", "1714552200"]
)
def test_rfc822_refuses(text: str) -> None:
    assert parse_event_time(text, "rfc822") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", utc(1970, 1, 1)),
        ("1714552200", utc(2024, 5, 1, 8, 30)),
        ("1714552200.25", utc(2024, 5, 1, 8, 30, 0, 250000)),
        ("+1714552200.0000009", utc(2024, 5, 1, 8, 30)),
        ("-1.5", utc(1969, 12, 31, 23, 59, 58, 500000)),
        # more digits than Decimal's default precision: truncated, never rounded up into the next hour
        ("1777622399." + "9" * 29, utc(2026, 5, 1, 7, 59, 59, 999999)),
        ("-0." + "0" * 30 + "1", utc(1969, 12, 31, 23, 59, 59, 999999)),
    ],
)
def test_epoch_seconds(text: str, expected: datetime) -> None:
    assert parse_event_time(text, "epoch-seconds") == expected


@pytest.mark.parametrize("text", ["1e9", "1,5", ".5", "0x10", "", "9" * 20, "NaN"])
def test_epoch_seconds_refuses(text: str) -> None:
    assert parse_event_time(text, "epoch-seconds") is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_value_has_no_time(fmt: str) -> None:
    assert parse_event_time(None, fmt) is None


def test_unknown_format_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"'unix'.*iso8601, rfc822, epoch-seconds"):
        parse_event_time("0", "unix")


@pytest.mark.parametrize(
    ("dt", "expected"),
    [
        (utc(2024, 5, 1, 8, 30), "2024-05-01T08:30:00Z"),
        (utc(2024, 5, 1, 8, 30, 0, 250000), "2024-05-01T08:30:00.25Z"),
        (utc(2024, 5, 1, 8, 30, 0, 1), "2024-05-01T08:30:00.000001Z"),
        (datetime(2024, 5, 1, 10, 30, tzinfo=timezone(timedelta(hours=2))), "2024-05-01T08:30:00Z"),
        (utc(33, 1, 2), "0033-01-02T00:00:00Z"),
    ],
)
def test_xs_datetime(dt: datetime, expected: str) -> None:
    assert xs_datetime(dt) == expected
    assert parse_event_time(expected, "iso8601") == dt


def test_xs_datetime_refuses_naive() -> None:
    with pytest.raises(ValueError, match="naive"):
        xs_datetime(datetime(2024, 5, 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PT6H", timedelta(hours=6)),
        ("P1D", timedelta(days=1)),
        ("P1DT12H30M15S", timedelta(days=1, hours=12, minutes=30, seconds=15)),
        ("PT90M", timedelta(minutes=90)),
        ("PT0.5S", timedelta(milliseconds=500)),
        ("P0DT1H", timedelta(hours=1)),
        (" PT6H\n", timedelta(hours=6)),
        ("PT0.0000001S", timedelta(0)),  # positive, finer than event times can tell apart
        # more digits than Decimal's default precision: truncated, not rounded up to a minute
        ("PT59." + "9" * 29 + "S", timedelta(seconds=59, microseconds=999999)),
        ("P" + "9" * 7 + "DT59." + "9" * 40 + "S", timedelta(days=9999999, seconds=59, microseconds=999999)),
    ],
)
def test_window(text: str, expected: timedelta) -> None:
    assert parse_window(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("PT0S", "not positive"),
        ("P0D", "not positive"),
        ("-PT6H", "not an xs:dayTimeDuration"),
        ("6h", "not an xs:dayTimeDuration"),
        ("P", "not an xs:dayTimeDuration"),
        ("PT", "not an xs:dayTimeDuration"),
        ("P1DT", "not an xs:dayTimeDuration"),
        ("P1M", "not an xs:dayTimeDuration"),
        ("P1Y", "not an xs:dayTimeDuration"),
        ("PT.5S", "not an xs:dayTimeDuration"),
        ("PT1.S", "not an xs:dayTimeDuration"),
        ("PT6M1H", "not an xs:dayTimeDuration"),
        ("PT6 H", "not an xs:dayTimeDuration"),
        ("PT\uff16H", "not an xs:dayTimeDuration"),  # a fullwidth digit
        ("PT" + "0" * MAX_LENGTH + "1H", "not an xs:dayTimeDuration"),
        ("P1000000000D", "too large"),
    ],
)
def test_window_refuses(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_window(text)
