"""The one module for hours: reading one strictly, truncating, writing, and placing it in a layout."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from feedrouter.errors import HourError
from feedrouter.hours import (
    DEFAULT_LAYOUT,
    HOUR_PATTERN,
    batch_prefix,
    format_hour,
    hour_path,
    parse_hour,
    to_hour,
)

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-22T16",
        "2026-11-22T16:00",
        "2026-11-22T16:00:00",
        "2026-11-22T17:00:00+01:00",
        "2026-11-22T16:00:00Z",
        "2026-11-22 16:00:00+00:00",  # str() of an aware datetime
    ],
)
def test_an_hour_is_read_in_utc(text: str) -> None:
    assert parse_hour(text) == HOUR


@pytest.mark.parametrize("text", ["2026-11-23", "2026-11-23+00:00", "20261123", "2026-W47-1"])
def test_a_date_alone_is_not_read_as_its_midnight(text: str) -> None:
    with pytest.raises(HourError, match="is not an hour: write it as YYYY-MM-DDTHH") as caught:
        parse_hour(text)
    assert caught.value.code == "FR608"


@pytest.mark.parametrize("text", ["2026-11-22T16:30", "2026-11-22T16:00:01", "2026-11-22T16:00:00.5"])
def test_a_time_inside_an_hour_is_refused(text: str) -> None:
    with pytest.raises(HourError, match="is not a whole hour"):
        parse_hour(text)


@pytest.mark.parametrize("text", ["yesterday", "2026-11-22 16h", "", "2026-13-01T00", "2026-11-22T24"])
def test_anything_else_is_refused_with_the_expected_form(text: str) -> None:
    with pytest.raises(HourError, match="YYYY-MM-DDTHH"):
        parse_hour(text)


def test_the_trigger_form_pattern_accepts_what_parse_hour_reads() -> None:
    import re

    assert re.match(HOUR_PATTERN, "2026-11-22T16:00") and not re.match(HOUR_PATTERN, "2026-11-23")


def test_to_hour_truncates_unless_strict() -> None:
    assert to_hour(datetime(2026, 11, 22, 16, 59, 59)) == HOUR
    assert to_hour(datetime(2026, 11, 22, 17, 5, tzinfo=timezone(timedelta(hours=1)))) == HOUR
    assert to_hour(HOUR, strict=True) == HOUR
    with pytest.raises(HourError, match="not a whole hour"):
        to_hour(HOUR + timedelta(minutes=1), strict=True)


def test_an_hour_is_written_and_placed_in_utc() -> None:
    local = datetime(2026, 11, 22, 17, 20, tzinfo=timezone(timedelta(hours=1)))
    assert format_hour(local) == "2026-11-22T16"
    assert hour_path(local) == "dt=2026-11-22/hour=16"
    assert hour_path(datetime(2026, 1, 1, 5)) == "dt=2026-01-01/hour=05"  # naive: taken as UTC


def test_the_layout_places_an_hour_below_the_prefix() -> None:
    assert batch_prefix(DEFAULT_LAYOUT, "s3://in/news/", HOUR) == "s3://in/news/dt=2026-11-22/hour=16/"
    assert batch_prefix("{prefix}/{date}-{hour}/", "file:///in", HOUR) == "file:///in/2026-11-22-16/"


def test_the_layout_is_not_a_format_string() -> None:
    layout = "{prefix}/{prefix.__class__}/{hour}"
    assert (
        batch_prefix(layout, "s3://in/news", datetime(2026, 1, 1, 5)) == "s3://in/news/{prefix.__class__}/05"
    )


def test_the_delivery_layout_uses_the_same_hour_path() -> None:
    from feedrouter.delivery.layout import delivery_dir, quarantine_dir

    assert delivery_dir("titles", "news", HOUR).endswith("/" + hour_path(HOUR))
    assert quarantine_dir("news", HOUR) == "news/" + hour_path(HOUR)


def test_as_utc_converts_without_truncating() -> None:
    from feedrouter.hours import as_utc

    assert as_utc(datetime(2026, 11, 22, 16, 30)) == HOUR + timedelta(minutes=30)
    assert as_utc(datetime(2026, 11, 22, 17, 30, tzinfo=timezone(timedelta(hours=1)))) == HOUR + timedelta(
        minutes=30
    )
