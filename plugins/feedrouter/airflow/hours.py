"""Hours and batches as the route DAG passes them between tasks: plain, JSON-ready values.

An hour is written ``2026-11-22T16`` (UTC), the form ``feedrouter route-batch --hour`` takes; a
batch is ``{"feed": "news", "hour": "2026-11-22T16"}``.

>>> parse_hour("2026-11-22T16").isoformat()
'2026-11-22T16:00:00+00:00'
>>> format_hour(parse_hour("2026-11-22T16:00:00+01:00"))
'2026-11-22T15'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from feedrouter.errors import HourError

HOUR_FORMAT = "%Y-%m-%dT%H"
#: What the trigger form accepts for an hour: "2026-11-22T16", optionally ":00" or ":00:00".
HOUR_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}(:00(:00)?)?$"

__all__ = ["HourBatch", "HourError", "format_hour", "parse_hour", "to_hour"]


def parse_hour(text: str) -> datetime:
    """A whole UTC hour from ``YYYY-MM-DDTHH`` or an ISO timestamp (an offset is converted)."""
    try:
        value = datetime.strptime(text, HOUR_FORMAT) if len(text) == 13 else datetime.fromisoformat(text)
    except ValueError:
        raise HourError(f"{text!r} is not an hour: write it as YYYY-MM-DDTHH, e.g. 2026-11-22T16") from None
    return to_hour(value, strict=True, source=text)


def to_hour(value: datetime, *, strict: bool = False, source: str | None = None) -> datetime:
    """``value`` in UTC; with ``strict``, refuse anything but a whole hour."""
    value = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    whole = value.replace(minute=0, second=0, microsecond=0)
    if strict and whole != value:
        raise HourError(f"{source or value.isoformat()!r} is not a whole hour")
    return whole


def format_hour(hour: datetime) -> str:
    return to_hour(hour).strftime(HOUR_FORMAT)


@dataclass(frozen=True)
class HourBatch:
    """One feed's one hour: what one mapped route task works on."""

    feed: str
    hour: datetime

    @property
    def end(self) -> datetime:
        return self.hour + timedelta(hours=1)

    @property
    def label(self) -> str:
        """How the batch is named in task lists and logs: ``news 2026-11-22T16``."""
        return f"{self.feed} {format_hour(self.hour)}"

    def to_dict(self) -> dict[str, str]:
        return {"feed": self.feed, "hour": format_hour(self.hour)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HourBatch:
        return cls(str(data["feed"]), parse_hour(str(data["hour"])))
