"""Rewrite superfluous ``//`` steps into the deterministic ``/`` chain (paper 000 §5.1, paper 003 §3).

``p//t`` is ``p/c1/.../ck/t`` when the DTD allows exactly one chain of elements from ``p`` down to a
``t`` (``k = 0``: ``t`` occurs below ``p`` only as a child). Equivalent paths then share one NFA path
and one stream, child-only paths enumerate their path-tuples without search, and Claims 1-5 see fewer
``//`` steps. The chain adds steps, so the tests, branches and base of the pattern that refer to
fields are renumbered. The chain's elements are written with the namespace every valid document gives
them; where the DTD leaves that open (a default namespace documents may leave out, a prefix it does not
fix) the step stays.
"""

from __future__ import annotations

from feedrouter.engine.nfa import NavPath, NavStep
from feedrouter.lang.ast import Axis
from feedrouter.plan.optimize import RuleContext
from feedrouter.plan.patterns import Branch, PathPattern, renumbered
from feedrouter.schema import DtdGraph


def rewrite_descendants(pattern: PathPattern, context: RuleContext) -> PathPattern:
    """``pattern`` with each ``//`` step the DTD fixes to one chain of child steps expanded into it."""
    if context.graph is None:
        return pattern
    return _rewrite(pattern, context.graph, context, ())


def _rewrite(pattern: PathPattern, graph: DtdGraph, context: RuleContext, at: tuple[int, ...]) -> PathPattern:
    nav, positions, notes = _expanded(pattern.nav, graph)
    for text in notes:
        context.note(at, text)
    branches = tuple(
        Branch(positions[b.field], _rewrite(b.pattern, graph, context, (*at, k)), b.negated)
        for k, b in enumerate(pattern.branches)
    )
    return renumbered(pattern, nav, positions, branches)


def _expanded(nav: NavPath, graph: DtdGraph) -> tuple[NavPath, tuple[int, ...], list[str]]:
    """The rewritten path, the new position of each original step, and a note per rewrite."""
    steps: list[NavStep] = []
    positions: list[int] = []
    notes: list[str] = []
    for step in nav:
        context = _context(graph, steps)
        chain = _only_chain(graph, context, step) if step.axis is Axis.DESCENDANT else None
        if chain is None:
            steps.append(step)
        else:
            steps.extend(NavStep(Axis.CHILD, name) for name in chain)
            notes.append(_note(chain, context))
        positions.append(len(steps) - 1)
    return tuple(steps), tuple(positions), notes


def _context(graph: DtdGraph, done: list[NavStep]) -> str | bool | None:
    """The declared element the last step so far binds (None: the document node; False: not known)."""
    if not done:
        return None
    name = graph.declared_name(done[-1].tag)
    return False if name is None else name


def _only_chain(graph: DtdGraph, context: str | bool | None, step: NavStep) -> tuple[str, ...] | None:
    """The tags of the one chain of elements from ``context`` down to the step's element, if only one."""
    name = graph.declared_name(step.tag)
    if name is None or isinstance(context, bool):  # False: the context element is not known
        return None
    chains = graph.child_chains(context, name)
    if chains is None or len(chains) != 1:
        return None  # a loop between them, several chains, or none (never-match warns about that)
    (chain,) = chains
    between = _tags(graph, chain[:-1])
    return None if between is None else (*between, step.tag)


def _tags(graph: DtdGraph, names: tuple[str, ...]) -> tuple[str, ...] | None:
    """The tags of ``names``; None when valid documents may put one of them in different namespaces
    (a default namespace the DTD fixes but documents may leave out, a prefix it does not fix)."""
    tags: list[str] = []
    for name in names:
        tag = graph.element_tag(name)
        if tag is None:
            return None
        tags.append(tag)
    return tuple(tags)


def _note(chain: tuple[str, ...], context: str | bool | None) -> str:
    name = chain[-1]
    where = "the document" if context is None else f"'{context}'"
    if len(chain) == 1:
        return f"rewrite: //{name} -> /{name} (the DTD allows '{name}' below {where} only as a child)"
    path = "/" + "/".join(chain)
    return f"rewrite: //{name} -> {path} (the only chain of elements the DTD allows from {where} to '{name}')"
