"""Stage 1 for one feed's hour, in one process: route its messages once, keep the witnesses.

The Spark tasks do the same per slice of the hour; this is the loop they share with tests and the
single-process runner. The feed's event time is a block too (:func:`~feedrouter.join.plan.
clock_block`), read in the same pass as every subscription.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from feedrouter.errors import DocumentError
from feedrouter.join.clock import microseconds, parse_event_micros, parse_event_time
from feedrouter.join.plan import BlockSpec
from feedrouter.join.relations import (
    ONE_HOUR,
    HourWitnesses,
    MessageRef,
    admitted,
    message_rows,
    message_witnesses,
)
from feedrouter.join.selections import WitnessPlans
from feedrouter.join.witness import WitnessRow


class Witnessed(Protocol):
    """What routing a message gives stage 1 (a :class:`~feedrouter.router.RouteOutcome`)."""

    @property
    def witnesses(self) -> Mapping[str, Sequence[WitnessRow]]: ...


class RoutesWitnesses(Protocol):
    """A router with the feed's blocks compiled in (:meth:`~feedrouter.router.Router.add_witness`)."""

    def route_outcome(self, document: bytes, source: str | None = None) -> Witnessed: ...


def event_time(witnesses: Mapping[str, Sequence[WitnessRow]], clock: BlockSpec, fmt: str) -> datetime | None:
    """The message's event time: the first value the clock block read, parsed in the feed's format."""
    return parse_event_time(_clock_value(witnesses, clock), fmt)


def _clock_value(witnesses: Mapping[str, Sequence[WitnessRow]], clock: BlockSpec) -> str | None:
    """The first value the clock block read of a message, or None."""
    rows = witnesses.get(clock.id)
    if not rows or not rows[0].values or not rows[0].values[0]:
        return None
    return rows[0].values[0][0]


def joinable_time(
    witnesses: Mapping[str, Sequence[WitnessRow]],
    clock: BlockSpec,
    fmt: str,
    hour: datetime,
    lateness: timedelta,
) -> datetime | None:
    """The event time joins may use of a message routed in ``hour``: its clock's value parsed in
    the feed's format (:func:`event_time`) and admitted in the hour (:func:`~feedrouter.join.
    relations.admitted`); None when it is missing, unparsable or outside the hour and its lateness."""
    return admitted(event_time(witnesses, clock, fmt), hour, lateness)


def joinable_micros(
    witnesses: Mapping[str, Sequence[WitnessRow]], clock: BlockSpec, fmt: str, earliest: int, end: int
) -> int | None:
    """:func:`joinable_time` as microseconds since the epoch (a routing task's batches hold it
    so, :class:`~feedrouter.join.batches.BatchBuilder`): the clock's first value parsed
    (:func:`~feedrouter.join.clock.parse_event_micros`), admitted when it is at least ``earliest``
    and before ``end`` (the hour's :func:`~feedrouter.join.relations.admitted` bounds, in
    microseconds: :func:`admitted_bounds`)."""
    time = parse_event_micros(_clock_value(witnesses, clock), fmt)
    return time if time is not None and earliest <= time < end else None


def admitted_bounds(hour: datetime, lateness: timedelta) -> tuple[int, int]:
    """The event times a message routed in ``hour`` may have for joins to use it, in microseconds
    since the epoch: from the first (included) to the second (excluded), as
    :func:`~feedrouter.join.relations.admitted` admits them."""
    return microseconds(hour - lateness), microseconds(hour + ONE_HOUR)


def collect_hour(
    router: RoutesWitnesses,
    feed: str,
    hour: datetime,
    messages: Iterable[tuple[str, bytes]],
    plans: WitnessPlans,
    clock: BlockSpec,
    fmt: str,
    lateness: timedelta,
    by_block: bool = True,
) -> HourWitnesses:
    """Route ``(key, bytes)`` messages of ``feed``'s ``hour`` in stream order and keep their
    witnesses (``router`` compiled ``plans``' bases and ``clock``): filed by block, or each
    witness plan's rows whole (not ``by_block``: what stage 1 writes in the state's format 2,
    :meth:`~feedrouter.join.selections.WitnessPlans.collect`). A document the router refuses takes
    part in no join (its delivery path quarantines it); it still has its place in the stream,
    with no time."""
    found = HourWitnesses(feed, hour)
    for key, data in messages:
        try:
            witnesses = router.route_outcome(data, source=key).witnesses
        except DocumentError:
            witnesses, time = {}, None
        else:
            time = joinable_time(witnesses, clock, fmt, hour, lateness)
        keep = message_witnesses if by_block else message_rows
        found.append(keep(MessageRef(key, 0, time), witnesses, plans))
    return found
