"""The hour of a batch and where it lives: one UTC hour, written one way, placed one way.

Every package that names an hour uses this module (stdlib only, so the core, the catalog, Spark and
Airflow all can): the CLI and the trigger form read one with :func:`parse_hour`, scheduled runs
truncate theirs with :func:`to_hour`, parts, manifests and ledgers write ``2026-11-22T16``
(:func:`format_hour`), delivery and quarantine folders end in ``dt=2026-11-22/hour=16``
(:func:`hour_path`), and a feed's layout places an hour's input under its prefix
(:func:`batch_prefix`).

>>> hour = parse_hour("2026-11-22T17:00:00+01:00")
>>> format_hour(hour), hour_path(hour)
('2026-11-22T16', 'dt=2026-11-22/hour=16')
>>> batch_prefix(DEFAULT_LAYOUT, "s3://in/news/", hour)
's3://in/news/dt=2026-11-22/hour=16/'
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from feedrouter.errors import HourError

__all__ = [
    "DEFAULT_LAYOUT",
    "HOUR_FORMAT",
    "HOUR_PATH",
    "HOUR_PATTERN",
    "HourError",
    "as_utc",
    "batch_prefix",
    "format_hour",
    "hour_path",
    "parse_hour",
    "to_hour",
]

HOUR_FORMAT = "%Y-%m-%dT%H"
#: What the trigger form accepts for an hour: "2026-11-22T16", optionally ":00" or ":00:00".
HOUR_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}(:00(:00)?)?$"
#: The Hive-style partition of one hour, below a delivery folder, a quarantine or an input prefix.
HOUR_PATH = "dt={date}/hour={hour}"
#: Where a feed's hour of input is unless the feed says otherwise (``feeds.layout``).
DEFAULT_LAYOUT = "{prefix}/" + HOUR_PATH + "/"

# An ISO timestamp that names its hour: a date alone ("2026-11-23") is not read as midnight.
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}(:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}(:?\d{2})?)?", re.ASCII
)


def parse_hour(text: str) -> datetime:
    """A whole UTC hour from ``YYYY-MM-DDTHH`` or an ISO timestamp (an offset is converted).

    Raises:
        HourError: [FR608] ``text`` names no hour (a date alone, a typo) or not a whole one.

    >>> parse_hour("2026-11-22T16").isoformat()
    '2026-11-22T16:00:00+00:00'
    >>> parse_hour("2026-11-23")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    feedrouter.errors.HourError: [FR608] '2026-11-23' is not an hour: write it as YYYY-MM-DDTHH, ...
    """
    try:
        if not _TIMESTAMP.fullmatch(text):
            raise ValueError(text)
        value = datetime.strptime(text, HOUR_FORMAT) if len(text) == 13 else datetime.fromisoformat(text)
    except ValueError:
        raise HourError(f"{text!r} is not an hour: write it as YYYY-MM-DDTHH, e.g. 2026-11-22T16") from None
    return to_hour(value, strict=True, source=text)


def to_hour(value: datetime, *, strict: bool = False, source: str | None = None) -> datetime:
    """``value``'s hour, aware, in UTC (naive values are taken as UTC).

    Args:
        value: any point in time.
        strict: refuse a value that is not a whole hour instead of truncating it.
        source: how the caller's input was written, for the message.

    Raises:
        HourError: [FR608] with ``strict``, ``value`` is not a whole hour.

    >>> to_hour(datetime(2026, 11, 22, 16, 59)).isoformat()
    '2026-11-22T16:00:00+00:00'
    """
    value = as_utc(value)
    whole = value.replace(minute=0, second=0, microsecond=0)
    if strict and whole != value:
        raise HourError(f"{source or value.isoformat()!r} is not a whole hour")
    return whole


def as_utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime; a naive value is taken as UTC (Airflow hands back naive UTC
    values)."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def format_hour(hour: datetime) -> str:
    """The hour as ``2026-11-22T16`` (UTC): the form parts, manifests, reports and the CLI use."""
    return to_hour(hour).strftime(HOUR_FORMAT)


def hour_path(hour: datetime) -> str:
    """``dt=YYYY-MM-DD/hour=HH``: the partition of one hour (UTC)."""
    return _fill(HOUR_PATH, _hour_fields(hour))


def batch_prefix(layout: str, input_prefix: str, hour: datetime) -> str:
    """The URI prefix one hour of a feed arrives under: its ``layout`` with ``{prefix}`` (the feed's
    input prefix), ``{date}`` (YYYY-MM-DD) and ``{hour}`` (HH) of the UTC hour filled in.

    Plain replacement, not :meth:`str.format`: a layout typed into the catalog must not reach the
    attributes of the values through fields like ``{prefix.__class__}``.

    >>> batch_prefix("{prefix}/{date}/{hour}/", "file:///in/", datetime(2026, 1, 1, 5))
    'file:///in/2026-01-01/05/'
    """
    return _fill(layout, {"{prefix}": input_prefix.rstrip("/"), **_hour_fields(hour)})


def _hour_fields(hour: datetime) -> dict[str, str]:
    hour = to_hour(hour)
    return {"{date}": f"{hour:%Y-%m-%d}", "{hour}": f"{hour:%H}"}


def _fill(template: str, values: dict[str, str]) -> str:
    for field, value in values.items():
        template = template.replace(field, value)
    return template
