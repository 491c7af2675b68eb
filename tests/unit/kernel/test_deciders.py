"""The compiled deciders of a join base's factored tests (feedrouter.kernel): they bind exactly the
blocks the Python path binds (:mod:`feedrouter.join.selections`: its generated function and the
checkers' closures, the reference), on every kind of atom and row."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from feedrouter import kernel
from feedrouter.join import selections
from feedrouter.lang import ast

needs_kernel = pytest.mark.skipif(
    kernel.Decider is None, reason="the compiled kernel is turned off or not built"
)

EQ, NE, GT, LE = ast.CompOp.EQ, ast.CompOp.NE, ast.CompOp.GT, ast.CompOp.LE
STRINGS = ("", "a", "ab", "ba", "5", "7.0", "-1", "x y", "é", "abé")


def test_the_decider_kernel_is_built_here() -> None:
    """Built by the project's own files, as the other kernels are (an optional build that failed
    quietly would leave every base's filing on the slow path)."""
    if not kernel.requested():
        pytest.skip("turned off here")
    assert kernel.Decider is not None and kernel.Tests is not None and kernel.bind is not None
    assert kernel.file_rows is not None


def atomic(rng: random.Random, leaves: int) -> selections.Test:
    """One atomic test of every kind a base's tests are made of (and a regex, which the kernel
    leaves to the checker)."""
    position = rng.randrange(leaves)
    kind = rng.randrange(6)
    if kind == 0:
        return ("exists", position)
    if kind == 1:
        return ("compare", position, EQ, ast.Literal(rng.choice(STRINGS)))
    if kind == 2:
        op = rng.choice([NE, GT, LE])
        literal = (
            ast.Literal(rng.choice([5.0, -1.0, 7.0]))
            if rng.random() < 0.5
            else ast.Literal(rng.choice(STRINGS))
        )
        return ("compare", position, op, literal)
    if kind == 3:
        return (
            "match",
            position,
            rng.choice(["contains", "starts-with", "ends-with"]),
            (rng.choice(STRINGS),),
        )
    if kind == 4:
        return ("match", position, "matches", (rng.choice(["^a", "b$", "é"]),))
    return ("match", position, "contains", (rng.choice(STRINGS), "i"))  # two literals: the checker's


def composite(rng: random.Random, leaves: int, depth: int = 0) -> selections.Test:
    pick = rng.random()
    if depth > 3 or pick < 0.45:
        return atomic(rng, leaves)
    if pick < 0.6:
        return ("not", composite(rng, leaves, depth + 1))
    terms = tuple(composite(rng, leaves, depth + 1) for _ in range(rng.randint(2, 4)))
    return ("and" if pick < 0.8 else "or", terms)


def row(rng: random.Random, leaves: int) -> list[tuple[str, ...]]:
    return [tuple(rng.choice(STRINGS) for _ in range(rng.choice([0, 1, 1, 1, 2]))) for _ in range(leaves)]


def blocks_one_by_one(
    groups: Sequence[tuple[selections.Test | None, list[str]]], values: object
) -> list[str]:
    """The reference: each test by its checker's closure."""
    return [
        block
        for test, blocks in groups
        if test is None or selections.checker(test)(values)  # type: ignore[arg-type]
        for block in blocks
    ]


@needs_kernel
@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_decider_binds_what_the_checkers_bind(seed: int) -> None:
    """Generated tests over generated rows: the compiled decider (patterns kept), the generated
    function and the checkers give the same blocks in the same order; rows whose pattern was seen
    give the same answer again."""
    rng = random.Random(seed)
    leaves = 4
    groups: list[tuple[selections.Test | None, list[str]]] = [
        (None if rng.random() < 0.1 else composite(rng, leaves), [f"b{i}", f"c{i}"][: rng.randint(1, 2)])
        for i in range(rng.randint(1, 30))
    ]
    compiled = selections.table_decider(groups, kernel.Decider)  # type: ignore[arg-type]
    generated = selections.generated_decider(groups)
    answers = set()
    for _ in range(300):
        values = row(rng, leaves)
        expected = blocks_one_by_one(groups, values)
        want = [tuple(expected)] if expected else []
        assert compiled(values) == want == generated(values), values
        assert compiled(values) == want  # again, now from its kept pattern
        answers.add(tuple(expected))
    assert len(answers) > 3  # rows bind different blocks


@needs_kernel
def test_a_decider_of_more_atoms_than_a_word_holds_keys_them_by_bytes() -> None:
    """Past 62 atoms the pattern is a bytes key: the same blocks."""
    rng = random.Random(7)
    groups: list[tuple[selections.Test | None, list[str]]] = [
        (("compare", i % 8, EQ, ast.Literal(f"v{i}")), [f"b{i}"]) for i in range(80)
    ]
    compiled = selections.table_decider(groups, kernel.Decider)  # type: ignore[arg-type]
    assert compiled.atoms == 80  # type: ignore[attr-defined]
    for _ in range(200):
        values = [tuple(f"v{rng.randrange(100)}" for _ in range(rng.randint(0, 3))) for _ in range(8)]
        expected = blocks_one_by_one(groups, values)
        assert compiled(values) == ([tuple(expected)] if expected else [])
    assert compiled.kept_patterns > 1  # type: ignore[attr-defined]


Entries = tuple[tuple[tuple[str, ...], selections.Test], ...]


def entries_of(groups: Sequence[tuple[selections.Test, list[str]]]) -> Entries:
    """A bucket's entries as a plan files them: each test once, with its blocks (selections.Indexed)."""
    return tuple((tuple(blocks), test) for test, blocks in groups)


def read_tests(
    entries: Entries, hot: int, make_hot: Callable[..., object]
) -> Callable[[object], list[tuple[str, ...]]]:
    assert kernel.Tests is not None
    return kernel.Tests(entries, EQ, selections.checker, hot, make_hot)


@needs_kernel
@pytest.mark.parametrize("seed", range(6))
def test_tests_read_as_they_are_bind_what_the_checkers_bind(seed: int) -> None:
    """A bucket's tests read off their tuples in C give each entry's block in the entries' order
    when its test holds, as its checker's closure decides it."""
    rng = random.Random(100 + seed)
    leaves = 3
    groups = [(composite(rng, leaves), [f"b{i}"]) for i in range(rng.randint(1, 12))]
    read = read_tests(entries_of(groups), 10**9, lambda entries: None)
    answers = set()
    for _ in range(300):
        values = row(rng, leaves)
        expected = blocks_one_by_one(groups, values)
        assert read(values) == ([tuple(expected)] if expected else []), values
        answers.add(tuple(expected))
    assert len(answers) > 1  # rows bind different blocks


@needs_kernel
def test_tests_nested_past_what_c_reads_go_to_the_checker() -> None:
    test: selections.Test = ("exists", 0)
    for depth in range(100):
        test = ("not", test) if depth % 2 else ("and", (test, ("exists", 1)))
    read = read_tests(((("b",), test),), 10**9, lambda entries: None)
    for values in ([("x",), ("y",)], [(), ("y",)], [("x",), ()]):
        assert read(values) == ([("b",)] if selections.checker(test)(values) else [])


@needs_kernel
def test_a_bucket_read_as_it_is_asks_for_its_decider_once_hot() -> None:
    """Past ``hot`` rows the bucket answers by the decider it asks for, once, the same blocks."""
    groups = [(("compare", 0, EQ, ast.Literal("de")), ["b1"]), (("exists", 1), ["b2", "b3"])]
    made: list[object] = []

    def make_hot(entries: Entries) -> object:
        made.append(entries)
        return selections.decider(selections._grouped(entries))

    read = read_tests(entries_of(groups), 2, make_hot)
    rows = [[("de",), ("t",)], [("en",), ()], [("de",), ()], [("en",), ("t",)]]
    answers = [read(values) for values in rows]
    assert answers == [[("b1", "b2", "b3")], [], [("b1",)], [("b2", "b3")]]
    assert len(made) == 1 and read.is_hot  # type: ignore[attr-defined]
    assert made[0] == entries_of(groups)


@needs_kernel
@pytest.mark.parametrize(
    "atoms",
    [[(99, 0, None)], [(-1, 0, None)], [(0, -1, None)]],
    ids=["kind past the last", "negative kind", "negative position"],
)
def test_the_decider_refuses_a_table_it_cannot_read(atoms: list[tuple[int, int, object]]) -> None:
    assert kernel.Decider is not None
    with pytest.raises(ValueError, match="Decider"):
        kernel.Decider(atoms, lambda key: (), 4, [0], 10, [0])


@needs_kernel
def test_the_decider_refuses_budgets_that_are_not_one_item_lists() -> None:
    assert kernel.Decider is not None
    with pytest.raises(ValueError, match="one-item"):
        kernel.Decider([], lambda key: (), 4, [], 10, [0])


def _none(values: object) -> list[tuple[str, ...]]:
    return []


ROW = (0, (("a",), ("b",)), ())


@needs_kernel
@pytest.mark.parametrize(
    ("checks", "rows", "error"),
    [
        ((_none, []), [ROW], ValueError),
        ((_none, [(0, None)], []), [ROW], TypeError),
        ((_none, [(0, ["a"])], []), [ROW], TypeError),
        ((_none, [], [(1, None, None)]), [ROW], TypeError),
        ((lambda values: None, [], []), [ROW], TypeError),
        ((lambda values: ("x",), [], []), [ROW], TypeError),
        ((_none, [(5, {})], []), [ROW], IndexError),
        ((_none, [], []), [(0,)], IndexError),
        ((_none, [], []), [None], TypeError),
    ],
    ids=[
        "two checks",
        "buckets that are None",
        "buckets that are a list",
        "needle buckets that are None",
        "a decider answering None",
        "a decider answering a tuple",
        "a leaf past the row",
        "a row too short",
        "a row that is None",
    ],
)
def test_the_filing_loop_refuses_what_it_cannot_read(checks: tuple, rows: list, error: type) -> None:
    """Malformed checks or rows raise, as the reference would, and never read memory the loop
    does not own (the module's bounds checks are off elsewhere)."""
    assert kernel.bind is not None
    with pytest.raises(error):
        kernel.bind(checks, rows, {}, lambda entries: None)
