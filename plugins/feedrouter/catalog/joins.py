"""The join subscriptions of a plan build (issue 16): which are joins, what they need of the feeds.

A feed's plan build compiles, besides its ordinary subscriptions,

* its own join subscriptions (stage 2 of its hours delivers them), checked against the settings
  of the feeds they read: each must have an event time, and the window may not pass either feed's
  ``max_join_window`` (FR117, positioned at the binding or the temporal term);
* the blocks of every join subscription, of any feed, that read this feed: its router computes
  their witnesses (stage 1), and its clock block reads the messages' event time in the same pass.

The plan carries them as :class:`JoinsOfFeed`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from feedrouter import lang
from feedrouter.catalog.compiled import FeedConfig
from feedrouter.catalog.outcomes import Outcome, invalid
from feedrouter.catalog.repository import SubscriptionRecord
from feedrouter.catalog.validation import event_time_problem, has_event_time
from feedrouter.errors import ErrorDetail, FeedrouterError, Span, error
from feedrouter.join.plan import BlockSpec, JoinPlan, JoinSet, clock_block
from feedrouter.join.selections import WitnessPlans, witness_plans
from feedrouter.lang.ast import STREAM_MODULE, JoinFlwr, Subscription
from feedrouter.lang.lexer import Diagnostics
from feedrouter.lang.windows import parse_window

_log = logging.getLogger(__name__)


@dataclass
class JoinsOfFeed:
    """What a feed's plan holds for joins.

    Attributes:
        plans: the feed's own join subscriptions, by router id (delivered by its stage 2).
        specs: every block those plans read, and every block the feed's router computes.
        blocks: the ids of the blocks the feed's router computes (they read this feed).
        witnessing: the witness plans that compute them (their equality selections factored out).
        clock: the block that reads the feed's event time (None: no block reads the feed).
        event_format: the feed's event-time format.
    """

    plans: dict[str, JoinPlan] = field(default_factory=dict)
    specs: dict[str, BlockSpec] = field(default_factory=dict)
    blocks: tuple[str, ...] = ()
    witnessing: WitnessPlans = field(default_factory=WitnessPlans)
    clock: BlockSpec | None = None
    event_format: str = "iso8601"

    def __bool__(self) -> bool:
        return bool(self.plans or self.blocks)


@dataclass
class JoinCompile:
    """A build's join side: the feed's joins, the outcomes of its own join subscriptions, and the
    ids of the records that turned out to be joins (the others are compiled as usual)."""

    joins: JoinsOfFeed
    outcomes: dict[str, Outcome]
    join_ids: frozenset[str]


def might_be_join(text: str) -> bool:
    """A cheap test before parsing: a join subscription imports the stream module by its URI."""
    return STREAM_MODULE in text


def compile_joins(
    feed: FeedConfig,
    own: Sequence[SubscriptionRecord],
    foreign: Sequence[tuple[str, SubscriptionRecord]],
    feeds: Mapping[str, FeedConfig],
    explain: bool = True,
) -> JoinCompile:
    """Compile the join subscriptions a build of ``feed`` needs.

    Args:
        feed: the feed being built.
        own: its active subscriptions (the joins among them are found here).
        foreign: other feeds' active join subscriptions, with their feed's name.
        feeds: the configs of the feeds with an event time, by name.
        explain: give valid joins their explain text.
    """
    every = JoinSet()
    outcomes: dict[str, Outcome] = {}
    join_ids = set()
    for record in own:
        tree = _join_tree(record.query)
        if tree is None:
            continue
        sid = record.subscription_id
        join_ids.add(sid)
        problem = _feed_problem(sid, tree, feed.name, {**feeds, feed.name: feed})
        if problem is not None:
            outcomes[sid] = invalid(problem)
            continue
        try:
            plan = every.add(sid, tree, feed.name)  # files nothing where compiling it fails
            known = {**feeds, feed.name: feed}
            plan.lateness = max(known[name].allowed_lateness for name in plan.feeds)
            text = _explain(plan, every) if explain else None
        except Exception as exc:  # a bug of ours on one text must not cost the feed its build
            outcomes[sid] = invalid(_internal_error(sid, exc))
            continue
        outcomes[sid] = Outcome("valid", plan_text=text)
    for name, record in foreign:
        tree = _join_tree(record.query)
        if tree is None or name == feed.name:
            continue
        if _feed_problem(record.subscription_id, tree, name, feeds) is None:
            try:
                every.add(f"{name}/{record.subscription_id}", tree, name)  # only its blocks are ours
            except Exception:  # its own feed's build reports it (FR300): this build goes on
                _log.warning(
                    "join subscription %s/%s failed to compile", name, record.subscription_id, exc_info=True
                )
    return JoinCompile(_of_feed(every, feed, outcomes), outcomes, frozenset(join_ids))


def _internal_error(sid: str, exc: Exception) -> FeedrouterError:
    """FR300 for a join subscription whose compiling failed (a bug of ours), logged."""
    _log.warning("join subscription %s failed to compile", sid, exc_info=True)
    return error(
        "FR300",
        f"internal error while compiling this join subscription ({type(exc).__name__}: {exc}); the feed's "
        "other subscriptions are not affected; please report it with the subscription text",
    )


def _join_tree(text: str) -> Subscription | None:
    if not might_be_join(text):
        return None
    try:
        tree = lang.parse(text)
    except Exception:  # a syntax error, or a bug of ours: the router reports it with the text's problems
        return None
    return tree if isinstance(tree.body, JoinFlwr) else None


def _of_feed(every: JoinSet, feed: FeedConfig, outcomes: Mapping[str, Outcome]) -> JoinsOfFeed:
    plans = {sid: plan for sid, plan in every.plans.items() if sid in outcomes}
    reading = every.specs_for(feed.name)
    needed = {block for plan in plans.values() for block in plan.blocks}
    specs = {bid: spec for bid, spec in every.specs.items() if bid in needed or spec.feed == feed.name}
    found = JoinsOfFeed(plans, specs, tuple(spec.id for spec in reading), witness_plans(reading))
    event = feed.event_time
    if reading and event is not None and has_event_time(feed):
        found.clock = clock_block(feed.name, event.path)
        found.event_format = event.format
    return found


def _feed_problem(
    sid: str, tree: Subscription, own: str, feeds: Mapping[str, FeedConfig]
) -> FeedrouterError | None:
    """Why the feeds cannot serve this join (FR117, at the binding or window it is about), or None."""
    body = tree.body
    assert isinstance(body, JoinFlwr)
    window = parse_window(body.temporal.window)
    for side in (body.left, body.right):
        name = side.feed or own
        config = feeds.get(name)
        if config is None or config.event_time is None:
            why = "is not a feed with an event time" if config is None or side.feed else "has no event time"
            message = f"feed {name!r} {why}: a join reads feeds whose messages carry an event time"
            return _positioned(sid, tree.text, message, side.span)
        unusable = event_time_problem(config)
        if unusable is not None:
            return _positioned(sid, tree.text, unusable, side.span)
        if window > config.max_join_window:
            message = (
                f"the window {body.temporal.window} is longer than feed {name!r}'s max_join_window "
                f"({config.max_join_window})"
            )
            return _positioned(sid, tree.text, message, body.temporal.span)
    return None


def _positioned(sid: str, text: str, message: str, span: Span | None) -> FeedrouterError:
    excerpt = Diagnostics(text).excerpt(span.offset) if span is not None else ""
    found = error("FR117", message, span=span, source=sid, excerpt=excerpt)
    found.details = [ErrorDetail("FR117", message, span, excerpt)]
    return found


def _explain(plan: JoinPlan, every: JoinSet) -> str:
    return plan.describe(every.specs)
