"""When duplicates cannot arise and when streams are ordered (paper 000 §4, Claims 1-5).

Claims 1, 3 and 4 need the query alone; Claims 2 and 5 the DTD element graph. Each function returns
the name of the claim that proves the property, or None when none does.
"""

from __future__ import annotations

from feedrouter.engine.nfa import NavPath
from feedrouter.lang.ast import Axis
from feedrouter.plan.dtd_names import dtd_name
from feedrouter.schema import DtdGraph


def _descendant_steps(nav: NavPath, upto: int | None = None) -> list[int]:
    end = len(nav) if upto is None else upto + 1
    return [i for i in range(end) if nav[i].axis is Axis.DESCENDANT]


def no_duplicates(nav: NavPath, graph: DtdGraph | None) -> str | None:
    """Claims 1 and 2: no two path-tuples of ``nav`` share their last node."""
    desc = _descendant_steps(nav)
    if len(desc) <= 1:
        return "Claim 1"
    if graph is not None:
        names = [dtd_name(graph, nav[i].tag) for i in desc[:-1]]
        if all(n is not None and not graph.on_loop(n) for n in names):
            return "Claim 2"
    return None


def no_duplicates_on(nav: NavPath, field: int, graph: DtdGraph | None) -> str | None:
    """Claim 3: no two tuples share both their node of ``field`` and their last node."""
    head, tail = nav[: field + 1], nav[field + 1 :]
    if not tail:
        return no_duplicates(head, graph)
    if no_duplicates(head, graph) and no_duplicates(tail, graph):
        return "Claim 3"
    return None


def ordered_on(nav: NavPath, field: int, graph: DtdGraph | None) -> str | None:
    """Claims 4 and 5: the stream (ordered on its last field) is also ordered on ``field``."""
    desc = _descendant_steps(nav, field)
    if not desc:
        return "Claim 4"
    if graph is not None:
        target = dtd_name(graph, nav[field].tag)
        names = [dtd_name(graph, nav[j].tag) for j in desc]
        if target is not None and all(n is not None and not graph.same_loop(n, target) for n in names):
            return "Claim 5"
    return None
