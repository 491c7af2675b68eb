"""Disjunctive normal form: a subscription's ``or`` split into conjunctive alternatives (paper 002).

ONYX routes queries in disjunctive normal form: each conjunctive branch is an ordinary query with its
own NFA paths and selection-index entries, so ``//story[@lang = "en" or @lang = "fr"]`` shares the
``@lang`` index with every other subscription on ``//story[@lang = ...]``. The subscription's result
is the union of its alternatives' bindings, each node once, in document order: exactly XQuery's.

A split is exact where the ``or`` sits under existential quantifiers and conjunctions only:
``[b[c or d]]`` holds when ``[b[c]]`` or ``[b[d]]`` does. It is not made under ``not()`` (where it
would be a conjunction), nor on a step with a positional predicate (positions count the survivors
of the step's earlier predicates, which a split would change); those ``or`` stay one residual test.
Past :data:`MAX_DISJUNCTS` alternatives nothing is split either: the conditions stay residual tests,
correct and bounded, rather than a product of plans.
"""

from __future__ import annotations

from itertools import product
from typing import TypeVar

from feedrouter.lang import ast

#: At most this many conjunctive alternatives per subscription (the product of its ``or`` sizes).
MAX_DISJUNCTS = 64

Conjunct = tuple[ast.Condition, ...]
T = TypeVar("T")


class _TooMany(Exception):
    """The product of the alternatives passed MAX_DISJUNCTS."""


def alternatives(binding: ast.AbsPath, where: Conjunct) -> list[tuple[ast.AbsPath, Conjunct]]:
    """The conjunctive alternatives of a binding (or filter) path and its where conditions; the
    input itself, alone, when nothing splits or the split would pass :data:`MAX_DISJUNCTS`."""
    try:
        paths = _steps_alternatives(binding.steps)
        wheres = _conjunction(where)
        if len(paths) * len(wheres) > MAX_DISJUNCTS:
            raise _TooMany
    except _TooMany:
        return [(binding, where)]
    return [(ast.AbsPath(steps, binding.span, binding.tail), w) for steps in paths for w in wheres]


def _bounded_product(options: list[list[T]]) -> list[tuple[T, ...]]:
    """Every choice of one option per position; _TooMany past MAX_DISJUNCTS choices."""
    count = 1
    for found in options:
        count *= len(found)
        if count > MAX_DISJUNCTS:
            raise _TooMany
    return list(product(*options))


def _conjunction(terms: Conjunct) -> list[Conjunct]:
    """The alternatives of ``t1 and t2 ...``: the product of each term's alternatives."""
    options = [_condition(term) for term in terms]
    return [tuple(c for part in combo for c in part) for combo in _bounded_product(options)]


def _condition(condition: ast.Condition) -> list[Conjunct]:
    if isinstance(condition, ast.Or):
        found = [alt for term in condition.terms for alt in _condition(term)]
        if len(found) > MAX_DISJUNCTS:
            raise _TooMany
        return found
    if isinstance(condition, ast.And):
        return _conjunction(condition.terms)
    if isinstance(condition, (ast.Comparison, ast.Exists)):
        return [(_with_path(condition, steps),) for steps in _steps_alternatives(condition.path.steps)]
    return [(condition,)]  # not(), functions, positions: one residual test


def _with_path(condition: ast.Comparison | ast.Exists, steps: tuple[ast.Step, ...]) -> ast.Condition:
    if steps == condition.path.steps:
        return condition
    path = ast.RelPath(steps, condition.path.tail, condition.path.span)
    if isinstance(condition, ast.Comparison):
        return ast.Comparison(path, condition.op, condition.literal, condition.span)
    return ast.Exists(path, condition.span)


def _steps_alternatives(steps: tuple[ast.Step, ...]) -> list[tuple[ast.Step, ...]]:
    """The alternatives of a path: the product of its steps' predicate alternatives."""
    return _bounded_product([_step(step) for step in steps])


def _step(step: ast.Step) -> list[ast.Step]:
    if not step.predicates or any(ast.is_positional(p) for p in step.predicates):
        return [step]
    return [ast.Step(step.axis, step.name, c, step.span) for c in _conjunction(step.predicates)]
