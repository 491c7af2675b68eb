"""The compiled reader of event times (feedrouter.kernel): every value it reads, it reads as the
library path of :func:`feedrouter.join.clock.parse_event_time` does, and it reads the usual forms
(the values it leaves alone, the library decides)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from feedrouter import kernel
from feedrouter.join.clock import microseconds, parse_event_micros, parse_event_time

needs_kernel = pytest.mark.skipif(
    kernel.event_time is None, reason="the compiled kernel is turned off or not built"
)


def test_the_clock_kernel_is_built_here() -> None:
    """Built by the project's own files, as the other kernels are (an optional build that failed
    quietly would leave every message's event time on the slow path)."""
    if not kernel.requested():
        pytest.skip("turned off here")
    assert kernel.event_time is not None
    assert set(kernel.EVENT_FORMATS) == {"rfc822", "iso8601"}


def _both_ways(text: str, fmt: str) -> tuple[datetime | None, datetime | None]:
    compiled = parse_event_time(text, fmt)
    with kernel.turned_off():
        reference = parse_event_time(text, fmt)
    return compiled, reference


def _same(text: str, fmt: str) -> None:
    compiled, reference = _both_ways(text, fmt)
    assert compiled == reference, text
    if reference is not None:
        assert compiled is not None and compiled.tzinfo is timezone.utc and reference.tzinfo is timezone.utc
    # the same time as microseconds since the epoch (what a routing task's batches hold)
    micros = parse_event_micros(text, fmt)
    with kernel.turned_off():
        reference_micros = parse_event_micros(text, fmt)
    assert micros == reference_micros == (None if reference is None else microseconds(reference)), text


def _digits(low: int, high: int, width: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda n: str(n).zfill(width))


def _field(draw: st.DrawFn, usual: st.SearchStrategy[str], odd: st.SearchStrategy[str]) -> str:
    """A field of a value: of the usual form seven times in eight, so that most values are the
    kernel's to read; else an odd one (out of range, another spelling, not digits)."""
    return draw(odd if draw(st.integers(0, 7)) == 0 else usual)


_ODD_NUMBERS = st.one_of(
    _digits(0, 999, 3), _digits(0, 9, 1), _digits(0, 99, 2), st.sampled_from(["\u0661\u0662", "1a", "", "-1"])
)
_DAYS = st.sampled_from(["Mon, ", "Tue, ", "Wed, ", "Thu, ", "Fri, ", "Sat, ", "Sun, ", ""])
_ODD_DAYS = st.sampled_from(["mon, ", "Mon ", "Xyz, ", "Wed , ", "Wed,", ", ", "Monday, "])
_MONTHS = st.sampled_from(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
)
_ODD_MONTHS = st.sampled_from(["jan", "DEC", "June", "Foo", "Ma", ""])
_ZONES = st.sampled_from(["GMT", "UT", "UTC", "Z", "+0000", "-0000", "+0530", "-0930", "+2359", "-2359"])
_ODD_ZONES = st.sampled_from(
    ["gmt", "EST", "PDT", "-2400", "+0060", "+1", "+00000", "", "GMT+1", "+\u0660\u0661\u0660\u0660"]
)
_SPACE = st.sampled_from(["  ", "\t", ",", ""])


@st.composite
def rfc822_values(draw: st.DrawFn) -> str:
    """Dates of the usual form and its neighbours: each field now and then out of range, in
    another spelling, or with another separator (the kernel must read the usual form exactly as
    the library does, and leave the rest to it)."""
    day = _field(draw, st.one_of(_digits(1, 31, 2), _digits(1, 31, 1)), _ODD_NUMBERS)
    year = _field(
        draw, _digits(1000, 9999, 4), st.one_of(_digits(0, 99, 2), _digits(0, 999, 4), _ODD_NUMBERS)
    )
    hour = _field(draw, _digits(0, 23, 2), st.one_of(_digits(24, 99, 2), _ODD_NUMBERS))
    clock = ":".join([hour, *(_field(draw, _digits(0, 59, 2), _ODD_NUMBERS) for _ in range(2))])
    clock = _field(draw, st.just(clock), st.sampled_from([clock[:5], clock.replace(":", ".")]))
    fields = [day, _field(draw, _MONTHS, _ODD_MONTHS), year, clock, _field(draw, _ZONES, _ODD_ZONES)]
    text = _field(draw, _DAYS, _ODD_DAYS) + " ".join(fields)
    if draw(st.integers(0, 7)) == 0:  # one separator of another kind
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(_SPACE) + text[at:]
    return _field(draw, st.just(text), st.sampled_from([text + " extra", text + "\n", "x" + text]))


@st.composite
def iso8601_values(draw: st.DrawFn) -> str:
    date = "-".join(
        [
            _field(draw, _digits(1, 9999, 4), st.one_of(_digits(0, 0, 4), _ODD_NUMBERS)),
            _field(draw, _digits(1, 12, 2), _ODD_NUMBERS),
            _field(draw, _digits(1, 31, 2), _ODD_NUMBERS),
        ]
    )
    clock = ":".join(
        [
            _field(draw, _digits(0, 23, 2), st.one_of(_digits(24, 24, 2), _ODD_NUMBERS)),
            _field(draw, _digits(0, 59, 2), _ODD_NUMBERS),
            _field(draw, _digits(0, 59, 2), _ODD_NUMBERS),
        ]
    )
    fraction = draw(st.sampled_from(["", "", "", ".5", ".25", ".123456", ".1234567", ".00000001"]))
    fraction = _field(draw, st.just(fraction), st.sampled_from([".", ".5x", ".\u0665"]))
    zone = _field(
        draw,
        st.sampled_from(["Z", "+00:00", "-00:00", "+02:00", "-05:30", "+14:00", "-14:00", "+09:45"]),
        st.sampled_from(["z", "+14:01", "-13:60", "+0200", "+2:00", "", "Z ", "Zx", "Z+01:00"]),
    )
    return date + _field(draw, st.just("T"), st.sampled_from(["t", " ", ""])) + clock + fraction + zone


@needs_kernel
@settings(max_examples=3000, deadline=None)
@given(rfc822_values())
@example("Wed, 01 May 2024 08:30:00 GMT")
@example("Sun, 31 Dec 9999 23:30:00 -0100")  # past the datetime's years in UTC
@example("Sat, 01 Jan 0001 00:30:00 +0100")
@example("Thu, 29 Feb 2024 23:59:59 -2359")
@example("Thu, 29 Feb 2023 12:00:00 GMT")
def test_rfc822_values_are_read_as_the_library_reads_them(text: str) -> None:
    _same(text, "rfc822")


@needs_kernel
@settings(max_examples=3000, deadline=None)
@given(iso8601_values())
@example("2024-05-01T08:30:00Z")
@example("9999-12-31T23:59:59-00:01")
@example("0001-01-01T00:00:00+00:01")
@example("2024-12-31T24:00:00Z")
@example("2000-02-29T12:00:00.999999999+14:00")
def test_iso8601_values_are_read_as_the_library_reads_them(text: str) -> None:
    _same(text, "iso8601")


@needs_kernel
@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("Wed, 01 May 2024 08:30:00 GMT", "rfc822"),
        ("1 May 2024 08:30:00 +0530", "rfc822"),
        ("Fri, 31 Dec 1999 23:59:59 -0000", "rfc822"),
        ("Thu, 29 Feb 2024 00:00:00 UT", "rfc822"),
        ("2024-05-01T08:30:00Z", "iso8601"),
        ("2024-05-01T10:30:00.25+02:00", "iso8601"),
        ("2024-05-01T03:00:00.1234567-05:30", "iso8601"),
    ],
)
def test_the_usual_forms_are_read_in_the_kernel(text: str, fmt: str) -> None:
    """The values a feed sends are the kernel's to read, not the library's (a kernel that left
    every value to the library would agree with it everywhere, and save nothing)."""
    assert kernel.event_time is not None
    found = kernel.event_time(text, kernel.EVENT_FORMATS[fmt])
    assert found is not None and found.tzinfo is timezone.utc
    assert kernel.event_micros is not None
    assert kernel.event_micros(text, kernel.EVENT_FORMATS[fmt]) == microseconds(found)
    _same(text, fmt)


@needs_kernel
@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("Wed, 01 May 24 08:30:00 GMT", "rfc822"),  # a two-digit year: the library's rule
        ("Wed, 01 May 2024 08:30:00 EST", "rfc822"),  # a named US zone
        ("Wed, 01 May 2024 08:30 GMT", "rfc822"),  # no seconds
        ("Wed, 31 Apr 2024 08:30:00 GMT", "rfc822"),  # no such day: the library refuses it
        ("2024-12-31T24:00:00Z", "iso8601"),  # the first instant of the next day
        ("2024-05-01T08:30:00", "iso8601"),  # no zone: refused
    ],
)
def test_other_forms_are_left_to_the_library(text: str, fmt: str) -> None:
    assert kernel.event_time is not None
    assert kernel.event_time(text, kernel.EVENT_FORMATS[fmt]) is None
    assert kernel.event_micros is not None and kernel.event_micros(text, kernel.EVENT_FORMATS[fmt]) is None
    _same(text, fmt)
