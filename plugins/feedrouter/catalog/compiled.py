"""What a plan build produces: the compiled router of a feed and where each result goes.

A :class:`CompiledPlan` is plain picklable data. It carries, besides the router, everything the
hourly job needs to route and deliver consistently with the catalog version it was built from: the
feed's input layout and each compiled subscription's delivery target, so a subscriber changed after
the build does not get half-old, half-new treatment within one batch.

Plans are pickled (:mod:`feedrouter.catalog.artifact`): a field added to these classes needs a
default, which an artifact pickled before it existed reads back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from feedrouter.limits import (
    DEFAULT_ALLOWED_LATENESS,
    DEFAULT_MAX_DOCUMENT_RESULT_BYTES,
    DEFAULT_MAX_JOIN_PAIRS,
    DEFAULT_MAX_JOIN_RESULT_BYTES,
    DEFAULT_MAX_JOIN_WINDOW,
    DEFAULT_MAX_RESULT_BYTES,
    JoinLimits,
    ResultLimits,
)
from feedrouter.router import RouteOutcome, Router

if TYPE_CHECKING:
    from feedrouter.catalog.joins import JoinsOfFeed
    from feedrouter.join.witness import RowSink


@dataclass(frozen=True)
class EventTime:
    """Where a feed's messages keep their event time, and the join bounds of the feed.

    Attributes:
        path: An absolute XPath, evaluated from the document node, to the event-time value.
        format: How the value is written, one of :data:`feedrouter.join.clock.FORMATS`.
        max_join_window: The longest window a join subscription on the feed may use.
        allowed_lateness: How long after its event time a message may arrive and still join.
    """

    path: str
    format: str = "iso8601"
    max_join_window: timedelta = DEFAULT_MAX_JOIN_WINDOW
    allowed_lateness: timedelta = DEFAULT_ALLOWED_LATENESS

    @property
    def lookback(self) -> timedelta:
        """How far back of an hour a join stage reads witnesses: the window plus the lateness."""
        return self.max_join_window + self.allowed_lateness


@dataclass(frozen=True)
class FeedConfig:
    """The feed's settings at build time (see :class:`feedrouter.catalog.models.Feed`).

    ``id`` is the catalog's feed id (None for plans made outside a catalog); the artifact records it
    with the name, and loading checks both against the feed asked for (FR306). The ``event_time_*``,
    ``max_join_window`` and ``allowed_lateness`` fields are the feed's join settings, read together
    as :attr:`event_time`.
    """

    name: str
    input_prefix: str
    layout: str
    record_element: str | None = None
    quarantine_prefix: str | None = None
    dtd_name: str | None = None
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    max_document_result_bytes: int = DEFAULT_MAX_DOCUMENT_RESULT_BYTES
    invalid_documents: str = "fallback"
    id: int | None = None
    event_time_path: str | None = None
    event_time_format: str = "iso8601"
    max_join_window: timedelta = DEFAULT_MAX_JOIN_WINDOW
    allowed_lateness: timedelta = DEFAULT_ALLOWED_LATENESS
    max_join_pairs: int = DEFAULT_MAX_JOIN_PAIRS
    max_join_result_bytes: int = DEFAULT_MAX_JOIN_RESULT_BYTES

    @property
    def event_time(self) -> EventTime | None:
        """The feed's event-time settings, or None when it has no event-time path (no joins).

        Whether the path is one a join can use is :func:`feedrouter.catalog.validation.has_event_time`.
        """
        if self.event_time_path is None:
            return None
        return EventTime(
            self.event_time_path, self.event_time_format, self.max_join_window, self.allowed_lateness
        )

    @property
    def quarantine_uri(self) -> str:
        """Where refused messages go: ``quarantine_prefix``, else ``_quarantine`` below the input."""
        return self.quarantine_prefix or f"{self.input_prefix.rstrip('/')}/_quarantine"

    @property
    def result_limits(self) -> ResultLimits:
        """The feed's caps on result bytes, per subscription and per document."""
        return ResultLimits(self.max_result_bytes, self.max_document_result_bytes)

    @property
    def join_limits(self) -> JoinLimits:
        """The feed's caps on what one join subscription receives: a pair's result is held to
        ``max_result_bytes`` as one document's result is, an hour to its pairs and bytes."""
        return JoinLimits(self.max_result_bytes, self.max_join_pairs, self.max_join_result_bytes)


@dataclass(frozen=True)
class Target:
    """Where the results of one compiled subscription are delivered. ``catalog_id`` is the
    subscription's row id in the catalog; the router's key for it is ``str(catalog_id)``."""

    catalog_id: int
    subscription: str
    subscriber: str
    output_prefix: str


@dataclass(frozen=True)
class PlanSummary:
    """What the batch driver needs of a plan build, without the router: the feed's settings as
    the build saw them and each subscription's delivery target (keyed like
    :attr:`CompiledPlan.targets`). Artifacts store it apart, so the driver reads it without
    unpickling the router."""

    feed: FeedConfig
    catalog_version: int
    targets: dict[str, Target] = field(default_factory=dict)
    built_at: datetime | None = None
    #: the plan's joins (issue 16), for the join stage and for what stage 1 writes
    joins: JoinsOfFeed | None = None


@dataclass
class CompiledPlan:
    """A feed's router at one catalog version. ``targets`` is keyed by the router's subscription
    ids (the catalog's subscription ids as strings)."""

    feed: FeedConfig
    catalog_version: int
    router: Router
    targets: dict[str, Target] = field(default_factory=dict)
    built_at: datetime | None = None
    #: join subscriptions (issue 16): the feed's own, and the blocks its router computes
    joins: JoinsOfFeed | None = None

    @property
    def summary(self) -> PlanSummary:
        """The plan without its router (what the batch driver reads)."""
        return PlanSummary(self.feed, self.catalog_version, self.targets, self.built_at, self.joins)

    def route(self, document: bytes, source: str | None = None) -> dict[str, bytes]:
        """Route one document: ``{router id: result bytes}``; look ids up in :attr:`targets`."""
        return self.router.route(document, source)

    def route_outcome(
        self, document: bytes, source: str | None = None, sink: RowSink | None = None
    ) -> RouteOutcome:
        """Route one document and say what each matched subscription gets: its result, or why not
        (a result limit of the feed, FR310/FR311; an internal error of its plan, FR312). See
        :meth:`feedrouter.Router.route_outcome` (``sink``: a routing task's batch of witnesses);
        ids are the router's, as in :attr:`targets`."""
        return self.router.route_outcome(document, source, sink)
