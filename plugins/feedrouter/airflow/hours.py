"""Batches as the route DAG passes them between tasks: plain, JSON-ready values.

A batch is ``{"feed": "news", "hour": "2026-11-22T16"}``; the hour is read and written by
:mod:`feedrouter.hours` (re-exported here for the DAG files and the trigger form's pattern).

>>> HourBatch.from_dict({"feed": "news", "hour": "2026-11-22T16"}).label
'news 2026-11-22T16'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from feedrouter.hours import HOUR_FORMAT, HOUR_PATTERN, HourError, format_hour, parse_hour, to_hour

__all__ = ["HOUR_FORMAT", "HOUR_PATTERN", "HourBatch", "HourError", "format_hour", "parse_hour", "to_hour"]


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
