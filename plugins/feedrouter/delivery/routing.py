"""Route one message, and describe a message that could not be routed.

A message either routes (``{subscription id: result bytes}``, possibly empty) or fails with a
:class:`~feedrouter.errors.DocumentError`: malformed, too large, too deep, an entity bomb, not
UTF-8, empty. Failures never stop a batch: they are counted and quarantined with
:func:`error_report`. Any other exception is a bug or an outage and propagates.

A routed message may also leave some subscriptions without their result
(:class:`~feedrouter.errors.RoutingError` in :attr:`Routed.failures`: a result past a limit, an
internal error of one plan); each is recorded with :func:`failure_report`, never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from feedrouter.delivery.messages import Message
from feedrouter.errors import DocumentError, RoutingError
from feedrouter.router import RouteOutcome


class Routes(Protocol):
    """What routes a document: a :class:`~feedrouter.Router` or a catalog ``CompiledPlan``.

    ``route_outcome`` is optional: without it the subscriptions a document matched but could not be
    served are not known (:func:`route_message` then records none).
    """

    def route(self, document: bytes, source: str | None = None) -> dict[str, bytes]: ...

    def route_outcome(self, document: bytes, source: str | None = None) -> RouteOutcome: ...


@dataclass(frozen=True)
class Routed:
    """The outcome of one message: its results by subscription id, or its error.

    ``failures`` names the subscriptions the message matched but that get no result for it, with
    why (FR310/FR311 result limits, FR312 an internal error of their plan).
    """

    message: Message
    results: dict[str, bytes] = field(default_factory=dict)
    error: DocumentError | None = None
    failures: dict[str, RoutingError] = field(default_factory=dict)


def route_message(router: Routes, message: Message) -> Routed:
    """Route ``message``; a refused document becomes an error outcome instead of an exception."""
    if message.error is not None:
        return Routed(message, error=message.error)
    try:
        outcome = _outcome(router, message)
    except DocumentError as exc:
        return Routed(message, error=exc)
    return Routed(message, outcome.results, failures=outcome.failures)


def _outcome(router: Routes, message: Message) -> RouteOutcome:
    route_outcome = getattr(router, "route_outcome", None)
    if route_outcome is None:  # a router that cannot say which subscriptions it refused
        return RouteOutcome(router.route(message.data, source=message.label))
    return route_outcome(message.data, source=message.label)


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
    routed: Routed, subscription: str, *, feed: str, hour: str, source_uri: str
) -> dict[str, Any]:
    """The JSON report of one subscription refused a result for a routed message.

    Args:
        routed: the message's outcome; ``subscription`` one of its :attr:`Routed.failures`.
        feed, hour: the batch.
        source_uri: the input object's full URI.
    """
    failure = routed.failures[subscription]
    message = routed.message
    return {
        "feed": feed,
        "hour": hour,
        "source": message.source,
        "source_uri": source_uri,
        "index": message.index,
        "scope": "subscription",
        "subscription": subscription,
        "code": failure.code,
        "message": failure.message,
        "bytes": len(message.data),
        "digest": message.digest if message.data else None,
    }
