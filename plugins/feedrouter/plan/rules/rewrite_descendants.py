"""Rewrite superfluous ``//`` steps into ``/`` (paper 000 §5.1, paper 003 §3).

``p//t`` is ``p/t`` when the DTD lets ``t`` occur below ``p`` only as a direct child. Equivalent
paths then share one NFA path and one stream. The number of steps never changes, so field numbers
(and the joins that use them) stay valid.
"""

from __future__ import annotations

from feedrouter.engine.nfa import NavPath, NavStep
from feedrouter.lang.ast import Axis
from feedrouter.plan.rules.names import dtd_name
from feedrouter.schema import DtdGraph


def rewrite_descendants(nav: NavPath, graph: DtdGraph) -> tuple[NavPath, list[str]]:
    steps, notes = list(nav), []
    for i, step in enumerate(steps):
        if step.axis is not Axis.DESCENDANT:
            continue
        name = dtd_name(graph, step.tag)
        context = _context(graph, steps, i)
        if name is None or context is False:
            continue
        if graph.child_chains(context, name) == frozenset({(name,)}):  # type: ignore[arg-type]
            steps[i] = NavStep(Axis.CHILD, step.tag)
            where = "the document" if context is None else f"'{context}'"
            notes.append(
                f"rewrite: //{name} -> /{name} (the DTD allows '{name}' below {where} only as a child)"
            )
    return tuple(steps), notes


def _context(graph: DtdGraph, steps: list[NavStep], i: int) -> str | bool | None:
    """The element the step before ``i`` binds (None: the document node; False: not known)."""
    if i == 0:
        return None
    name = dtd_name(graph, steps[i - 1].tag)
    return False if name is None else name
