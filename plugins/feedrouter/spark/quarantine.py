"""Quarantine: refused messages, copied with an error report, under the feed's quarantine prefix.

Layout below the quarantine prefix, one folder per input object::

    {feed}/dt=YYYY-MM-DD/hour=HH/{input key, one segment}/000003.xml          the message's bytes
                                                         /000003.error.json   why (code, line, column)

Keys and bytes depend only on the input, so a retried task writes the same objects again; the
driver removes what a previous run quarantined and this one did not (:func:`prune`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from feedrouter.delivery import Routed, error_report, quarantine_dir, quarantine_key
from feedrouter.delivery.messages import read_up_to
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import open_stream
from feedrouter.storage import ObjectStore


class Quarantine:
    """Writes refused messages of one batch (in a task)."""

    def __init__(self, spec: JobSpec, inputs: ObjectStore) -> None:
        self.spec = spec
        self.inputs = inputs
        self.store = spec.stores.open(spec.quarantine_uri)

    def put(self, routed: Routed) -> list[str]:
        """Copy the message (when its bytes are known and not too large) and its report; the keys."""
        message = routed.message
        data = self._copy_of(routed)
        suffix = ".xml.gz" if message.whole_object and message.source.endswith(".gz") else ".xml"
        copy = self._key(routed, suffix) if data is not None else None
        if copy is not None and data is not None:
            self.store.put(copy, data)
        report = error_report(
            routed,
            feed=self.spec.feed,
            hour=self.spec.hour_text,
            source_uri=self.inputs.uri_for(message.source),
            copy=copy,
        )
        report_key = self._key(routed, ".error.json")
        self.store.put(report_key, (json.dumps(report, indent=2, sort_keys=True) + "\n").encode("utf-8"))
        return [key for key in (copy, report_key) if key is not None]

    def _key(self, routed: Routed, suffix: str) -> str:
        message = routed.message
        return quarantine_key(self.spec.feed, self.spec.hour, message.source, message.index, suffix)

    def _copy_of(self, routed: Routed) -> bytes | None:
        """The bytes to keep: the message's; the raw object when the message could not be cut
        out; nothing for a message refused unread (too large)."""
        message = routed.message
        if message.whole_object:
            with open_stream(self.inputs, message.source) as stream:
                data = read_up_to(stream, self.spec.max_message_bytes + 1)
            return data if len(data) <= self.spec.max_message_bytes else None
        return message.data if message.error is None else None


def prune(store: ObjectStore, feed: str, hour: datetime, keep: Iterable[str]) -> int:
    """Delete what the hour's quarantine folder holds beyond ``keep``; returns how many objects."""
    folder = quarantine_dir(feed, hour)
    kept = set(keep)
    stale = [key for key in store.list(folder + "/") if key not in kept]
    for key in stale:
        store.delete(key)
    return len(stale)
