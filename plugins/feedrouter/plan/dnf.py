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


def alternatives(
    binding: ast.AbsPath, where: Conjunct, rename: bool = True
) -> list[tuple[ast.AbsPath, Conjunct]]:
    """The conjunctive alternatives of a binding (or filter) path and its where conditions; the
    input itself, alone, when nothing splits or the split would pass :data:`MAX_DISJUNCTS`.
    ``rename``: ``self::`` tests may become the name tests of the path's own steps (not where other
    paths are planned from those steps, as a FLWR's returns are); paths inside conditions always may."""
    try:
        paths = _steps_alternatives(binding.steps, rename)
        wheres = _conjunction(where)
        if len(paths) * len(wheres) > MAX_DISJUNCTS:
            raise _TooMany
    except _TooMany:
        return [(binding, where)]
    found = [(ast.AbsPath(steps, binding.span, binding.tail), w) for steps in paths for w in wheres]
    if not rename:
        return found
    folded = [alt for alt in map(_bound_by_self_tests, found) if alt is not None]
    return folded or found


def _bound_by_self_tests(alternative: tuple[ast.AbsPath, Conjunct]) -> tuple[ast.AbsPath, Conjunct] | None:
    """``for $s in //* where $s/self::a`` as ``for $s in //a``: the where clause's ``self::`` tests
    name the binding step (see :func:`_named_by_self_tests`); not past a positional predicate."""
    path, where = alternative
    tests = tuple(c for c in where if isinstance(c, ast.SelfTest))
    last = path.steps[-1] if path.steps else None
    if not tests or last is None or any(ast.is_positional(p) for p in last.predicates):
        return alternative
    named = _named_by_self_tests(ast.Step(last.axis, last.name, tests, last.span))
    if named is None:
        return None
    step = ast.Step(last.axis, named.name, last.predicates, last.span)
    rest = tuple(c for c in where if not isinstance(c, ast.SelfTest)) + named.predicates
    return ast.AbsPath((*path.steps[:-1], step), path.span, path.tail), rest


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


def _steps_alternatives(steps: tuple[ast.Step, ...], rename: bool = True) -> list[tuple[ast.Step, ...]]:
    """The alternatives of a path: the product of its steps' predicate alternatives."""
    return _bounded_product([_step(step, rename) for step in steps])


def _step(step: ast.Step, rename: bool = True) -> list[ast.Step]:
    if not step.predicates or any(ast.is_positional(p) for p in step.predicates):
        return [step]
    found = [ast.Step(step.axis, step.name, c, step.span) for c in _conjunction(step.predicates)]
    if not rename:
        return found
    folded = [s for s in map(_named_by_self_tests, found) if s is not None]
    return folded or found  # every alternative names two different elements: the tests say no


def _named_by_self_tests(step: ast.Step) -> ast.Step | None:
    """``*[self::a][p]`` as ``a[p]``: a ``self::`` test among a step's predicates (none positional)
    becomes its name test, so that ``//*[self::a or self::b]`` is two NFA paths, ``//a`` and ``//b``,
    shared with every other subscription on them, instead of a test of every element. None when the
    step can select nothing (``a[self::b]``); wildcard names other than ``*`` keep the test."""
    name, kept = step.name, []
    for condition in step.predicates:
        if not isinstance(condition, ast.SelfTest) or condition.name is None or _wild(condition.name):
            kept.append(condition)
        elif name is None:
            name = condition.name
        elif _wild(name):
            kept.append(condition)
        elif name != condition.name:
            return None
    if name == step.name and len(kept) == len(step.predicates):
        return step
    return ast.Step(step.axis, name, tuple(kept), step.span)


def _wild(name: ast.QName) -> bool:
    return ast.ANY in (name.uri, name.local)
