"""Route one message, and describe a message that could not be routed.

A message either routes (``{subscription id: result bytes}``, possibly empty) or fails with a
:class:`~feedrouter.errors.DocumentError`: malformed, too large, too deep, an entity bomb, not
UTF-8, empty. Failures never stop a batch: they are counted and quarantined with
:func:`error_report`. Any other exception is a bug or an outage and propagates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from feedrouter.delivery.messages import Message
from feedrouter.errors import DocumentError


class Routes(Protocol):
    """What routes a document: a :class:`~feedrouter.Router` or a catalog ``CompiledPlan``."""

    def route(self, document: bytes, source: str | None = None) -> dict[str, bytes]: ...


@dataclass(frozen=True)
class Routed:
    """The outcome of one message: its results by subscription id, or its error."""

    message: Message
    results: dict[str, bytes] = field(default_factory=dict)
    error: DocumentError | None = None


def route_message(router: Routes, message: Message) -> Routed:
    """Route ``message``; a refused document becomes an error outcome instead of an exception."""
    if message.error is not None:
        return Routed(message, error=message.error)
    try:
        return Routed(message, router.route(message.data, source=message.label))
    except DocumentError as exc:
        return Routed(message, error=exc)


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
