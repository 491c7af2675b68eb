"""What every task of a batch needs to know, shipped with the tasks (small, plain, picklable).

The router is not in here: the spec names its artifact in the plans store (:class:`ArtifactRef`),
and each Python worker process of the routing stage reads it from there and decodes it once,
digest-checked (:func:`feedrouter.spark.tasks.plan_for`); nothing is broadcast, so the same job
runs on Spark Connect. What the driver and the delivery stage need of the plan build (the feed's
settings, each subscription's delivery target) is in here, so neither unpickles the router.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from feedrouter.delivery import PlanRef, format_hour
from feedrouter.spark.errors import InjectedFailure
from feedrouter.spark.stores import StoreOpener

if TYPE_CHECKING:
    from feedrouter.catalog.compiled import Target


@dataclass(frozen=True)
class Fault:
    """A test hook: the first task of ``phase`` that finds the file ``flag`` removes it and fails.

    Removing the file is atomic, so exactly one attempt fails and its retry succeeds. The file must
    be visible to the driver and the executors (local mode, or a cluster on one machine).
    "deliver" fails after a subscription's parts are written, before its manifest.
    """

    phase: Literal["route", "deliver"]
    flag: str


def maybe_fail(fault: Fault | None, phase: str) -> None:
    """Raise :class:`InjectedFailure` once when ``fault`` asks for it in this phase."""
    if fault is None or fault.phase != phase:
        return
    try:
        os.remove(fault.flag)
    except FileNotFoundError:
        return
    raise InjectedFailure(f"injected failure in the {phase} phase (flag {fault.flag})")


@dataclass(frozen=True)
class ArtifactRef:
    """Where the tasks read the plan build's artifact: the plans store's URI and the key in it."""

    store_uri: str
    key: str


@dataclass(frozen=True)
class JobSpec:
    """One batch as its tasks see it.

    Attributes:
        feed: the feed's name.
        hour: the hour (UTC).
        input_uri: the hour's input prefix (the feed's prefix and layout).
        quarantine_uri: where refused messages go (the feed's quarantine prefix).
        plan: the plan build the batch routes with.
        stores: how tasks open stores.
        max_part_bytes: the size a part file may reach.
        max_message_bytes: larger messages are quarantined unread.
        fault: a test hook, None in production.
        targets: each subscription's delivery target by router id, as the plan build saw it
            (:attr:`CompiledPlan.targets <feedrouter.catalog.CompiledPlan.targets>`); None: the
            delivery tasks decode the plan to find them.
        artifact: where tasks read the plan's artifact (checked against ``plan.digest``); None
            only for callers that hand the tasks the artifact's bytes themselves.
        state_uri: where the hour's join witnesses go (:mod:`feedrouter.spark.witnesses`); None:
            the plan has no join block.
    """

    feed: str
    hour: datetime
    input_uri: str
    quarantine_uri: str
    plan: PlanRef
    stores: StoreOpener
    max_part_bytes: int
    max_message_bytes: int
    fault: Fault | None = None
    targets: dict[str, Target] | None = None
    artifact: ArtifactRef | None = None
    state_uri: str | None = None
    witness_blocks: tuple[str, ...] = ()  # the join blocks the plan computes (with state_uri)
    #: per block, the names of the leaves and fragments its rows hold (what the hour will cover)
    witness_coverage: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: per block, the witness plan whose rows the join stage files it from (the state's format 2:
    #: stage 1 writes the plans' rows whole); empty: stage 1 files them by block (format 1)
    witness_roots: tuple[tuple[str, str], ...] = ()
    #: per witness plan, the names of the leaves and fragments its rows hold (format 2: recorded
    #: with the hour, so that a block added later is filed from them without routing it again)
    witness_plans: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    witnesses_only: bool = False  # a back-fill: write the hour's witnesses, deliver nothing

    def without_targets(self) -> JobSpec:
        """This spec for the routing tasks, which have no use for the targets (smaller tasks)."""
        return replace(self, targets=None) if self.targets is not None else self

    @property
    def hour_text(self) -> str:
        return format_hour(self.hour)
