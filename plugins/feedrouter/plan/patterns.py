"""Lower the AST into path patterns: navigation paths for the NFA plus what the plan checks afterwards.

A :class:`PathPattern` is an absolute navigation path (the NFA key) with, per location step (field),
the *local tests* on that step's node (attribute and value comparisons) and the *branches*: nested
patterns that must have a qualifying match sharing the node of one field (existence and comparison
predicates over relative paths, and FLWR where conditions). A branch's navigation path is the prefix
of its parent up to the join field followed by its own steps, so that the NFA shares the prefix and
the plan joins the two streams on that field (paper 000 §3.2, paper 002 §4.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

from feedrouter.engine.nfa import WILDCARD, NavPath, NavStep
from feedrouter.lang import ast
from feedrouter.lang.printer import condition_text


class TestKind(Enum):
    SELF_CMP = "."
    ATTR_CMP = "@cmp"
    ATTR_EXISTS = "@"
    TEXT_CMP = "text()cmp"
    TEXT_EXISTS = "text()"
    RESIDUAL = "residual"  # a condition evaluated on the tree (feedrouter.plan.evaluate.holds)
    POSITION = "position"  # the node survives its step's positional predicates (evaluate.survives)


@dataclass(frozen=True)
class LocalTest:
    """A test on one node: ``kind`` says which value (itself, an attribute, its text children), or
    which residual check: a ``condition`` on the node, or the ``step`` whose positional predicates
    it must survive."""

    kind: TestKind
    attribute: str = ""
    op: ast.CompOp | None = None
    literal: ast.Literal | None = None
    condition: ast.Condition | None = None
    step: ast.Step | None = None

    def __str__(self) -> str:
        if self.condition is not None:
            return condition_text(self.condition)
        if self.step is not None:
            return "survives " + "".join(f"[{condition_text(c)}]" for c in self.step.predicates)
        subject = {
            TestKind.SELF_CMP: ".",
            TestKind.ATTR_CMP: f"@{self.attribute}",
            TestKind.ATTR_EXISTS: f"@{self.attribute}",
            TestKind.TEXT_CMP: "text()",
            TestKind.TEXT_EXISTS: "text()",
        }[self.kind]
        if self.op is None or self.literal is None:
            return subject
        value = self.literal.value
        shown = repr(value) if isinstance(value, str) else f"{value:g}"
        return f"{subject} {self.op.value} {shown}"


@dataclass(frozen=True, eq=True)
class Branch:
    """A nested pattern joined to its parent on field ``field`` (0-based); ``negated``: the parent's
    node must have no qualifying match (``not(p)``, ``empty(p)``: an anti-semijoin)."""

    field: int
    pattern: PathPattern
    negated: bool = False


@dataclass(frozen=True, eq=True)
class PathPattern:
    """A navigation path with per-field tests and branches; fields below ``base`` belong to the parent."""

    nav: NavPath
    base: int = 0
    tests: tuple[tuple[LocalTest, ...], ...] = ()
    branches: tuple[Branch, ...] = ()
    _hash: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        # patterns key per-document memos; hashing a deep tree on every look-up would cost more
        object.__setattr__(self, "_hash", hash((self.nav, self.base, self.tests, self.branches)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def last(self) -> int:
        return len(self.nav) - 1

    @property
    def tested_fields(self) -> tuple[int, ...]:
        return tuple(i for i, tests in enumerate(self.tests) if tests)

    def walk(self) -> Iterator[PathPattern]:
        """This pattern and every nested branch pattern, depth first."""
        yield self
        for branch in self.branches:
            yield from branch.pattern.walk()


class _Builder:
    """Accumulates the tests and branches of one pattern while its steps are lowered."""

    def __init__(self, prefix: NavPath, base: int) -> None:
        self.nav: list[NavStep] = list(prefix)
        self.base = base
        self.tests: list[list[LocalTest]] = [[] for _ in prefix]
        self.branches: list[Branch] = []

    def add_step(self, step: ast.Step) -> None:
        """A step and its predicates. Predicates before the first positional one become tests and
        branches of the step's field; from that one on, positions count the survivors of the ones
        before, so the rest is one POSITION test evaluated on the tree (over the node's siblings)."""
        self.nav.append(NavStep(step.axis, step.name.clark if step.name else WILDCARD))
        self.tests.append([])
        at = len(self.nav) - 1
        for condition in step.predicates:
            if ast.is_positional(condition):
                self.tests[at].append(LocalTest(TestKind.POSITION, step=step))
                return
            self.add_condition(at, condition)

    def add_condition(self, at: int, condition: ast.Condition) -> None:
        """Attach a predicate or where condition evaluated with the node of field ``at`` as context."""
        negated = isinstance(condition, ast.Not) and _joinable(condition.operand)
        if negated:
            assert isinstance(condition, ast.Not)
            condition = condition.operand
        if not isinstance(condition, (ast.Comparison, ast.Exists)):
            self.tests[at].append(LocalTest(TestKind.RESIDUAL, condition=condition))
            return
        path = condition.path
        test = _tail_test(path.tail, condition)
        if not path.steps:
            if test is not None:
                self.tests[at].append(test)
            return
        branch = relative_pattern(tuple(self.nav[: at + 1]), path, test)
        self.branches.append(Branch(at, branch, negated))

    def build(self) -> PathPattern:
        return PathPattern(
            nav=tuple(self.nav),
            base=self.base,
            tests=tuple(tuple(t) for t in self.tests),
            branches=tuple(self.branches),
        )


def _joinable(condition: ast.Condition) -> bool:
    """Whether ``not(condition)`` is an anti-semijoin: an existence or comparison over a path with
    steps (``not(b[@x = 1])``, ``empty(.//c)``, ``not(d = "x")``); other negations are residual tests."""
    return isinstance(condition, (ast.Comparison, ast.Exists)) and bool(condition.path.steps)


def _tail_test(tail: ast.Tail | None, condition: ast.Condition) -> LocalTest | None:
    """The local test a condition puts on the last node its path reaches (None: existence only)."""
    if isinstance(condition, ast.Comparison):
        op, literal = condition.op, condition.literal
        if isinstance(tail, ast.AttributeTest):
            return LocalTest(TestKind.ATTR_CMP, tail.name.clark, op, literal)
        if isinstance(tail, ast.TextTest):
            return LocalTest(TestKind.TEXT_CMP, "", op, literal)
        return LocalTest(TestKind.SELF_CMP, "", op, literal)
    if isinstance(tail, ast.AttributeTest):
        return LocalTest(TestKind.ATTR_EXISTS, tail.name.clark)
    if isinstance(tail, ast.TextTest):
        return LocalTest(TestKind.TEXT_EXISTS)
    return None


def absolute_pattern(path: ast.AbsPath, extra: tuple[ast.Condition, ...] = ()) -> PathPattern:
    """Lower an absolute path; ``extra`` conditions (a FLWR's where clause) apply to its last step."""
    builder = _Builder((), 0)
    for step in path.steps:
        builder.add_step(step)
    for condition in extra:
        builder.add_condition(len(builder.nav) - 1, condition)
    return builder.build()


def relative_pattern(prefix: NavPath, path: ast.RelPath, last_test: LocalTest | None = None) -> PathPattern:
    """Lower a path relative to the last node of ``prefix``; ``last_test`` applies to its last step."""
    builder = _Builder(prefix, len(prefix))
    for step in path.steps:
        builder.add_step(step)
    if last_test is not None:
        builder.tests[-1].append(last_test)
    return builder.build()


def renumbered(
    pattern: PathPattern, nav: NavPath, positions: tuple[int, ...], branches: tuple[Branch, ...]
) -> PathPattern:
    """``pattern`` over a rewritten ``nav`` whose step ``i`` moved to ``positions[i]``.

    Steps a rewrite inserted get no tests; ``branches`` are already rewritten and joined on the new
    field numbers.
    """
    tests: list[tuple[LocalTest, ...]] = [() for _ in nav]
    for old, new in enumerate(positions[: len(pattern.tests)]):
        tests[new] = pattern.tests[old]
    base = positions[pattern.base - 1] + 1 if pattern.base else 0
    return PathPattern(nav, base, tuple(tests), branches)


def format_pattern(pattern: PathPattern) -> str:
    """Readable text of a pattern: steps with their tests in brackets, branches marked by ``⋉``."""
    parts = []
    for i, step in enumerate(pattern.nav):
        tests = "".join(f"[{t}]" for t in pattern.tests[i]) if i < len(pattern.tests) else ""
        joins = "".join(
            f"[{'▷' if b.negated else '⋉'} {format_pattern(b.pattern)}]"
            for b in pattern.branches
            if b.field == i
        )
        parts.append(f"{step}{tests}{joins}")
    return "".join(parts)
