"""Resolve ``*`` child steps the DTD fixes to one element name (paper 003 §3)."""

from __future__ import annotations

from feedrouter.engine.nfa import WILDCARD, NavPath, NavStep
from feedrouter.lang.ast import Axis
from feedrouter.plan.rules.names import dtd_name
from feedrouter.schema import DtdGraph


def resolve_wildcards(nav: NavPath, graph: DtdGraph) -> tuple[NavPath, list[str]]:
    steps, notes = list(nav), []
    for i, step in enumerate(steps):
        if step.tag != WILDCARD or step.axis is not Axis.CHILD:
            continue
        if i == 0:
            candidates = frozenset({graph.root})
        else:
            parent = dtd_name(graph, steps[i - 1].tag)
            if parent is None:
                continue
            candidates = graph.children(parent)
        if len(candidates) == 1:
            (only,) = candidates
            if ":" not in only:
                steps[i] = NavStep(Axis.CHILD, only)
                notes.append(f"rewrite: /* -> /{only} (the only element the DTD allows there)")
    return tuple(steps), notes
