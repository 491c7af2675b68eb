"""The single-process hour run: route an hour's objects in one process, in input order.

It runs the routing loop of the Spark tasks (:func:`~feedrouter.delivery.routing.route_objects`)
over all the objects and keeps the outcomes in memory: results by subscription, refused messages,
refused results. Tests build the expected deliveries of a Spark batch with it (same
splitter, same routing, same part writer: byte-equal by construction) and the benchmark uses it
as the plain-loop baseline.

Example:
    >>> import io
    >>> from feedrouter import Router
    >>> run = route_locally(Router.compile([("s", "//b")]), Splitter("m"),
    ...                     [("x.xml", io.BytesIO(b"<all><m><b/></m><m><c/></m></all>"))])
    >>> run.documents, [(r.source, r.index, r.body) for r in run.results["s"]]
    (2, [('x.xml', 0, b'<b/>')])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from feedrouter.delivery.messages import ByteReader, Splitter
from feedrouter.delivery.parts import DEFAULT_MAX_PART_BYTES, Part, PartHeader, Result, write_parts
from feedrouter.delivery.routing import Routed, Routes, route_objects
from feedrouter.errors import RoutingError


@dataclass(frozen=True)
class Refused:
    """One subscription refused its result for one message (a result limit, an internal error)."""

    source: str
    index: int
    digest: str
    subscription_id: str
    error: RoutingError


@dataclass
class HourRun:
    """An hour routed in one process: results by subscription id in input order, and failures.

    ``rejected`` holds the messages that could not be routed at all, ``refused`` the results a
    routed message matched but did not deliver, one per (message, subscription), in input order.
    """

    results: dict[str, list[Result]] = field(default_factory=dict)
    rejected: list[Routed] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    documents: int = 0
    bytes: int = 0

    @property
    def matches(self) -> int:
        return sum(len(results) for results in self.results.values())

    def refused_by_code(self) -> dict[str, int]:
        """How many results were refused, by error code."""
        counts: dict[str, int] = {}
        for refused in self.refused:
            counts[refused.error.code] = counts.get(refused.error.code, 0) + 1
        return counts

    def read(self, source: str, size: int) -> None:
        """Count an object's stored bytes once it has been read."""
        self.bytes += size

    def add(self, routed: Routed) -> None:
        """Keep one message's outcome: its results, or it as rejected, and its refused results."""
        self.documents += 1
        if routed.error is not None:
            self.rejected.append(routed)
            return
        message = routed.message
        for sid, body in routed.results.items():
            result = Result(message.source, message.index, message.digest, body)
            self.results.setdefault(sid, []).append(result)
        for sid, failure in routed.failures.items():
            self.refused.append(Refused(message.source, message.index, message.digest, sid, failure))

    def parts(
        self, header_for: Callable[[str], PartHeader], max_bytes: int = DEFAULT_MAX_PART_BYTES
    ) -> dict[str, list[Part]]:
        """The part files of every subscription with results (``header_for``: id -> its header)."""
        return {
            sid: list(write_parts(header_for(sid), results, max_bytes))
            for sid, results in self.results.items()
        }


def route_locally(router: Routes, splitter: Splitter, objects: Iterable[tuple[str, ByteReader]]) -> HourRun:
    """Route the messages of ``objects`` (``(key, stream)`` pairs, in key order) in this process."""
    run = HourRun()
    for routed in route_objects(router, splitter, objects, on_read=run.read):
        run.add(routed)
    return run
