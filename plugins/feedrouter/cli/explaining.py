"""``feedrouter explain`` in the user's words: what a subscription shares with the others, why it
is fast, and what the feed's DTD let it skip, before the paper's terms (:meth:`Router.explain`).

It reads the same compiled plans as :meth:`Router.explain` (the router's plan table and plan
groups); the phrases of the plan's notes it recognizes are listed in :data:`_FAST_NOTES`.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from feedrouter.console import escape_name
from feedrouter.engine.nfa import format_path
from feedrouter.errors import error

if TYPE_CHECKING:
    from feedrouter import Router
    from feedrouter.plan.index import Probe
    from feedrouter.plan.results import SubscriptionPlan


def check_known(path: Path, ids: list[str], wanted_id: str) -> None:
    """FR301 naming the file (and the ids spelled closest) for an id the file does not have."""
    if wanted_id in ids:
        return
    close = difflib.get_close_matches(wanted_id, ids, n=3)
    hint = f"; did you mean {', '.join(repr(escape_name(c)) for c in close)}?" if close else ""
    raise error("FR301", f"{escape_name(path)} has no subscription {escape_name(wanted_id)!r}{hint}")


def plain_explanation(router: Router, sid: str, *, with_dtd: bool) -> list[str]:
    """What a user asks first, without the paper's vocabulary: what the subscription shares with
    the others, why it is fast, and what the DTD let it skip (or that there was none)."""
    plan, group = router.compiled(sid)
    lines = [f"subscription {escape_name(sid)}:", "  shared with other subscriptions:"]
    lines += [f"    {line}" for line in _shared_parts(router, plan, len(group.members) - 1)]
    lines.append("  why it is fast:")
    lines += [f"    {line}" for line in _fast_parts(router, plan, group.probe)]
    lines.append("  what the DTD let it skip:" if with_dtd else "  the DTD:")
    lines += [f"    {line}" for line in _dtd_parts(plan, with_dtd)]
    return lines


def _shared_parts(router: Router, plan: SubscriptionPlan, same_plan: int) -> list[str]:
    states: set[int] = set()
    for held in plan.held:
        for pattern in held.pattern.walk():
            states.update(router.nfa.states_of(pattern.nav)[1:])
    shared = sum(1 for state in states if router.nfa.sharing_of(state) > 1)
    parts = [
        f"{shared} of the {len(states)} element steps it matches are matched once per document for "
        "every subscription that walks them too"
    ]
    if same_plan:
        parts.append(
            f"{same_plan} other subscription(s) ask for exactly the same result: it is built once "
            "and the same bytes go to each"
        )
    else:
        parts.append("no other subscription asks for exactly the same result")
    return parts


def _fast_parts(router: Router, plan: SubscriptionPlan, probe: Probe | None) -> list[str]:
    parts = [] if probe is None else [_probe_part(router, probe)]
    notes = " ".join(plan.main.describe())
    for phrase, part in _FAST_NOTES:
        if phrase in notes:
            parts.append(part)
    parts.append("each document is parsed once and walked once for all subscriptions together")
    return parts


#: A phrase of the paper's plan notes, and what it means for the user.
_FAST_NOTES = (
    (
        "shared join",
        "its comparison runs in one pass per document shared by every subscription comparing that field",
    ),
    (
        "merge semijoin",
        "conditions on other elements are checked by merging two lists already in document order",
    ),
    ("DupElim removed", "its matches cannot repeat, so no duplicate removal is done"),
)


def _probe_part(router: Router, probe: Probe) -> str:
    """Where the selection index files the subscription, said as the test a document must pass."""
    site = probe.site
    steps = format_path(router.nfa.path(site.pid))
    where = steps if site.last else f"step {site.field + 1} of {steps}"
    what = {"@cmp": f"attribute @{site.attribute}", "text()cmp": "text"}.get(site.kind.value, "value")
    how = "one hash look-up" if probe.op.value == "=" else "one binary search"
    return (
        f"its plan runs only for documents where {where} has {what} {probe.op.value} {probe.key!r}: "
        f"{how} per document finds every subscription waiting for such a value"
    )


def _dtd_parts(plan: SubscriptionPlan, with_dtd: bool) -> list[str]:
    if not with_dtd:
        return ["none given: pass the feed's --dtd to see which '//' and '*' searches it lets the plan skip"]
    parts = [_rewrite_part(note) for note in plan.notes if note.startswith("rewrite: ")]
    if plan.warning is not None:
        parts.append(f"it can never match a document valid under the DTD: {plan.warning.message}")
    return parts or ["nothing: the DTD fixes none of its '//' or '*' steps"]


def _rewrite_part(note: str) -> str:
    """``rewrite: //t -> /a/t (reason)`` as what the user gains: a step followed, not searched."""
    found = re.fullmatch(r"rewrite: (.+?) -> (.+?) \((.+)\)", note)
    if found is None:
        return note.removeprefix("rewrite: ")
    written, fixed, reason = found.groups()
    return f"{written} can only be {fixed} ({reason}): followed step by step, not searched"
