"""Where things go: delivery folders, part names, quarantine entries, and which input keys count.

Every segment built from a catalog name or an input key goes through
:func:`feedrouter.storage.keys.component` (percent-encoding, one segment, no ``..``), and every
key through :func:`~feedrouter.storage.keys.join_key` (validated), so no name can write outside
its prefix.

>>> from datetime import datetime, timezone
>>> hour = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
>>> delivery_dir("titles", "news", hour)
'titles/news/dt=2026-11-22/hour=16'
>>> quarantine_key("news", hour, "a/b.xml", 3, ".error.json")
'news/dt=2026-11-22/hour=16/a%2Fb.xml/000003.error.json'
>>> witness_dir("news", hour)
'witnesses/news/dt=2026-11-22/hour=16'
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from feedrouter.errors import StorageError
from feedrouter.hours import as_utc as utc_hour  # the old name, kept for importers
from feedrouter.hours import format_hour, hour_path
from feedrouter.storage.keys import component, join_key

MANIFEST = "_manifest.json"
SUCCESS = "_SUCCESS"
INPUT_SUFFIXES = (".xml", ".xml.gz")
_PART = re.compile(r"part-\d{5,}\.xml")

__all__ = [
    "INPUT_SUFFIXES",
    "MANIFEST",
    "SUCCESS",
    "delivery_dir",
    "format_hour",
    "hour_path",
    "is_input_key",
    "is_part_key",
    "part_name",
    "quarantine_dir",
    "quarantine_key",
    "source_component",
    "utc_hour",
    "witness_dir",
]


def delivery_dir(subscription: str, feed: str, hour: datetime) -> str:
    """The key of one subscription's folder for one hour, below its subscriber's output prefix."""
    return join_key(component(subscription), component(feed), hour_path(hour))


def part_name(number: int) -> str:
    return f"part-{number:05d}.xml"


def is_part_key(key: str) -> bool:
    """True when the last segment of ``key`` is a part file name (``part-00000.xml``)."""
    return _PART.fullmatch(key.rsplit("/", 1)[-1]) is not None


def is_input_key(key: str) -> bool:
    """True for ``.xml``/``.xml.gz`` objects outside hidden or ``_``-prefixed folders and files.

    Producers' markers (``_SUCCESS``) and temporary folders (``_temporary``, ``.tmp``) are the
    Hadoop conventions for "not data"; they are skipped like Spark skips them.
    """
    segments = key.split("/")
    return key.endswith(INPUT_SUFFIXES) and not any(s.startswith(("_", ".")) for s in segments)


def witness_dir(feed: str, hour: datetime) -> str:
    """The key of one feed's hour of join witnesses below the state prefix (stage 1's output, read by
    the join stage of this hour and of the hours after it within the longest window)."""
    return join_key("witnesses", component(feed), hour_path(hour))


def quarantine_dir(feed: str, hour: datetime) -> str:
    """The key of one feed's hour below its quarantine prefix."""
    return join_key(component(feed), hour_path(hour))


def quarantine_key(feed: str, hour: datetime, source: str, index: int, suffix: str) -> str:
    """The key of message ``index`` of input ``source`` in quarantine (``suffix``: ".xml", ".error.json")."""
    return join_key(quarantine_dir(feed, hour), source_component(source), f"{index:06d}{suffix}")


def source_component(source: str) -> str:
    """One segment naming an input key; very long keys are named by their digest instead."""
    try:
        return component(source)
    except StorageError:
        return "sha256-" + hashlib.sha256(source.encode("utf-8")).hexdigest()
