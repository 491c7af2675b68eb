"""What a plan build produces: the compiled router of a feed and where each result goes.

A :class:`CompiledPlan` is plain picklable data. It carries, besides the router, everything the
hourly job needs to route and deliver consistently with the catalog version it was built from: the
feed's input layout and each compiled subscription's delivery target, so a subscriber changed after
the build does not get half-old, half-new treatment within one batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from feedrouter.router import Router


@dataclass(frozen=True)
class FeedConfig:
    """The feed's settings at build time (see :class:`feedrouter.catalog.models.Feed`)."""

    name: str
    input_prefix: str
    layout: str
    record_element: str | None = None
    quarantine_prefix: str | None = None
    dtd_name: str | None = None


@dataclass(frozen=True)
class Target:
    """Where the results of one compiled subscription are delivered."""

    subscription_id: int
    subscription: str
    subscriber: str
    output_prefix: str


@dataclass
class CompiledPlan:
    """A feed's router at one catalog version. ``targets`` is keyed by the router's subscription
    ids (the catalog's subscription ids as strings)."""

    feed: FeedConfig
    catalog_version: int
    router: Router
    targets: dict[str, Target] = field(default_factory=dict)
    built_at: datetime | None = None

    def route(self, document: bytes, source: str | None = None) -> dict[str, bytes]:
        """Route one document: ``{router id: result bytes}``; look ids up in :attr:`targets`."""
        return self.router.route(document, source)
