"""Join subscriptions and witness hours made by hand for the join engines' tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from feedrouter.join.plan import JoinSet
from feedrouter.join.relations import HourWitnesses, MessageRef
from feedrouter.lang import parse

IMPORT = 'import module namespace fr = "urn:feedrouter:stream:1";\n'


def join_set(*queries: str, feed: str = "f") -> JoinSet:
    """Subscriptions ``s0``, ``s1``, ... of ``feed``, one per query (the module import added)."""
    joins = JoinSet()
    for number, query in enumerate(queries):
        joins.add(f"s{number}", parse(IMPORT + query), feed)
    return joins


def bound_hour(
    joins: JoinSet, hour: datetime, leaves: Sequence[Mapping[str, tuple[str, ...]]], feed: str = "f"
) -> HourWitnesses:
    """An hour of ``feed`` in which every block of ``joins`` binds the one node of each message:
    message ``n`` at minute ``n``, its leaves' values ``leaves[n]``."""
    witnesses = HourWitnesses(feed, hour, tuple(joins.specs))
    for number, values in enumerate(leaves):
        witnesses.messages.append(MessageRef(f"m{number}.xml", 0, hour + timedelta(minutes=number)))
        for block in joins.specs:
            witnesses.roots.setdefault(block, []).append((number, 0))
        witnesses.values[(number, 0)] = dict(values)
    return witnesses
