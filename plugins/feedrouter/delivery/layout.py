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
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone

from feedrouter.errors import StorageError
from feedrouter.storage.keys import component, join_key

MANIFEST = "_manifest.json"
SUCCESS = "_SUCCESS"
INPUT_SUFFIXES = (".xml", ".xml.gz")
_PART = re.compile(r"part-\d{5,}\.xml")


def utc_hour(hour: datetime) -> datetime:
    """``hour`` as an aware UTC datetime (naive values are taken as UTC)."""
    return hour.replace(tzinfo=timezone.utc) if hour.tzinfo is None else hour.astimezone(timezone.utc)


def format_hour(hour: datetime) -> str:
    """The hour as ``2026-11-22T16`` (UTC), the form parts, manifests and the CLI use."""
    return f"{utc_hour(hour):%Y-%m-%dT%H}"


def hour_path(hour: datetime) -> str:
    """``dt=YYYY-MM-DD/hour=HH``: the Hive-style partition of one hour (UTC)."""
    hour = utc_hour(hour)
    return f"dt={hour:%Y-%m-%d}/hour={hour:%H}"


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
