"""Whole-plan sharing: subscriptions whose plans are identical are evaluated once per document.

Large populations repeat themselves: many subscribers ask for the same stories, and many texts that
differ in spelling (variable names, whitespace, ``//`` the DTD makes superfluous, a ``*`` the DTD
fixes) lower to the same plan. Two subscription plans are identical when their structural
:attr:`~feedrouter.plan.results.SubscriptionPlan.signature` is: the same main pattern, the same
return items and the same result template. A :class:`PlanGroup` holds such subscriptions; the
selection index files the group, not each member, so a document evaluates the plan and builds the
result bytes once and hands the same bytes object to every member (paper 000 §6.6: "queries sharing
query plans with others do not incur extra cost").
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from feedrouter.plan.index import Probe
    from feedrouter.plan.results import SubscriptionPlan


@dataclass(eq=False)
class PlanGroup:
    """Subscriptions with one signature; ``plan`` is a member's plan that stands for all of them."""

    signature: Hashable
    plan: SubscriptionPlan
    members: dict[str, SubscriptionPlan] = field(default_factory=dict)  # sid -> plan, in add order
    probe: Probe | None = None  # where the selection index files the group (None: by binding path)
    # every (path, probe) it is filed under: one per alternative of a union (DNF), else one
    entries: list[tuple[int, Probe | None]] = field(default_factory=list)
    # each entry's indexable tests, the choices the index may file it under (Router.reindex)
    options: list[list[Probe]] = field(default_factory=list)
    # the tests besides the filed one that a candidate must pass before its plan runs (one entry)
    checks: tuple[Probe, ...] = ()
    # the members that are join blocks' witness plans (Router.add_witness), found without a scan
    witnesses: tuple[str, ...] = ()


class SharedPlans:
    """The groups of a router, by signature, maintained as subscriptions come and go."""

    def __init__(self) -> None:
        self._groups: dict[Hashable, PlanGroup] = {}

    def join(self, plan: SubscriptionPlan) -> tuple[PlanGroup, bool]:
        """File ``plan`` with the subscriptions that share its signature; True when the group is new."""
        signature = plan.signature
        group = self._groups.get(signature)
        created = group is None
        if group is None:
            group = self._groups[signature] = PlanGroup(signature, plan)
        group.members[plan.sid] = plan
        return group, created

    def leave(self, plan: SubscriptionPlan) -> tuple[PlanGroup, bool]:
        """Take ``plan`` out of its group; True when the group is now empty (and dropped)."""
        group = self._groups[plan.signature]
        del group.members[plan.sid]
        if not group.members:
            del self._groups[plan.signature]
            return group, True
        if group.plan is plan:
            # the remaining members' plans are structurally the same: any of them stands in
            group.plan = next(iter(group.members.values()))
        return group, False

    def group_of(self, plan: SubscriptionPlan) -> PlanGroup:
        return self._groups[plan.signature]

    def __len__(self) -> int:
        return len(self._groups)

    def groups(self) -> list[PlanGroup]:
        """The groups, in the order they were created."""
        return list(self._groups.values())
