"""Witness plans: the blocks a feed's router computes, with the conditions rows can decide factored out.

Correlation rules differ mostly in the constants they select on: ``//item[category = "c17"]``,
``//item where $w/author = "A. Smith" and not($w/ticker)``, thousands of blocks over one binding
path. Compiled one by one, each is a plan the router finds and evaluates per message (the selection
index finds it, but a message still binds tens of them, each a plan evaluation and a witness row).
Paper 001 treats a block's value predicates as what they are, selections on the witness relations.
Here a block's conditions on its bound node that the node's leaf values decide (comparisons with a
literal, existence, ``contains``/``starts-with``/``ends-with`` with a literal, under
``not``/``and``/``or``, of paths without predicates or backward steps) are factored out: the blocks
that differ only in them share one *base* witness plan (the binding path and the remaining
conditions) that reads their paths as leaves besides the blocks' own, and filing a message's
witnesses (:meth:`Served.bind`) puts a base's node in every block whose conditions its values
satisfy. A block is found by the key of one of its conditions, the one fewest blocks share: an
equality with a string (one hash look-up per leaf value) or a literal match (a needle compared
with the row's string); the blocks with neither (the broad ones) are decided on every row by one
generated function (:func:`decider`).

Exact by construction: the tests decide a condition as the plan's evaluator does (general
comparisons existential over the values, one per node, compared by :func:`~feedrouter.plan.values.
comparator`; a string function's argument of more than one node makes the call false). A predicate
of the binding's last step is factored only when that step has no positional predicate (whose
numbering would change without it); ``matches`` stays in the base (its regex runs under the plan's
time bound).

A base reads every leaf of every node its binding path selects. That pays when it serves many
blocks and one of them reads those nodes anyway (the base itself, ``//item``, or a broad test such
as ``not($w/ticker)``); blocks that are all selective cost less one by one, the router's selection
index finding the few a message matches. Blocks are factored only in such groups of at least
``min_shared`` (:data:`MIN_SHARED`). A base of the form ``//item`` whose rows the compiled kernel
reads is not even a plan: the router finds its nodes by a walk of the parsed tree
(:class:`~feedrouter.join.witness.Walked`).
"""

from __future__ import annotations

import logging
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import CodeType
from typing import cast

from feedrouter import kernel
from feedrouter.join.plan import BlockSpec, Fragment, block_spec, path_text
from feedrouter.join.witness import WitnessRow
from feedrouter.lang import ast
from feedrouter.plan.functions import matches_literal
from feedrouter.plan.index import Keywords
from feedrouter.plan.values import comparator

_log = logging.getLogger(__name__)

#: the fewest blocks a base witness plan must serve to be compiled instead of them
MIN_SHARED = 16


@dataclass(frozen=True)
class Selection:
    """A block's condition ``leaf = "value"`` on its bound node (``leaf``: the path's canonical text)."""

    leaf: str
    value: str


#: a factored condition compiled against a base's leaves, evaluated on a row's values by :func:`checker`:
#: ``("compare", position, op, literal)``, ``("exists", position)``, ``("match", position, name,
#: needles)``, ``("not", test)``, ``("and", tests)``, ``("or", tests)``
Test = tuple


@dataclass(frozen=True)
class Factored:
    """A block split into its base (the block without its factored conditions) and those
    conditions (variables dropped), the top level's equalities first among them as selections."""

    base: BlockSpec
    conditions: tuple[ast.Condition, ...]
    selections: tuple[Selection, ...]


def factor(spec: BlockSpec) -> Factored:
    """Split ``spec`` into its base block and the conditions the witness rows can check (none:
    the block is its own base)."""
    binding, picked = _binding_without_checks(spec.binding)
    where: list[ast.Condition] = []
    for condition in _conjuncts(spec.where):
        (picked if _checkable(condition) else where).append(condition)
    if not picked:
        return Factored(spec, (), ())
    base = block_spec(spec.feed, binding, tuple(where))
    conditions = tuple(picked)
    found = {s for s in map(_as_selection, conditions) if s is not None}
    selections = sorted(found, key=lambda s: (s.leaf, s.value))
    return Factored(base, conditions, tuple(selections))


def _conjuncts(conditions: Iterable[ast.Condition]) -> Iterable[ast.Condition]:
    for condition in conditions:
        if isinstance(condition, ast.And):
            yield from _conjuncts(condition.terms)
        else:
            yield condition


def _binding_without_checks(binding: ast.AbsPath) -> tuple[ast.AbsPath, list[ast.Condition]]:
    """The binding with its last step's checkable predicates taken out (unless a positional
    predicate counts on them, or the binding selects text nodes, which they are not about)."""
    last = binding.steps[-1]
    if binding.tail is not None or any(ast.is_positional(p) for p in last.predicates):
        return binding, []
    picked: list[ast.Condition] = []
    kept: list[ast.Condition] = []
    for condition in _conjuncts(last.predicates):
        (picked if _checkable(condition) else kept).append(condition)
    if not picked:
        return binding, []
    steps = (*binding.steps[:-1], replace(last, predicates=tuple(kept)))
    return replace(binding, steps=steps), picked


def _checkable(condition: ast.Condition) -> bool:
    """Whether a witness row's leaf values decide ``condition``: comparisons, existence and
    literal string matches of plain paths from the bound node, under not/and/or."""
    if isinstance(condition, (ast.Comparison, ast.Exists)):
        return _plain(condition.path)
    if isinstance(condition, ast.BooleanCall):
        call = condition.call
        return call.name in _STRING_MATCHES and isinstance(call.arg, ast.RelPath) and _plain(call.arg)
    if isinstance(condition, ast.Not):
        return _checkable(condition.operand)
    if isinstance(condition, (ast.And, ast.Or)):
        return all(_checkable(term) for term in condition.terms)
    return False


#: the match functions a row decides (``matches`` is left to the plan: its regex has a time bound)
_STRING_MATCHES = ("contains", "starts-with", "ends-with")


def _plain(path: ast.RelPath) -> bool:
    """A path whose leaf values are the nodes it selects, one value each: no predicates, no
    backward steps."""
    return all(not step.predicates and not step.axis.backward for step in path.steps)


def _as_selection(condition: ast.Condition) -> Selection | None:
    """``condition`` as a selection, if it is a checkable equality with a string."""
    if (
        isinstance(condition, ast.Comparison)
        and condition.op is ast.CompOp.EQ
        and isinstance(condition.literal.value, str)
    ):
        return Selection(path_text(condition.path), condition.literal.value)
    return None


def _paths(condition: ast.Condition) -> Iterable[ast.RelPath]:
    """The paths a checkable condition reads (each a leaf of the base)."""
    if isinstance(condition, (ast.Comparison, ast.Exists)):
        yield condition.path
    elif isinstance(condition, ast.BooleanCall):
        yield cast(ast.RelPath, condition.call.arg)
    elif isinstance(condition, ast.Not):
        yield from _paths(condition.operand)
    elif isinstance(condition, (ast.And, ast.Or)):
        for term in condition.terms:
            yield from _paths(term)


def compile_test(condition: ast.Condition, position: dict[str, int]) -> Test:
    """``condition`` as a :data:`Test` on a row whose leaf ``text`` is at ``position[text]``."""
    if isinstance(condition, ast.Comparison):
        return ("compare", position[path_text(condition.path)], condition.op, condition.literal)
    if isinstance(condition, ast.Exists):
        return ("exists", position[path_text(condition.path)])
    if isinstance(condition, ast.BooleanCall):
        call = condition.call
        needles = tuple(str(literal.value) for literal in call.literals)
        return ("match", position[path_text(cast(ast.RelPath, call.arg))], call.name, needles)
    if isinstance(condition, ast.Not):
        return ("not", compile_test(condition.operand, position))
    assert isinstance(condition, (ast.And, ast.Or))
    kind = "and" if isinstance(condition, ast.And) else "or"
    return (kind, tuple(compile_test(term, position) for term in condition.terms))


Values = Sequence[Sequence[str]]


@lru_cache(maxsize=65536)
def checker(test: Test) -> Callable[[Values], bool]:
    """``test`` as a function of a row's leaf values, built once per distinct test and process
    (plans are pickled: they keep tests, not functions). It decides the condition as the plan's
    evaluator does (:func:`feedrouter.plan.evaluate.holds`: general comparisons are existential; a
    string function's argument of more than one node makes its call false)."""
    kind = test[0]
    if kind == "compare":
        _, position, op, literal = test
        if op is ast.CompOp.EQ and isinstance(literal.value, str):
            wanted = literal.value
            return lambda values: wanted in values[position]
        one = comparator(op, literal)
        return lambda values: any(map(one, values[position]))
    if kind == "exists":
        position = test[1]
        return lambda values: len(values[position]) > 0
    if kind == "match":
        _, position, name, needles = test

        def matched(values: Values) -> bool:
            found = values[position]
            return len(found) <= 1 and matches_literal(name, found[0] if found else "", needles)

        return matched
    if kind == "not":
        inner = checker(test[1])
        return lambda values: not inner(values)
    terms = tuple(checker(term) for term in test[1])
    if len(terms) == 2:
        first, second = terms
        if kind == "and":
            return lambda values: first(values) and second(values)
        return lambda values: first(values) or second(values)
    if kind == "and":
        return lambda values: all(term(values) for term in terms)
    return lambda values: any(term(values) for term in terms)


def decider(groups: Sequence[tuple[Test | None, Sequence[str]]]) -> Callable[[Values], list[Blocks]]:
    """One function deciding every test of ``groups`` on a row: a new list holding one tuple, the
    blocks of the groups whose test holds (None holds always) in ``groups``' order, or no tuple
    when none holds. The compiled kernel's (:func:`table_decider`) where it is built, else a
    generated function (:func:`generated_decider`): the same blocks, kept the same way."""
    make = kernel.Decider  # looked up per call: the tests and benchmarks turn it off
    if make is not None:
        return table_decider(groups, make)
    return generated_decider(groups)


def generated_decider(
    groups: Sequence[tuple[Test | None, Sequence[str]]],
) -> Callable[[Values], list[Blocks]]:
    """:func:`decider` as one generated Python function.

    The blocks tested on every row of a base are the broad ones (``not($w/ticker)``, ``$w/@lang !=
    "de"``): tens of tests built from a few atoms (one leaf's existence, one comparison). As one
    generated function, each atom is decided once per row and the tests are Python's own boolean
    expressions over them, instead of a tree of closures per test. The atoms' truth values decide
    every test, and rows repeat a few patterns of them: the blocks of a pattern are worked out on
    its first row and kept (up to :data:`PATTERNS` patterns, within the process's
    :data:`KEPT_BUDGET`), so a row costs its atoms and a look-up, and its node is filed with one
    tuple instead of one per group that holds (the hour's writer numbers each tuple it is given).
    The source holds nothing but leaf positions and indexes into a table of constants (literals,
    comparators, block tuples), so no text of a subscription reaches it.
    """
    constants: list[object] = []
    atoms: dict[Test, str] = {}
    lines: list[str] = []

    def constant(value: object) -> str:
        constants.append(value)
        return f"K[{len(constants) - 1}]"

    def atom(test: Test) -> str:
        name = atoms.get(test)
        if name is None:
            name = atoms[test] = f"a{len(atoms)}"
            lines.append(f"    {name} = {_atom_source(test, constant)}")
        return name

    def formula(test: Test) -> str:
        kind = test[0]
        if kind == "not":
            return f"not {formula(test[1])}"
        if kind in ("and", "or"):
            return "(" + f" {kind} ".join(formula(term) for term in test[1]) + ")"
        return atom(test)

    decisions = []
    for test, blocks in groups:
        listed = constant(tuple(blocks))
        if test is None:
            decisions.append(f"    found += {listed}")
        else:
            decisions.append(f"    if {formula(test)}:\n        found += {listed}")
    pattern = "(" + "".join(f"{name}, " for name in atoms.values()) + ")"
    source = "\n".join(
        [
            "def blocks(key):",
            *([f"    {pattern} = key"] if atoms else []),
            "    found = ()",
            *decisions,
            "    return found",
            "def decide(v):",
            *lines,
            f"    key = {pattern}",
            "    found = M.get(key)",
            "    if found is None:",
            "        found = blocks(key)",
            "        if len(M) < PATTERNS and KEPT[0] < BUDGET:",
            "            M[key] = found",
            "            size = len(key) + len(found)",
            "            KEPT[0] += size",
            "            OWN[0] += size",
            "    return [found] if found else []",
        ]
    )
    try:
        code = _code(source)
    except (SyntaxError, RecursionError, MemoryError):  # past what Python compiles: test by test
        _log.warning("the tests of %d blocks are decided one by one", sum(len(b) for _, b in groups))
        return _one_by_one(groups)
    kept = _KEPT  # read once: the function adds to this budget and gives back to it
    own = [0]  # the references its kept patterns hold, given back to the budget when it goes
    namespace: dict[str, object] = {
        "K": constants,
        "M": {},
        "PATTERNS": PATTERNS,
        "KEPT": kept,
        "BUDGET": KEPT_BUDGET,
        "OWN": own,
        "any": any,
        "map": map,
        "len": len,
    }
    exec(code, namespace)
    decide = cast(Callable[[Values], list[Blocks]], namespace["decide"])
    weakref.finalize(decide, _give_back, kept, own).atexit = False  # nothing to give back at exit
    return decide


def table_decider(
    groups: Sequence[tuple[Test | None, Sequence[str]]], make: Callable[..., Callable[[Values], list[Blocks]]]
) -> Callable[[Values], list[Blocks]]:
    """:func:`decider` by the compiled kernel (:class:`feedrouter.kernel.Decider`): the atoms of the
    tests (:func:`generated_decider`'s, one per distinct atomic test) go into its table, and it
    evaluates them per row and looks their pattern up; a new pattern's blocks are worked out here,
    from the tests' formulas over the atoms' truth values, and kept within the same caps. Nothing
    is compiled: making one is filling its table and a pair of masks per test, where generating one
    is 0.1 to 1 ms, so a hot bucket gets its own as soon as it is hot.

    A pattern is an int, bit ``i`` atom ``i``'s truth value (bytes past a machine word's atoms,
    turned into one). Most tests subscribers write are an atom, a negated atom or a conjunction of
    them (every one of the 29,625 of the join bench's population C): such a test holds where the
    pattern has the bits its atoms need set and none of those its negated atoms need clear, two
    masks; others (an ``or``, a ``not`` of more than an atom) are closures over the pattern. A
    worker's first hour meets a new pattern every ten messages or so: working out its blocks over
    the 26 direct tests of C's base took 11.4 us through a closure per operator, 2.0 us by masks."""
    atoms: dict[Test, int] = {}
    table: list[tuple[int, int, object]] = []

    def bit(test: Test) -> int:
        at = atoms.get(test)
        if at is None:
            at = atoms[test] = len(table)
            table.append(_atom_entry(test))
        return 1 << at

    def literals(test: Test) -> tuple[int, int] | None:
        """The test as a conjunction of atoms and negated atoms: the bits a pattern must have set
        and those it must have clear; None for any other shape."""
        kind = test[0]
        if kind == "not":
            inner = test[1]
            return None if inner[0] in _COMPOUND else (0, bit(inner))
        if kind == "or":
            return None
        if kind != "and":
            return bit(test), 0
        must = never = 0
        for term in test[1]:
            found = literals(term)
            if found is None:
                return None
            must, never = must | found[0], never | found[1]
        return must, never

    def decision(test: Test) -> tuple[int, int, Callable[[int], bool] | None]:
        """How the test is decided on a pattern: by its masks (no closure), or by a closure."""
        found = literals(test)
        if found is not None:
            return found[0], found[1], None
        kind = test[0]
        if kind == "not":
            inner = closure(test[1])
            return 0, 0, lambda bits: not inner(bits)
        terms = tuple(closure(term) for term in test[1])
        if kind == "and":
            return 0, 0, lambda bits: all(term(bits) for term in terms)
        return 0, 0, lambda bits: any(term(bits) for term in terms)

    def closure(test: Test) -> Callable[[int], bool]:
        must, never, holds = decision(test)
        return holds if holds is not None else lambda bits: bits & must == must and not bits & never

    decisions = [
        (*((0, 0, None) if test is None else decision(test)), tuple(blocks)) for test, blocks in groups
    ]

    def blocks_of(key: int | bytes) -> Blocks:
        bits = key if isinstance(key, int) else sum(1 << at for at, truth in enumerate(key) if truth == 1)
        found: Blocks = ()
        for must, never, holds, blocks in decisions:
            if holds(bits) if holds is not None else bits & must == must and not bits & never:
                found += blocks
        return found

    kept, own = _KEPT, [0]  # read once: the decider adds to this budget and gives back to it
    decide = make(table, blocks_of, PATTERNS, kept, KEPT_BUDGET, own)
    weakref.finalize(decide, _give_back, kept, own).atexit = False  # nothing to give back at exit
    return decide


#: the tests made of other tests
_COMPOUND = ("and", "or", "not")


def _atom_entry(test: Test) -> tuple[int, int, object]:
    """An atomic test (compare, exists, match) as the kernel's ``(kind, leaf position, argument)``:
    what :func:`_atom_source` writes as an expression."""
    kinds = kernel.ATOM_KINDS
    kind = test[0]
    if kind == "exists":
        return kinds["exists"], int(test[1]), None
    if kind == "compare":
        _, position, op, literal = test
        if op is ast.CompOp.EQ and isinstance(literal.value, str):
            return kinds["has"], int(position), literal.value
        return kinds["any"], int(position), comparator(op, literal)
    assert kind == "match"
    _, position, name, needles = test
    if name not in _STRING_TESTS or len(needles) != 1:  # matches: its regex runs under the time bound
        return kinds["call"], 0, checker(test)
    return kinds[name], int(position), needles[0]


@lru_cache(maxsize=1024)
def _code(source: str) -> CodeType:
    """A decider's source compiled, once per distinct source and process. The source holds only
    leaf positions and indexes into the decider's constants, so deciders whose tests have the same
    shape share it (the join bench's population C: 332 buckets an hour, 50 sources), and compiling
    is most of what making a decider costs (on the join bench's news feeds, 140 to 220 us a bucket
    compiled, 10 to 30 us with its code found here). At most 1,024 are kept (a bucket of 50 tests
    compiles to about 20 KB)."""
    return compile(source, "<feedrouter.join.selections.decider>", "exec")


#: the most patterns of its atoms' truth values a generated decider keeps the blocks of
#: (:func:`decider`: past them a row's blocks are worked out afresh)
PATTERNS = 4096
#: the most references (a pattern's atoms and its blocks) the kept patterns of every decider of the
#: process hold together, about 32 MB: a base of 50,000 broad blocks keeps a few patterns, not
#: thousands of tuples of 50,000, and a worker's plans of many hours never add up past it
KEPT_BUDGET = 1 << 22
#: the references kept now (a list: the generated functions add to it in place)
_KEPT = [0]


def _give_back(kept: list[int], own: list[int]) -> None:
    """A decider has gone: its kept patterns' references return to the budget it took them from."""
    kept[0] -= own[0]


def _one_by_one(groups: Sequence[tuple[Test | None, Sequence[str]]]) -> Callable[[Values], list[Blocks]]:
    checks = [(None if test is None else checker(test), tuple(blocks)) for test, blocks in groups]

    def decide(values: Values) -> list[Blocks]:
        found: Blocks = ()
        for check, blocks in checks:
            if check is None or check(values):
                found += blocks
        return [found] if found else []

    return decide


def _atom_source(test: Test, constant: Callable[[object], str]) -> str:
    """An atomic test (compare, exists, match) as an expression over the row ``v``."""
    kind = test[0]
    if kind == "exists":
        return f"len(v[{int(test[1])}]) > 0"
    if kind == "compare":
        _, position, op, literal = test
        if op is ast.CompOp.EQ and isinstance(literal.value, str):
            return f"{constant(literal.value)} in v[{int(position)}]"
        return f"any(map({constant(comparator(op, literal))}, v[{int(position)}]))"
    assert kind == "match"
    _, position, name, needles = test
    method = _STRING_TESTS.get(name)
    if method is None or len(needles) != 1:  # matches: its regex runs under the time bound
        return f"{constant(checker(test))}(v)"
    # a call whose argument is more than one item is false (plan.evaluate); no item is ""
    found = f"v[{int(position)}]"
    return f'(len({found}) < 2 and ({found}[0] if {found} else "").{method}({constant(needles[0])}))'


#: the literal string matches a generated test makes with a ``str`` method (``contains``: ``in``)
_STRING_TESTS = {"contains": "__contains__", "starts-with": "startswith", "ends-with": "endswith"}


#: blocks found together (filed under one key, or decided by one test): a row's filing keeps the group
Blocks = tuple[str, ...]
#: blocks served through one key of a selection or a needle with the same test of their other
#: factored conditions (None: none left), grouped when the plan is built (:func:`_by_test`)
Indexed = tuple[Blocks, Test | None]


class NeedleFinder(Keywords):
    """The needles of one match function that a string satisfies, without trying each (the
    selection index's :class:`~feedrouter.plan.index.Keywords`: ``contains`` needles found in one
    scan by an Aho-Corasick automaton, ``starts-with``/``ends-with`` ones by the string's prefix or
    suffix of each of their lengths)."""

    def __init__(self, name: str, needles: Iterable[str]) -> None:
        self.needles = frozenset(needles)
        super().__init__(name, self.needles)

    def find(self, string: str) -> set[str]:
        automaton = self.automaton
        if automaton is None:  # starts-with, ends-with: by the string's prefixes or suffixes
            return self.hits((string,), self.needles)
        # contains: the automaton's words straight into the set (Keywords.hits takes values from
        # several nodes; a row is one string, read for every row a feed's messages bind)
        found = {word for _, word in automaton.iter(string)}
        if self.empty:
            found.add("")
        return found


@dataclass
class Served:
    """The blocks one compiled witness plan serves, each with a test of its factored conditions
    (None: none left) found one of three ways: ``index``, by one of its selections (leaf position in
    the plan's leaves -> value -> blocks); ``needles``, by one of its literal string matches (leaf
    position and function -> needle -> blocks), whichever fewer blocks share; ``direct``, tested on
    every row. The blocks under a key are grouped by their test (:data:`Indexed`). Pickled without
    the functions it builds from them (:meth:`_checks`)."""

    direct: dict[Test | None, list[str]] = field(default_factory=dict)
    index: dict[int, dict[str, list[Indexed]]] = field(default_factory=dict)
    needles: dict[tuple[int, str], dict[str, list[Indexed]]] = field(default_factory=dict)

    def bind(self, rows: Sequence[WitnessRow], bound: dict[int, list[Blocks]]) -> list[WitnessRow]:
        """File in ``bound`` (node -> blocks) the blocks each of ``rows`` binds, in the groups
        they are found in (the tuples of blocks filed under a key, or the blocks a generated
        function's tests bind, :func:`decider`); the rows some block bound. (Per node and group,
        not per block: a message binds a node or two, each in tens of blocks, and the hour's
        writer turns them round into its blocks' columns anyway,
        :meth:`~feedrouter.join.relations.HourWitnesses.append`; a row's filing touches a tuple
        per group, not every block's name.) The compiled kernel runs this loop where it is built
        (:func:`feedrouter.kernel.bind`); this is its reference."""
        compiled = kernel.bind
        if compiled is not None:
            return compiled(self._checks(), rows, bound, _bucket)
        decide, index, needles = self._checks()
        kept = []
        for row in rows:
            values = row.values
            found = decide(values)  # a new list each time: it becomes the node's
            for position, by_value in index:
                strings = values[position]
                for value in strings if len(strings) < 2 else dict.fromkeys(strings):
                    bucket = by_value.get(value)
                    if bucket is not None:
                        if isinstance(bucket, list):  # its first row in this process
                            bucket = by_value[value] = _bucket(bucket)
                        if bucket.blocks:
                            found.append(bucket.blocks)
                        if bucket.decide is not None:
                            found += bucket.decide(values)
            for position, finder, by_needle in needles:
                strings = values[position]
                if len(strings) > 1:
                    continue  # the call's argument is more than one item: false (plan.evaluate)
                for needle in finder.find(strings[0] if strings else ""):
                    bucket = by_needle[needle]
                    if isinstance(bucket, list):
                        bucket = by_needle[needle] = _bucket(bucket)
                    if bucket.blocks:
                        found.append(bucket.blocks)
                    if bucket.decide is not None:
                        found += bucket.decide(values)
            if found:
                kept.append(row)
                known = bound.get(row.node)
                if known is None:
                    bound[row.node] = found
                else:  # another plan's rows bound the node too (its blocks are others)
                    known += found
        return kept

    def blocks(self) -> Iterable[str]:
        """Every block this plan's rows may bind."""
        for listed in self.direct.values():
            yield from listed
        for keyed in (*self.index.values(), *self.needles.values()):
            for entries in keyed.values():
                for grouped, _ in entries:
                    yield from grouped

    def _checks(self) -> _Checks:
        """The tests as functions, built on first use in each process (never pickled)."""
        checks = self.__dict__.get("_compiled")
        if checks is None:
            checks = self.__dict__["_compiled"] = (
                decider(list(self.direct.items())),
                [(position, _checking(by_value)) for position, by_value in self.index.items()],
                [(p, NeedleFinder(name, by), _checking(by)) for (p, name), by in self.needles.items()],
            )
        return checks

    def __getstate__(self) -> dict[str, object]:
        return {key: value for key, value in self.__dict__.items() if key != "_compiled"}


@dataclass(slots=True)  # one found per hit of a message's value: no dict per bucket
class _Bucket:
    """The blocks filed under one key: those with no other test (bound outright) and a function
    of the row giving those of the others whose tests hold (None: there are none; until the
    bucket is hot, one through the checkers' closures: :func:`_bucket`)."""

    blocks: Blocks
    decide: Callable[[Values], list[Blocks]] | None


_Buckets = dict[str, _Bucket | list[Indexed]]  # entries until the key's first row
_Checks = tuple[
    Callable[[Values], list[Blocks]],
    list[tuple[int, _Buckets]],
    list[tuple[int, NeedleFinder, _Buckets]],
]


def _checking(by_key: dict[str, list[Indexed]]) -> _Buckets:
    """Per key, the blocks filed under it: a copy of ``by_key`` whose entries become their
    :class:`_Bucket` on the key's first row (:meth:`Served.bind`). A base has tens of thousands of
    keys and an hour brings a few hundred of them: making every bucket up front cost a worker 15 to
    60 ms a plan (the join bench's news feeds), 8 to 30 us a message of an hour it routes alone."""
    return dict(by_key)


def _bucket(entries: Sequence[Indexed]) -> _Bucket:
    """The bucket of ``entries``: its tests decided through the checkers' closures
    (:func:`_one_by_one`, made on its first row) until the bucket has brought :data:`HOT` rows,
    then by one generated function (:func:`decider`).

    Generated, a string match is an inline ``str`` call rather than a closure's, and a row's
    blocks are kept per pattern of its atoms. But generating costs 0.14 to 1.2 ms a bucket (compiling
    its source), and a feed has thousands of keys, most of which an hour brings once or twice: a
    worker that generated every bucket on its first row spent more on compiling than on routing
    (the join bench's population A: 1,676 buckets in an hour of 2,000 news messages, 0.45 s, 0.23
    ms a message, in every hour's new worker). So only a bucket whose rows keep coming pays it,
    after it has brought enough of them to earn it back.

    With the compiled kernel, a bucket's tests are read as they are in C until it is hot
    (:class:`feedrouter.kernel.Tests`: nothing is made on its first row but the object), and then
    it gets a table decider (:func:`table_decider`), nothing compiled either: on the join bench's
    news hours, filing's first pass -40% on the dense population (A), -20% on a selective one (C)."""
    bound, tested = _split(entries)
    read = kernel.Tests
    if read is not None:  # its tests read as they are until hot: nothing built on its first row
        return _Bucket(bound, read(tested, ast.CompOp.EQ, checker, HOT, _hot_decider) if tested else None)
    listed = _grouped(tested)
    if not listed:
        return _Bucket(bound, None)
    bucket = _Bucket(bound, None)
    rows = 0
    checked: Callable[[Values], list[Blocks]] | None = None

    def warming(values: Values) -> list[Blocks]:
        nonlocal rows, checked
        rows += 1
        if rows > HOT:  # hot: its generated function from now on
            decide = bucket.decide = decider(listed)
            return decide(values)
        if checked is None:
            checked = _one_by_one(listed)
        return checked(values)

    bucket.decide = warming
    return bucket


def _split(entries: Sequence[Indexed]) -> tuple[Blocks, tuple[Indexed, ...]]:
    """A key's untested blocks and its tested groups: the untested group is the first when there is
    one (:func:`_by_test`), so a bucket's first row splits its entries with a slice, not a scan (on
    the join bench's dense population a worker's first hour makes a bucket for most messages)."""
    blocks, test = entries[0]
    return (blocks, tuple(entries[1:])) if test is None else ((), tuple(entries))


def _grouped(entries: Iterable[Indexed]) -> list[tuple[Test | None, list[str]]]:
    """The tested groups of ``entries`` as a decider takes them (each test once: :func:`_by_test`)."""
    return [(test, list(blocks)) for blocks, test in entries if test is not None]


def _grouped_by_test(by_key: dict[str, list[tuple[str, Test | None]]]) -> dict[str, list[Indexed]]:
    """Per key, :func:`_by_test` of the blocks filed under it."""
    return {key: _by_test(entries) for key, entries in by_key.items()}


def _by_test(entries: Iterable[tuple[str, Test | None]]) -> list[Indexed]:
    """The blocks filed under one key (each with its test) grouped by their test: the untested
    group first (:func:`_split`), the others in order of first appearance. A row that brings the
    key decides each distinct test once. Subscribers write one selection many ways (a predicate or
    a where clause, conditions in another order): different blocks, filed under the same key with
    the same test (on the join bench's news hours a row's buckets hold 1.3 to 1.8 tests for every
    distinct one). Grouping costs a hash of every test, paid once when the plan is built rather
    than in every worker on a key's first row."""
    groups: dict[Test | None, list[str]] = {}
    for block, test in entries:
        groups.setdefault(test, []).append(block)
    untested = groups.pop(None, None)
    found = [(tuple(blocks), test) for test, blocks in groups.items()]
    return found if untested is None else [(tuple(untested), None), *found]


def _hot_decider(entries: Sequence[Indexed]) -> Callable[[Values], list[Blocks]]:
    """The decider of a hot bucket's tested blocks (the compiled kernel's :class:`~feedrouter.
    kernel.Tests` asks for it past :data:`HOT` rows)."""
    return decider(_grouped(entries))


#: the rows a bucket brings before its tests get a generated function (:func:`_bucket`). Measured
#: on the join bench's news feeds: a bucket's call costs 0.5 to 1.9 us generated, 2.8 to 3.3 us
#: through closures; generating one costs 140 to 220 us (10 to 30 us where its source was
#: compiled already; up to 1.2 ms for a bucket of 50 tests), the closures 5 to 9 us. Past 64 rows a
#: small bucket's function has about paid for itself, and a bucket that is never hot costs at most
#: 64 closure calls more than it would have
HOT = 64


@dataclass
class WitnessPlans:
    """What a feed's router computes for its blocks.

    Attributes:
        bases: the witness plans to compile (:meth:`~feedrouter.router.Router.add_witness`), by id.
        served: per witness plan, the blocks its rows bind.
    """

    bases: dict[str, BlockSpec] = field(default_factory=dict)
    served: dict[str, Served] = field(default_factory=dict)

    def names(self, plan: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """A witness plan's leaf names and fragment names (its spec's order): what its rows'
        columns are, one tuple pair per plan that every row of it shares."""
        known: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = self.__dict__.get("_names")
        if known is None:
            known = self.__dict__["_names"] = {}
        found = known.get(plan)
        if found is None:
            spec = self.bases[plan]
            found = known[plan] = (tuple(spec.leaves), tuple(spec.fragments))
        return found

    def file(
        self,
        witnesses: Mapping[str, Sequence[WitnessRow]],
        bound: dict[int, list[Blocks]],
        filed: list[tuple[tuple[tuple[str, ...], tuple[str, ...]], WitnessRow]],
    ) -> None:
        """File a routed message's witness rows by block: each plan's rows through its
        :meth:`Served.bind` into ``bound``, and each row some block bound appended to ``filed`` with
        its plan's names (:meth:`names`); plans this build does not serve (another build's, a clock)
        are left out. In one compiled call where the kernel's :func:`~feedrouter.kernel.bind` is
        built and on (:func:`~feedrouter.kernel.file_rows`: no Python frame per plan), with the
        plans' checks and names looked up once per process; this is its reference."""
        compiled = kernel.file_rows if kernel.bind is not None else None
        if compiled is not None:
            table: dict[str, tuple[_Checks, tuple[tuple[str, ...], tuple[str, ...]]] | None] | None
            table = self.__dict__.get("_filing")
            if table is None:
                table = self.__dict__["_filing"] = {}
            compiled(witnesses, table, bound, filed, _bucket, self._filing_entry)
            return
        for plan, rows in witnesses.items():
            served = self.served.get(plan)
            if served is None:
                continue
            kept = served.bind(rows, bound)
            if kept:
                names = self.names(plan)
                filed += [(names, row) for row in kept]

    def collect(
        self,
        witnesses: Mapping[str, Sequence[WitnessRow]],
        bound: dict[int, list[Blocks]],
        filed: list[tuple[tuple[tuple[str, ...], tuple[str, ...]], WitnessRow]],
    ) -> None:
        """Keep a routed message's witness rows as stage 1 writes them (the state's format 2):
        every row of each plan this build serves, its node filed under the plan itself in ``bound``
        (a group of one, as :meth:`file` files a block), each row appended to ``filed`` with its
        plan's names; the join stage files them by block where it reads them
        (:class:`~feedrouter.join.filing.BlockFiling`). Plans this build does not serve (another
        build's, a clock) are left out."""
        served = self.served
        for plan, rows in witnesses.items():
            if plan not in served or not rows:
                continue
            group = (plan,)
            for row in rows:
                known = bound.get(row.node)
                if known is None:
                    bound[row.node] = [group]
                else:  # another plan's rows bound the node too
                    known.append(group)
            names = self.names(plan)
            filed += [(names, row) for row in rows]

    def roots(self) -> dict[str, str]:
        """Per block this build serves, the witness plan whose rows it is filed from (itself, for a
        block compiled as it is): what an hour's ``blocks.json`` records for the join stage to file
        the hour's rows by block (:meth:`collect`)."""
        found: dict[str, str] | None = self.__dict__.get("_roots")
        if found is None:
            found = {}
            for plan, served in self.served.items():
                for block in served.blocks():
                    found[block] = plan
            self.__dict__["_roots"] = found
        return found

    def _filing_entry(self, plan: str) -> tuple[_Checks, tuple[tuple[str, ...], tuple[str, ...]]] | None:
        """What :meth:`file`'s compiled loop keeps for a plan: its checks and names, or None."""
        served = self.served.get(plan)
        return None if served is None else (served._checks(), self.names(plan))

    def __getstate__(self) -> dict[str, object]:
        return {
            key: value for key, value in self.__dict__.items() if key not in ("_names", "_filing", "_roots")
        }


def witness_plans(specs: Iterable[BlockSpec], min_shared: int = MIN_SHARED) -> WitnessPlans:
    """The witness plans of ``specs`` (blocks of one feed): a base for every group of at least
    ``min_shared`` blocks that differ only in their checkable conditions, when one of them is
    broad (:func:`_broad`); each other block as it is."""
    groups: dict[str, list[tuple[BlockSpec, Factored]]] = {}
    for spec in specs:
        factored = factor(spec)
        groups.setdefault(factored.base.id, []).append((spec, factored))
    plans = WitnessPlans()
    for members in groups.values():
        if len(members) >= min_shared and any(_broad(factored) for _, factored in members):
            _add_base(plans, members)
        else:
            for spec, _ in members:
                _add_own(plans, spec)
    return plans


def _broad(factored: Factored) -> bool:
    """Whether the block binds most of its base's nodes, as far as its text tells: it has no
    equality with a string and no literal match to be found by (it is the base itself, or only
    tests existence, inequality, ranges). A base reads every leaf of every node its binding path
    selects; that pays when such a block reads them anyway, while blocks that are all selective
    (``//item[author = "A"]`` x 1,000) cost less one by one: the router's selection index finds the
    few a message matches, reading nothing for the others (measured: +12 us against +35 us a
    message)."""
    return not factored.selections and not any(map(_is_needle_call, factored.conditions))


def _is_needle_call(condition: ast.Condition) -> bool:
    """Whether a block can be found by ``condition``'s needle: a literal match with one literal."""
    return isinstance(condition, ast.BooleanCall) and len(condition.call.literals) == 1


def _add_own(plans: WitnessPlans, spec: BlockSpec) -> None:
    """``spec`` compiled as it is (the router's selection index finds it for the messages it may
    match)."""
    plans.bases[spec.id] = spec
    plans.served[spec.id] = Served(direct={None: [spec.id]})


def _add_base(plans: WitnessPlans, members: Sequence[tuple[BlockSpec, Factored]]) -> None:
    """One base for ``members``: it reads every leaf and fragment of theirs and the leaves their
    factored conditions read; a member is filed under the key of its condition fewest members
    share (:func:`_finders`), its other conditions tested when a row brings the key."""
    base = replace(members[0][1].base, leaves={}, fragments={})
    leaves: dict[str, ast.RelPath] = {}
    fragments: dict[str, Fragment] = {}
    for spec, factored in members:
        leaves.update(_leaves_read(spec, factored))
        fragments.update(spec.fragments)
    base.leaves = {text: leaves[text] for text in sorted(leaves)}
    base.fragments = {key: fragments[key] for key in sorted(fragments)}
    position = {text: i for i, text in enumerate(base.leaves)}
    finders = [(spec.id, factored.conditions, _finders(factored, position)) for spec, factored in members]
    shared = Counter(key for _, _, keys in finders for _, key in keys)
    served = Served()
    # per leaf position (and function, for needles) and key, the blocks with their tests: grouped
    # by test once all are in
    by_value: dict[int, dict[str, list[tuple[str, Test | None]]]] = {}
    by_needle: dict[tuple[int, str], dict[str, list[tuple[str, Test | None]]]] = {}
    for block, conditions, keys in finders:
        if not keys:
            served.direct.setdefault(_conjunction(conditions, position), []).append(block)
            continue
        # the key fewest blocks share (a row that brings it tests the fewest), a value before a
        # needle (a hash look-up costs less than a look for needles in the row's string)
        chosen, key = min(keys, key=lambda found: (shared[found[1]], found[1][0] != "value", found[1]))
        kind, where, literal = key
        rest = [c for c in conditions if c is not chosen]
        entry = (block, _conjunction(rest, position))
        if kind == "value":
            by_value.setdefault(where, {}).setdefault(literal, []).append(entry)
        else:
            by_needle.setdefault(where, {}).setdefault(literal, []).append(entry)
    served.index = {at: _grouped_by_test(by) for at, by in by_value.items()}
    served.needles = {at: _grouped_by_test(by) for at, by in by_needle.items()}
    plans.bases[base.id] = base
    plans.served[base.id] = served


def _leaves_read(spec: BlockSpec, factored: Factored) -> dict[str, ast.RelPath]:
    """The leaves a base's rows hold for ``spec``: its own and those its factored conditions read."""
    leaves = dict(spec.leaves)
    leaves.update(
        (path_text(p), replace(p, var="", span=None)) for c in factored.conditions for p in _paths(c)
    )
    return leaves


def filed_from(spec: BlockSpec) -> str:
    """The witness plan this code files ``spec`` from when it shares one: its :func:`factor`
    base (the block itself, when nothing factors out). A block is filed from the rows of its own
    plan or of this plan only: a base's id is the digest of its binding and the conditions left in
    it, so rows of another plan (one that factored the block otherwise, written by other code)
    hold other nodes, or lack the leaves the tests read. Kept per block id (the digest of its feed
    and text, all factoring reads) for the process: a join stage checks every block of every hour
    of its window and files them, tens of thousands of blocks an hour (120 us each to factor)."""
    known = _FILED_FROM.get(spec.id)
    if known is None:
        if len(_FILED_FROM) >= _FILED_FROM_KEPT:
            _FILED_FROM.clear()
        known = _FILED_FROM[spec.id] = factor(spec).base.id
    return known


#: :func:`filed_from`'s answers, by block id, up to :data:`_FILED_FROM_KEPT`
_FILED_FROM: dict[str, str] = {}
_FILED_FROM_KEPT = 1 << 18


def rows_needed(spec: BlockSpec) -> tuple[frozenset[str], frozenset[str]]:
    """The leaves and fragments a witness plan's rows must hold for ``spec`` to be filed from them
    (:func:`shared_base`): what a base holds for each of its blocks. A block added later whose
    needs an hour's rows of its plan hold is filed from them without routing the hour again
    (:func:`~feedrouter.spark.witnesses.adopt_blocks`)."""
    return frozenset(_leaves_read(spec, factor(spec))), frozenset(spec.fragments)


def shared_base(specs: Sequence[BlockSpec]) -> tuple[BlockSpec, Served]:
    """One base for ``specs`` (blocks that differ only in their checkable conditions: their
    :func:`factor` bases are one), as :func:`witness_plans` makes it for a group, whatever its
    size: what files an hour's base rows by these blocks where the join stage reads them."""
    plans = WitnessPlans()
    _add_base(plans, [(spec, factor(spec)) for spec in specs])
    ((plan, base),) = plans.bases.items()
    return base, plans.served[plan]


#: how a block can be found: ("value", leaf position, value) or ("needle", (leaf position, function), needle)
FinderKey = tuple


def _finders(factored: Factored, position: dict[str, int]) -> list[tuple[ast.Condition, FinderKey]]:
    """The top-level conditions a block can be found by, each with its key: equalities with a
    string (a hash look-up of the row's value) and literal string matches (a needle)."""
    keys: list[tuple[ast.Condition, FinderKey]] = []
    for condition in factored.conditions:
        selection = _as_selection(condition)
        if selection is not None:
            keys.append((condition, ("value", position[selection.leaf], selection.value)))
        elif _is_needle_call(condition):
            call = cast(ast.BooleanCall, condition).call
            where = (position[path_text(cast(ast.RelPath, call.arg))], call.name)
            keys.append((condition, ("needle", where, str(call.literals[0].value))))
    return keys


def _conjunction(conditions: Sequence[ast.Condition], position: dict[str, int]) -> Test | None:
    tests = tuple(compile_test(c, position) for c in conditions)
    if not tests:
        return None
    return tests[0] if len(tests) == 1 else ("and", tests)
