"""Quarantine: refused messages, copied with an error report, under the feed's quarantine prefix.

Layout below the quarantine prefix, one folder per input object::

    {feed}/dt=YYYY-MM-DD/hour=HH/{input key, one segment}/000003.xml          the message's bytes
                                                         /000003.error.json   why (code, line, column)
                                                         /000004.sub-17.error.json

The last kind is a result refused to one subscription (here subscription id ``17``) for a message that
was routed (a result past a limit, FR310/FR311; an internal error of its plan, FR312): the report
names the code, the reason, the subscription and the source, and the message is not copied (its
other subscribers were served). Subscription ids that are not short plain tokens are named by a
digest (``sub-sha256-…``); the report holds the id itself.

Keys and bytes depend only on the input, so a retried task writes the same objects again; the
driver removes what a previous run quarantined and this one did not (:func:`prune`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from feedrouter.delivery import Routed, error_report, quarantine_dir, quarantine_key
from feedrouter.delivery.messages import read_up_to
from feedrouter.delivery.routing import failure_report
from feedrouter.spark.spec import JobSpec
from feedrouter.storage import ObjectStore


class Quarantine:
    """Writes refused messages of one batch (in a task)."""

    def __init__(self, spec: JobSpec, inputs: ObjectStore) -> None:
        self.spec = spec
        self.inputs = inputs
        self.store = spec.stores.open(spec.quarantine_uri)

    def put(self, routed: Routed) -> list[str]:
        """Record what ``routed`` could not deliver; the keys written.

        A refused message: its copy (when its bytes are known and not too large) and its report. A
        routed message: one report per subscription refused its result (:attr:`Routed.failures`).
        """
        if routed.error is None:
            return [self._put_failure(routed, sid) for sid in routed.failures]
        return self._put_message(routed)

    def _put_message(self, routed: Routed) -> list[str]:
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
        self._put_report(report_key, report)
        return [key for key in (copy, report_key) if key is not None]

    def _put_failure(self, routed: Routed, subscription_id: str) -> str:
        report = failure_report(
            routed,
            subscription_id,
            feed=self.spec.feed,
            hour=self.spec.hour_text,
            source_uri=self.inputs.uri_for(routed.message.source),
        )
        key = self._key(routed, f".{subscription_tag(subscription_id)}.error.json")
        self._put_report(key, report)
        return key

    def _put_report(self, key: str, report: dict[str, Any]) -> None:
        self.store.put(key, (json.dumps(report, indent=2, sort_keys=True) + "\n").encode("utf-8"))

    def _key(self, routed: Routed, suffix: str) -> str:
        message = routed.message
        return quarantine_key(self.spec.feed, self.spec.hour, message.source, message.index, suffix)

    def _copy_of(self, routed: Routed) -> bytes | None:
        """The bytes to keep: the message's; the raw object when the message could not be cut
        out; nothing for a message refused unread (too large)."""
        message = routed.message
        if message.whole_object:
            with self.inputs.open(message.source) as stream:
                data = read_up_to(stream, self.spec.max_message_bytes + 1)
            return data if len(data) <= self.spec.max_message_bytes else None
        return message.data if message.error is None else None


_PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def subscription_tag(subscription_id: str) -> str:
    """The part of a refused result's report key that names its subscription: the id when it is a
    short plain token (the catalog's ids as text: digits), else a digest of it."""
    if _PLAIN_ID.fullmatch(subscription_id):
        return f"sub-{subscription_id}"
    return "sub-sha256-" + hashlib.sha256(subscription_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def prune(store: ObjectStore, feed: str, hour: datetime, keep: Iterable[str]) -> int:
    """Delete what the hour's quarantine folder holds beyond ``keep``; returns how many objects."""
    folder = quarantine_dir(feed, hour)
    kept = set(keep)
    stale = [key for key in store.list(folder + "/") if key not in kept]
    for key in stale:
        store.delete(key)
    return len(stale)
