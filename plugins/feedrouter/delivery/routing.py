"""The routing loop: route documents and set refused ones aside, for every caller.

:func:`route_objects` is the one loop that reads input objects as messages (:class:`~feedrouter.
delivery.messages.Splitter`: bounded gunzip, FR206 for a damaged ``.gz``, containers cut into
records), routes each message and yields its :class:`Routed` outcome. Its three callers differ only
in where outcomes go: a Spark task (:mod:`feedrouter.spark.tasks`: records for the shuffle, the
quarantine), the single-process hour run (:mod:`feedrouter.delivery.local`: in memory) and the
``feedrouter route`` command (:mod:`feedrouter.cli`: files).

A message either routes (``{subscription id: result bytes}``, possibly empty) or fails with a
:class:`~feedrouter.errors.DocumentError`: malformed, too large, too deep, an entity bomb, not
UTF-8, empty. Failures never stop a batch: they are counted and quarantined with
:func:`error_report`. Any other exception is a bug or an outage and propagates (the command line
asks for such a document to be set aside as well: ``internal_errors="reject"``).

A routed message may also leave some subscriptions without their result
(:class:`~feedrouter.errors.RoutingError` in :attr:`Routed.failures`: a result past a limit, an
internal error of one plan); each is recorded with :func:`failure_report`, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from feedrouter import heap
from feedrouter.delivery.messages import ByteReader, CountingReader, Message, Splitter
from feedrouter.errors import DocumentError, RoutingError
from feedrouter.join.witness import RowSink, WitnessRow
from feedrouter.router import RouteOutcome


class Routes(Protocol):
    """What routes a document: a :class:`~feedrouter.Router` or a catalog ``CompiledPlan``."""

    def route_outcome(
        self, document: bytes, source: str | None = None, sink: RowSink | None = None
    ) -> RouteOutcome: ...


@dataclass(frozen=True)
class Routed:
    """The outcome of one message: its results by subscription id, or its error.

    ``error`` is a :class:`~feedrouter.errors.DocumentError`, or any other exception the router
    raised when the caller asked for internal errors to be set aside too
    (``internal_errors="reject"``). ``failures`` names the subscriptions the message matched but
    that get no result for it, with why (FR310/FR311 result limits, FR312 an internal error of
    their plan).
    """

    message: Message
    results: dict[str, bytes] = field(default_factory=dict)
    error: Exception | None = None
    failures: dict[str, RoutingError] = field(default_factory=dict)
    #: the join blocks' witnesses in the message (:attr:`RouteOutcome.witnesses`), kept for stage 2
    witnesses: dict[str, list[WitnessRow]] = field(default_factory=dict)


#: What the loop does with an exception of the router that is not a DocumentError.
InternalErrors = Literal["raise", "reject"]


def route_objects(
    router: Routes,
    splitter: Splitter,
    objects: Iterable[tuple[str, ByteReader]],
    *,
    settle: bool = True,
    internal_errors: InternalErrors = "raise",
    on_read: Callable[[str, int], None] | None = None,
    sink: RowSink | None = None,
) -> Iterator[Routed]:
    """Route every message of ``objects`` in order: the one loop of every caller.

    Args:
        router: anything with ``route_outcome`` (a :class:`~feedrouter.Router`, a catalog
            ``CompiledPlan``).
        splitter: how objects are cut into messages (and gunzipped within the message limit).
        objects: ``(source key, readable stream)`` pairs; the caller opens and closes the streams.
        settle: keep the router out of the collector's full passes while the loop runs
            (:mod:`feedrouter.heap`); False where the process settled its heap for the router
            already (a Spark worker, once per decoded plan).
        internal_errors: "raise" (a bug or an outage: the batch fails, for a retry) or "reject"
            (the command line: the message is set aside with the exception, the run goes on).
        on_read: called with ``(source, bytes read)`` when an object is finished (its stored size).
        sink: a routing task's batch of witnesses, where the blocks read by a walk pack their rows
            (:meth:`feedrouter.Router.route_outcome`); the caller numbers each message in it
            (``sink.message``) before taking the next outcome.

    Yields:
        One :class:`Routed` per message, in input order.
    """
    with heap.settled() if settle else nullcontext():
        for source, stream in objects:
            counted = CountingReader(stream)
            for message in splitter.messages(source, counted):
                yield route_message(router, message, internal_errors, sink)
            if on_read is not None:
                on_read(source, counted.count)


def route_message(
    router: Routes, message: Message, internal_errors: InternalErrors = "raise", sink: RowSink | None = None
) -> Routed:
    """Route ``message``; a refused document becomes an error outcome instead of an exception."""
    if message.error is not None:
        return Routed(message, error=message.error)
    try:
        if sink is None:  # a router that packs no rows need not take a sink
            outcome = router.route_outcome(message.data, source=message.label)
        else:
            outcome = router.route_outcome(message.data, source=message.label, sink=sink)
    except DocumentError as exc:
        return Routed(message, error=exc)
    except Exception as exc:
        if internal_errors == "raise":
            raise
        return Routed(message, error=exc)  # one document must never stop the others
    return Routed(message, outcome.results, failures=outcome.failures, witnesses=outcome.witnesses)


def error_report(
    routed: Routed, *, feed: str, hour: str, source_uri: str, copy: str | None
) -> dict[str, Any]:
    """The JSON report that sits beside a quarantined message.

    Args:
        routed: the failed outcome.
        feed, hour: the batch.
        source_uri: the input object's full URI.
        copy: the key of the quarantined copy of the bytes, or None when none was kept.
    """
    error = routed.error
    message = routed.message
    return {
        "feed": feed,
        "hour": hour,
        "source": message.source,
        "source_uri": source_uri,
        "index": message.index,
        "scope": "rest of object" if message.whole_object else "message",
        "code": getattr(error, "code", None),
        "message": getattr(error, "message", str(error)),
        "line": getattr(error, "line", None),
        "column": getattr(error, "column", None),
        "bytes": len(message.data),
        "digest": message.digest if message.data else None,
        "copy": copy,
    }


def failure_report(
    routed: Routed, subscription_id: str, *, feed: str, hour: str, source_uri: str
) -> dict[str, Any]:
    """The JSON report of one subscription refused a result for a routed message.

    Args:
        routed: the message's outcome; ``subscription_id`` one of its :attr:`Routed.failures`
            (the report's ``subscription`` field).
        feed, hour: the batch.
        source_uri: the input object's full URI.
    """
    failure = routed.failures[subscription_id]
    message = routed.message
    return {
        "feed": feed,
        "hour": hour,
        "source": message.source,
        "source_uri": source_uri,
        "index": message.index,
        "scope": "subscription",
        "subscription": subscription_id,
        "code": failure.code,
        "message": failure.message,
        "bytes": len(message.data),
        "digest": message.digest if message.data else None,
    }
