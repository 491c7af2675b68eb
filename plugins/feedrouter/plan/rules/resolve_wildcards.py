"""Resolve ``*`` child steps the DTD fixes to one element name (paper 003 §3).

The name is written with the namespace every valid document gives that element; where the DTD leaves
it open (a default namespace documents may leave out, a prefix it does not fix) the ``*`` stays.
"""

from __future__ import annotations

from feedrouter.engine.nfa import WILDCARD, NavPath, NavStep
from feedrouter.lang.ast import Axis
from feedrouter.plan.optimize import RuleContext
from feedrouter.plan.patterns import Branch, PathPattern
from feedrouter.schema import DtdGraph


def resolve_wildcards(pattern: PathPattern, context: RuleContext) -> PathPattern:
    """``pattern`` with each ``*`` child step the DTD allows only one element for named after it."""
    if context.graph is None:
        return pattern
    return _resolve(pattern, context.graph, context, ())


def _resolve(pattern: PathPattern, graph: DtdGraph, context: RuleContext, at: tuple[int, ...]) -> PathPattern:
    nav, notes = _resolved_nav(pattern.nav, graph)
    for text in notes:
        context.note(at, text)
    # the steps keep their places: tests and branch fields stay as they are
    branches = tuple(
        Branch(b.field, _resolve(b.pattern, graph, context, (*at, k)), b.negated)
        for k, b in enumerate(pattern.branches)
    )
    return PathPattern(nav, pattern.base, pattern.tests, branches)


def _resolved_nav(nav: NavPath, graph: DtdGraph) -> tuple[NavPath, list[str]]:
    steps, notes = list(nav), []
    for i, step in enumerate(steps):
        if step.tag != WILDCARD or step.axis is not Axis.CHILD:
            continue
        tag = _only_child_tag(graph, steps[i - 1].tag if i else None)
        if tag is not None:
            steps[i] = NavStep(Axis.CHILD, tag)
            notes.append(f"rewrite: /* -> /{tag} (the only element the DTD allows there)")
    return tuple(steps), notes


def _only_child_tag(graph: DtdGraph, parent_tag: str | None) -> str | None:
    """The tag of the one element the DTD allows as a child of ``parent_tag`` (None: the document).

    None also when valid documents may give that element different namespaces (a DTD fixing a default
    namespace, which a document may leave out; a prefix it does not fix): a name without its namespace
    would select nothing there.
    """
    if parent_tag is None:
        candidates = frozenset({graph.root})
    else:
        parent = graph.declared_name(parent_tag)
        if parent is None:
            return None
        candidates = graph.children(parent)
    if len(candidates) != 1:
        return None
    (only,) = candidates
    return graph.element_tag(only)
