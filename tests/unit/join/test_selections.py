"""Witness plans with the blocks' checkable conditions factored out (feedrouter.join.selections):
which conditions are factored, and that a factored base binds exactly the nodes every block's own
plan binds."""

from __future__ import annotations

import contextlib
import gc
import pickle
import random
import sys

import pytest

from feedrouter import Router, kernel
from feedrouter.join import selections
from feedrouter.join.plan import BlockSpec, JoinSet
from feedrouter.join.relations import MessageRef, message_witnesses
from feedrouter.join.selections import NeedleFinder, Selection, WitnessPlans, factor, witness_plans
from feedrouter.lang import ast, parse
from feedrouter.plan.functions import matches_literal

PROLOG = 'import module namespace fr = "urn:feedrouter:stream:1";\n'


def block(binding: str, where: str = "") -> BlockSpec:
    """The left block of a join whose left side is ``binding`` with ``where`` on ``$a``."""
    condition = f"{where} and " if where else ""
    text = PROLOG + (
        f"for $a in fr:stream(){binding}, $b in fr:stream()//item "
        f'where {condition}$a/title = $b/title and fr:within($a, $b, "PT1H") return <r/>'
    )
    joins = JoinSet()
    plan = joins.add("1", parse(text), "f")
    return joins.specs[plan.blocks[0]]


def test_equalities_existence_and_string_tests_on_the_bound_node_are_factored() -> None:
    spec = block(
        '//item[category = "c1"][ticker]',
        '$a/author = "A" and not($a/@lang = "de") and contains($a/title, "x") and $a/price > 5',
    )
    found = factor(spec)
    assert found.base.text == "for $w in //item return $w"
    assert found.selections == (Selection("author", "A"), Selection("category", "c1"))
    assert len(found.conditions) == 6


@pytest.mark.parametrize(
    ("binding", "where", "base"),
    [
        ('//item[category = "c1"][1]', "", '//item[category = "c1"][1]'),  # a position counts on it
        ('//channel[title = "t"]/item', "", '//channel[title = "t"]/item'),  # not the bound node
        ("//item", 'matches($a/title, "^a")', 'where matches($w/title, "^a")'),  # regex: time-bounded plan
        ("//item", '$a/author[@id = "1"] = "A"', "where $w/author[@id"),  # a path with a predicate
        ("//item", '$a/../title = "A"', "where $w/../title"),  # a backward step
    ],
)
def test_conditions_rows_cannot_decide_stay_in_the_base(binding: str, where: str, base: str) -> None:
    found = factor(block(binding, where))
    assert base in found.base.text and not found.selections


def test_a_block_without_factored_conditions_is_its_own_base() -> None:
    spec = block("//item")
    assert factor(spec).base is spec and witness_plans([spec], min_shared=1).bases == {spec.id: spec}


def test_small_groups_keep_their_blocks_and_large_ones_share_a_base() -> None:
    specs = [block("//item"), *(block(f'//item[author = "A{i}"]') for i in range(5))]
    assert set(witness_plans(specs, min_shared=7).bases) == {s.id for s in specs}
    plans = witness_plans(specs, min_shared=6)
    (base,) = plans.bases.values()
    assert base.text == "for $w in //item return $w" and "author" in base.leaves and "title" in base.leaves


@pytest.mark.parametrize("broad", ["//item", "//item[not(ticker)]", '//item[@lang != "de"]'])
def test_selective_blocks_share_a_base_only_with_a_broad_one(broad: str) -> None:
    """A base reads every item: worth it when one of its blocks reads them anyway."""
    selective = [block(f'//item[author = "A{i}"]') for i in range(20)]
    selective += [block(f'//item[contains(title, "w{i}")]') for i in range(20)]
    assert len(witness_plans(selective, min_shared=1).bases) == 40
    assert len(witness_plans([*selective, block(broad)], min_shared=1).bases) == 1


#: items with what the factored tests must get right: repeated children (general comparisons are
#: existential), missing and empty ones, two titles (a string function of more than one node is
#: false), numbers that are not numbers, attributes present or not
ITEM_PARTS = (
    "<author>A1</author>",
    "<author>A2</author>",
    "<author></author>",
    "<category>c1</category>",
    "<category>c2</category>",
    "<title>Oil and Banks</title>",
    "<title>Rail</title>",
    "<ticker>T</ticker>",
    "<price>7</price>",
    "<price>x</price>",
    "<price>3.5</price>",
)
CONDITIONS = (
    '$a/author = "A1"',
    '$a/author = "A2"',
    '$a/author = ""',
    '$a/category = "c1"',
    '$a/category != "c1"',
    '$a/@lang = "de"',
    'not($a/@lang = "de")',
    "$a/ticker",
    "not($a/ticker)",
    '($a/ticker or $a/category = "c2")',
    'contains($a/title, "Banks")',
    'contains($a/title, "Rail")',
    'starts-with($a/title, "Oil")',
    'ends-with($a/title, "")',
    "$a/price > 5",
    '$a/price = "7"',
    '$a/text() = "loose"',
)


@pytest.fixture(params=["kernel", "python"])
def deciders(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test of this fixture runs with the compiled deciders (:mod:`feedrouter.kernel`) and
    with the Python path (generated functions and the checkers' closures): the same blocks."""
    if request.param == "python":
        python_deciders(monkeypatch)
    elif kernel.Decider is None:
        pytest.skip("the compiled kernel is turned off or not built")
    return str(request.param)


def python_deciders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "Decider", None)
    monkeypatch.setattr(kernel, "Tests", None)
    monkeypatch.setattr(kernel, "bind", None)
    monkeypatch.setattr(kernel, "file_rows", None)


def generated_blocks(rng: random.Random, n: int) -> list[BlockSpec]:
    specs = {}
    for _ in range(n):
        picked = rng.sample(CONDITIONS, rng.randint(1, 3))
        in_step = [c.replace("$a/", "") for c in picked[:1]] if rng.random() < 0.4 else []
        where = " and ".join(picked[len(in_step) :])
        binding = "//item" + "".join(f"[{c}]" for c in in_step)
        spec = block(binding, where)
        specs[spec.id] = spec
    return list(specs.values())


def generated_item(rng: random.Random) -> bytes:
    lang = rng.choice(["", ' lang="de"', ' lang="en"'])
    parts = "".join(rng.sample(ITEM_PARTS, rng.randint(0, 6)))
    loose = "loose" if rng.random() < 0.2 else ""
    return f"<rss><channel><item{lang}>{loose}{parts}</item><item>{parts}</item></channel></rss>".encode()


def roots_of(plans: WitnessPlans, documents: list[bytes]) -> list[dict[str, list[int]]]:
    router = Router()
    for spec in plans.bases.values():
        router.add_witness(spec)
    message = MessageRef("m", 0, None)
    return [message_witnesses(message, router.route_outcome(d).witnesses, plans).roots for d in documents]


@pytest.mark.parametrize("hot", [0, selections.HOT])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_factored_base_binds_what_each_block_binds(
    seed: int, hot: int, deciders: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a bucket's tests are read as they are (the kernel) or run through the checkers'
    closures (the Python path) for ``hot`` rows first, here all of them, or through its decider
    (from its first row on), it files what each block's own plan binds."""
    monkeypatch.setattr(selections, "HOT", hot)
    rng = random.Random(seed)
    specs = generated_blocks(rng, 60)
    documents = [generated_item(rng) for _ in range(80)]
    factored = witness_plans(specs, min_shared=1)
    assert len(factored.bases) < len(specs) // 2  # most blocks share a base
    one_by_one = witness_plans(specs, min_shared=sys.maxsize)
    expected, found = roots_of(one_by_one, documents), roots_of(factored, documents)
    assert found == expected
    assert sum(len(r) for r in found) > 500  # blocks bound nodes in most documents


def _plans_twice_and_their_router(
    rng: random.Random, blocks: int
) -> tuple[WitnessPlans, dict[str, WitnessPlans], Router]:
    """Generated blocks' witness plans, a copy of them for the kernel and one for the Python path
    (each files on its own buckets), and a router with the plans' bases."""
    plans = witness_plans(generated_blocks(rng, blocks), min_shared=1)
    copies = {"kernel": pickle.loads(pickle.dumps(plans)), "python": pickle.loads(pickle.dumps(plans))}
    router = Router()
    for spec in plans.bases.values():
        router.add_witness(spec)
    return plans, copies, router


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_the_compiled_filing_loop_files_what_its_reference_files(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """:func:`feedrouter.kernel.bind` against :meth:`Served.bind`'s Python loop, each on its own
    copy of the plans, row by row: the same rows kept, the same groups filed per node in the same
    order (a node filed by an earlier call keeps its groups and gets the new ones after them), and
    the same keys made buckets (selections, needles of the three string functions, repeated and
    missing leaves, two titles)."""
    if kernel.bind is None:
        pytest.skip("the compiled kernel is turned off or not built")
    compiled = kernel.bind
    rng = random.Random(seed)
    _, copies, router = _plans_twice_and_their_router(rng, 80)
    bound: dict[str, dict[int, list[tuple[str, ...]]]] = {"kernel": {}, "python": {}}
    kept = 0
    for _ in range(120):
        witnesses = router.route_outcome(generated_item(rng)).witnesses
        for plan, rows in witnesses.items():
            found = {}
            for way, copy in copies.items():
                monkeypatch.setattr(kernel, "bind", compiled if way == "kernel" else None)
                served = copy.served.get(plan)
                found[way] = None if served is None else served.bind(rows, bound[way])
            assert found["kernel"] == found["python"]
            kept += len(found["kernel"] or ())
        assert bound["kernel"] == bound["python"]
    assert kept > 100  # rows were filed
    for plan, served in copies["kernel"].served.items():
        reference = copies["python"].served[plan]
        for (_, made), (_, expected) in zip(served._checks()[1], reference._checks()[1], strict=True):
            assert {k for k, v in made.items() if not isinstance(v, list)} == {
                k for k, v in expected.items() if not isinstance(v, list)
            }
        for (_, _, made), (_, _, expected) in zip(served._checks()[2], reference._checks()[2], strict=True):
            assert {k for k, v in made.items() if not isinstance(v, list)} == {
                k for k, v in expected.items() if not isinstance(v, list)
            }


@pytest.mark.parametrize("seed", [3, 4])
def test_the_compiled_message_filing_files_what_its_reference_files(seed: int) -> None:
    """:meth:`WitnessPlans.file` in one compiled call (:func:`feedrouter.kernel.file_rows`) against
    its Python loop, each on its own copy of the plans, message by message: the same groups filed
    per node, the same rows with their plans' names in the same order; a plan the build does not
    serve (another build's) left out both ways."""
    if kernel.file_rows is None or kernel.bind is None:
        pytest.skip("the compiled kernel is turned off or not built")
    rng = random.Random(seed)
    plans, copies, router = _plans_twice_and_their_router(rng, 60)
    stranger = block("//item", "$a/title")  # another build's plan: its rows are not this build's
    router.add_witness(stranger)
    filed = 0
    for _ in range(100):
        witnesses = router.route_outcome(generated_item(rng)).witnesses
        found = {}
        for way, copy in copies.items():
            with kernel.turned_off() if way == "python" else contextlib.nullcontext():
                message = message_witnesses(MessageRef("m", 0, None), witnesses, copy)
            found[way] = (message.bound, message.rows)
        assert found["kernel"] == found["python"]
        filed += len(found["kernel"][1])
    assert filed > 50
    table = copies["kernel"].__dict__["_filing"]
    assert table[stranger.id] is None and set(table) <= {*plans.served, stranger.id}
    assert "_filing" not in pickle.loads(pickle.dumps(copies["kernel"])).__dict__


def test_the_compiled_message_filing_refuses_what_it_cannot_read() -> None:
    """A plan's entry that is not ``(checks, names)`` raises, and a table that is not a dict is
    refused before it is read."""
    if kernel.file_rows is None:
        pytest.skip("the compiled kernel is turned off or not built")
    with pytest.raises(TypeError):
        kernel.file_rows({"p": []}, {"p": ["checks", "names"]}, {}, [], None, None)
    with pytest.raises(TypeError):
        kernel.file_rows({"p": []}, [], {}, [], None, None)
    with pytest.raises(TypeError):
        kernel.file_rows({"p": []}, {}, {}, [], None, lambda plan: "not an entry")
    for short in ((), ("checks",)):
        with pytest.raises(IndexError):
            kernel.file_rows({"p": []}, {"p": short}, {}, [], None, None)


def test_witness_plans_pickle_without_their_compiled_tests() -> None:
    specs = [block(f'//item[author = "A{i}"]', "not($a/ticker)") for i in range(3)]
    plans = witness_plans(specs, min_shared=1)
    document = b"<item><author>A1</author><title>t</title></item>"
    before = roots_of(plans, [document])  # compiles the tests
    again = pickle.loads(pickle.dumps(plans))
    assert roots_of(again, [document]) == before == [{specs[1].id: [0]}]


#: the @lang of the documents :func:`file_one_key` routes, in order
LANGS = ("de", "en", "fr") * 2


def file_one_key(made: list[object]) -> tuple[list[BlockSpec], WitnessPlans, dict, list, list[int]]:
    """Blocks filed under three authors' keys, each with a @lang test, and documents that bring
    one key only (A1's) under three languages, twice: the blocks, the plans, that key's buckets,
    each document's roots, and how many deciders had been made (``made``, counted by the caller's
    spy) once each was filed. The broad blocks' decider (``//item``) is made first, on the checks."""
    specs = [
        block(f'//item[author = "A{i}"]', f'$a/@lang = "{lang}"') for i in range(3) for lang in ("de", "en")
    ]
    plans = witness_plans([*specs, block("//item")], min_shared=1)
    (served,) = plans.served.values()
    _, index, _ = served._checks()
    ((position, buckets),) = index
    assert len(made) == 1  # the broad blocks' decider, not a bucket's
    router = Router()
    for spec in plans.bases.values():
        router.add_witness(spec)
    message = MessageRef("m", 0, None)
    found, counts = [], []
    for lang in LANGS:
        document = f'<item lang="{lang}"><author>A1</author></item>'.encode()
        found.append(message_witnesses(message, router.route_outcome(document).witnesses, plans).roots)
        counts.append(len(made) - 1)
    assert isinstance(buckets["A0"], list) and isinstance(buckets["A2"], list)  # no row brought them
    assert all(isinstance(entries, list) for entries in served.index[position].values())  # as pickled
    broad = block("//item").id
    for roots, lang in zip(found, LANGS, strict=True):
        expected = {broad} | ({specs[2 + (lang == "en")].id} if lang != "fr" else set())
        assert set(roots) == expected, lang
    return specs, plans, buckets, found, counts


def test_a_key_gets_its_bucket_on_its_first_row_and_its_function_once_hot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A key's bucket is made on the first row that brings it (the rest stay entries); its tests
    run through the checkers' closures for :data:`selections.HOT` rows, then through one function
    generated for it, the same blocks throughout (the Python path)."""
    python_deciders(monkeypatch)
    monkeypatch.setattr(selections, "HOT", 3)
    made: list[object] = []
    generate = selections.decider

    def counted(groups: list[tuple[selections.Test | None, list[str]]]) -> object:
        made.append(groups)
        return generate(groups)

    monkeypatch.setattr(selections, "decider", counted)
    _, plans, buckets, found, generated = file_one_key(made)
    assert generated == [0, 0, 0, 1, 1, 1]  # generated on the fourth row, once
    assert isinstance(buckets["A1"], selections._Bucket)
    router = Router()
    for spec in plans.bases.values():
        router.add_witness(spec)
    again = pickle.loads(pickle.dumps(plans))
    message = MessageRef("m", 0, None)
    documents = [f'<item lang="{lang}"><author>A1</author></item>'.encode() for lang in LANGS]
    assert [
        message_witnesses(message, router.route_outcome(d).witnesses, again).roots for d in documents
    ] == found


def test_with_the_kernel_a_bucket_reads_its_tests_until_hot_and_compiles_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the compiled path a key's bucket reads its tests as they are from its first row (no
    function is generated or compiled for it, no closures made) and asks for its table decider
    once past :data:`selections.HOT` rows: the same blocks throughout, and the pickled index
    untouched."""
    if kernel.Tests is None:
        pytest.skip("the compiled kernel is turned off or not built")
    monkeypatch.setattr(selections, "HOT", 3)

    def refuse(*args: object) -> None:
        raise AssertionError("nothing is compiled on the kernel's path")

    monkeypatch.setattr(selections, "_code", refuse)
    monkeypatch.setattr(selections, "_one_by_one", refuse)
    made: list[object] = []
    table = selections.table_decider

    def counted(groups: list[tuple[selections.Test | None, list[str]]], make: object) -> object:
        made.append(groups)
        return table(groups, make)  # type: ignore[arg-type]

    monkeypatch.setattr(selections, "table_decider", counted)
    _, _, buckets, _, tables = file_one_key(made)
    assert tables == [0, 0, 0, 1, 1, 1]  # the bucket's table decider on its fourth row, once
    assert buckets["A1"].decide.is_hot


def test_deciders_of_the_same_shape_share_their_compiled_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two buckets whose tests differ only in their literals share one code object, each deciding
    with its own (the Python path)."""
    python_deciders(monkeypatch)
    first = selections.decider([(("compare", 0, ast.CompOp.EQ, ast.Literal("de")), ["b1"])])
    second = selections.decider([(("compare", 0, ast.CompOp.EQ, ast.Literal("en")), ["b2"])])
    assert first.__code__ is second.__code__
    assert first([["de"]]) == [("b1",)] and second([["de"]]) == []
    assert second([["en"]]) == [("b2",)] and first([["en"]]) == []


@pytest.mark.parametrize("empty", [True, False])
@pytest.mark.parametrize("name", ["contains", "starts-with", "ends-with"])
def test_the_needle_finder_finds_what_trying_every_needle_finds(name: str, empty: bool) -> None:
    rng = random.Random(name)
    alphabet = "abcé "
    needles = {*("".join(rng.choices(alphabet, k=rng.randint(1, 6))) for _ in range(300))}
    if empty:  # every string contains (starts, ends with) the empty string
        needles.add("")
    finder = NeedleFinder(name, needles)
    found = 0
    for _ in range(400):
        string = "".join(rng.choices(alphabet, k=rng.randint(0, 12)))
        expected = {n for n in needles if matches_literal(name, string, (n,))}
        assert finder.find(string) == expected, (name, string)
        found += len(expected)
    assert found > 500  # the test is not vacuous


@pytest.mark.parametrize("seed", [4, 5])
def test_tests_decided_one_by_one_find_the_same_blocks(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test through the closures of :func:`selections.checker` (what deciding falls back to
    where Python cannot compile the generated function) files what the plans do unfactored."""

    def refuse(*args: object) -> None:
        raise RecursionError("too deep")

    python_deciders(monkeypatch)
    monkeypatch.setattr(selections, "_code", refuse)
    monkeypatch.setattr(selections, "HOT", 0)  # buckets too would generate theirs
    rng = random.Random(seed)
    specs = generated_blocks(rng, 60)
    documents = [generated_item(rng) for _ in range(80)]
    expected = roots_of(witness_plans(specs, min_shared=sys.maxsize), documents)
    assert roots_of(witness_plans(specs, min_shared=1), documents) == expected


def test_a_block_is_found_by_the_key_fewest_rows_bring_with_many_blocks() -> None:
    """``@lang = "en"`` is shared by every block (a row with it would test them all); each
    block's needle is its own, so that is what finds it. A rare author still beats a needle."""
    specs = [block(f'//item[@lang = "en"][contains(title, "w{i:03}")]', "") for i in range(40)]
    specs.append(block('//item[@lang = "en"][author = "A1"][contains(title, "w000")]', ""))
    plans = witness_plans([*specs, block("//item", "")], min_shared=1)
    (served,) = plans.served.values()
    needles = {needle for by in served.needles.values() for needle in by}
    assert needles == {f"w{i:03}" for i in range(40)}
    assert [list(by) for by in served.index.values()] == [["A1"]]
    document = b'<item lang="en"><author>A1</author><title>x w000 y</title></item>'
    (roots,) = roots_of(plans, [document])
    assert set(roots) == {specs[0].id, specs[-1].id, block("//item", "").id}


def test_blocks_written_apart_with_one_test_under_a_key_are_one_entry(deciders: str) -> None:
    """Subscribers write one selection many ways (a predicate or a where clause, conditions in
    another order): different blocks that the plan files under the same key with the same test of
    their other conditions. They are one entry, built with the plan: a row decides the test once
    and binds them all; blocks without other conditions are bound outright, together, their group
    first."""
    ticker = [
        block('//item[author = "A0"][ticker]'),
        block('//item[author = "A0"]', "$a/ticker"),
        block("//item", '$a/ticker and $a/author = "A0"'),
    ]
    plain = [block('//item[author = "A0"]'), block("//item", '$a/author = "A0"')]
    other = [block('//item[author = "A0"]', 'not($a/@lang = "de")'), block('//item[author = "A1"][ticker]')]
    specs = [*ticker, *plain, *other, block("//item")]
    assert len({spec.id for spec in specs}) == len(specs)  # different blocks, each its own roots
    plans = witness_plans(specs, min_shared=1)
    (served,) = plans.served.values()
    ((_, by_value),) = served.index.items()
    entries = {test: set(blocks) for blocks, test in by_value["A0"]}
    assert len(by_value["A0"]) == len(entries) == 3
    assert entries[None] == {spec.id for spec in plain}
    # filed after the ticker blocks, the untested group still comes first: a bucket splits it off
    # with a slice
    assert by_value["A0"][0] == (tuple(spec.id for spec in plain), None)
    assert {spec.id for spec in ticker} in entries.values()
    assert [blocks for blocks, _ in by_value["A1"]] == [(other[1].id,)]  # grouped per key only
    documents = [
        b'<item lang="de"><author>A0</author><ticker>T</ticker></item>',
        b"<item><author>A0</author></item>",
        b"<item><author>A1</author><ticker>T</ticker></item>",
        b'<item lang="en"><author>A0</author><author>A1</author><ticker>T</ticker></item>',
    ]
    found = roots_of(plans, documents)
    assert found == roots_of(witness_plans(specs, min_shared=sys.maxsize), documents)
    assert {spec.id for spec in ticker} <= set(found[0]) and not set(found[1]) & {s.id for s in ticker}
    again = pickle.loads(pickle.dumps(plans))  # as a worker has the plan
    assert roots_of(again, documents) == found


def test_the_decider_holds_only_positions_and_constant_indexes(deciders: str) -> None:
    """A subscription's literal never becomes source text: the generated function reads it from
    its table of constants."""
    test = ("or", (("compare", 0, ast.CompOp.EQ, ast.Literal('x"); import os; ("')), ("not", ("exists", 1))))
    decide = selections.decider([(test, ["b1"]), (None, ["b2"])])
    assert decide([['x"); import os; ("'], ["v"]]) == [("b1", "b2")]
    assert decide([["y"], ["v"]]) == [("b2",)]
    assert decide([["y"], []]) == [("b1", "b2")]


def test_the_decider_keeps_the_blocks_of_its_first_patterns(
    deciders: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows whose atoms have the same truth values get the blocks worked out on the first such
    row (the same tuple); past :data:`selections.PATTERNS` patterns a row's blocks are worked out
    afresh, and they are the same blocks."""
    monkeypatch.setattr(selections, "PATTERNS", 2)
    groups: list[tuple[selections.Test | None, list[str]]] = [(("exists", i), [f"b{i}"]) for i in range(3)]
    decide = selections.decider([*groups, (("not", ("exists", 0)), ["none0"])])
    rows = [[["x"] if mask >> i & 1 else [] for i in range(3)] for mask in range(8)]
    for _ in range(2):
        for mask, row in enumerate(rows):
            expected = tuple(f"b{i}" for i in range(3) if mask >> i & 1) + (() if mask & 1 else ("none0",))
            assert decide(row) == [expected]
    assert decide(rows[1])[0] is decide(rows[1])[0]  # the second pattern seen: kept
    assert decide(rows[7])[0] is not decide(rows[7])[0]  # past the first two: worked out again
    assert selections.decider([(("exists", 0), ["b0"])])([[]]) == []  # nothing holds: no tuple


def test_the_deciders_keep_patterns_within_the_process_budget(
    deciders: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every decider's kept patterns share one budget of references (a pattern's atoms and its
    blocks): past it a new pattern's blocks are worked out afresh, the same blocks; a decider that
    goes gives its references back."""
    monkeypatch.setattr(selections, "_KEPT", [0])
    monkeypatch.setattr(selections, "KEPT_BUDGET", 5)
    groups: list[tuple[selections.Test | None, list[str]]] = [(("exists", i), [f"b{i}"]) for i in range(2)]
    decide = selections.decider(groups)
    both, second = [["x"], ["x"]], [[], ["x"]]
    assert decide(both) == [("b0", "b1")]  # kept: 2 atoms and 2 blocks
    assert selections._KEPT == [4]
    assert decide(second) == [("b1",)]  # kept too: the budget is checked before
    assert selections._KEPT == [7]
    other = selections.decider(groups)
    assert other(both) == [("b0", "b1")] and other(both)[0] is not other(both)[0]  # past the budget
    assert decide(both)[0] is decide(both)[0]  # its own kept pattern still answers
    del decide
    gc.collect()
    assert selections._KEPT == [0]
    assert other(both)[0] is other(both)[0]  # kept now


@pytest.mark.parametrize("name", ["contains", "starts-with", "ends-with"])
def test_generated_string_matches_decide_as_the_checker_does(name: str, deciders: str) -> None:
    """The generated function's inline ``contains``/``starts-with``/``ends-with`` against the
    checker's: no value is the empty string, two values make the call false."""
    rows = [[()], [("",)], [("ab",)], [("xab",)], [("abx",)], [("ab", "ab")], [("b",)]]
    for needle in ("ab", "", "b"):
        test = ("match", 0, name, (needle,))
        decide = selections.decider([(test, ["b1"])])
        for row in rows:
            assert decide(row) == ([("b1",)] if selections.checker(test)(row) else []), (needle, row)


def test_tests_past_what_python_compiles_are_decided_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise RecursionError("too deep")

    python_deciders(monkeypatch)
    monkeypatch.setattr(selections, "_code", refuse)
    test = ("and", (("exists", 0), ("not", ("compare", 1, ast.CompOp.EQ, ast.Literal("de")))))
    decide = selections.decider([(test, ["b1"]), (None, ["b2"])])
    assert decide([["t"], ["en"]]) == [("b1", "b2")]
    assert decide([["t"], ["de"]]) == decide([[], ["en"]]) == [("b2",)]
