"""Query templates of join subscriptions (paper 001, sections 4.1-4.4): counts, reduction, evaluation."""

from __future__ import annotations

import itertools
import random
import string

import pytest

from feedrouter.join.templates import (
    MAX_VALUE_JOINS,
    JoinGraph,
    LeafPath,
    Node,
    RTRow,
    Side,
    ValueJoin,
    classify,
    join_graph,
    pairs_of,
    reduce,
    template_of,
    template_pairs,
)

SEEDS = range(200)


def vj(left: str, right: str, left_single: bool = True, right_single: bool = True) -> ValueJoin:
    return ValueJoin(LeafPath(Side.LEFT, left, left_single), LeafPath(Side.RIGHT, right, right_single))


def edges(graph: JoinGraph) -> set[tuple[str, str, str]]:
    """The tree edges as (side, parent's path from the anchor or "" for the anchor, label)."""
    anchors = {node.id for node in graph.nodes if node.parent is None}

    def path(node: Node) -> str:
        if node.parent in anchors or node.parent is None:
            return node.label
        return f"{path(graph.node(node.parent))}/{node.label}"

    return {
        (node.side.value, "" if node.parent in anchors else path(graph.node(node.parent)), node.label)
        for node in graph.nodes
        if node.parent is not None
    }


# --- Table 3 of the paper, flat schema ---------------------------------------------------------


@pytest.mark.parametrize(("k", "expected"), [(1, 1), (2, 3), (3, 6), (4, 16)])
def test_flat_schema_template_counts_match_table_3(k: int, expected: int) -> None:
    # A template is a side-preserving isomorphism class of the bipartite graph of the k value
    # edges (each leaf hangs right under its anchor). A graph with k edges and no isolated node has
    # at most k nodes per side, so every class with k <= 4 occurs among 4 leaves per side, and
    # more leaves would only add relabelled copies of the same classes.
    leaves = "abcd"
    pairs = list(itertools.product(leaves, leaves))
    keys = {template_of([vj(a, b) for a, b in chosen]).key for chosen in itertools.combinations(pairs, k)}
    assert len(keys) == expected


def test_two_value_joins_fall_into_the_three_classes() -> None:
    assert template_of([vj("a", "x"), vj("a", "y")]).key == "L>l1 R>r1 R>r2 | l1=r1 l1=r2"
    assert template_of([vj("a", "x"), vj("b", "x")]).key == "L>l1 L>l2 R>r1 | l1=r1 l2=r1"
    assert template_of([vj("a", "x"), vj("b", "y")]).key == "L>l1 L>l2 R>r1 R>r2 | l1=r1 l2=r2"


def test_three_level_schema_keeps_the_anchor_unlike_the_paper() -> None:
    # The paper's LCA rule merges "both leaves under one m" with "both right under the root" and
    # counts 3 templates for two value joins; keeping the anchor (and m under it) counts 8.
    leaves = [f"{middle}/{leaf}" for middle in ("m1", "m2") for leaf in ("x", "y")]
    pairs = list(itertools.product(leaves, leaves))
    keys = {template_of([vj(a, b) for a, b in chosen]).key for chosen in itertools.combinations(pairs, 2)}
    assert len(keys) == 8


def test_sides_are_not_interchangeable() -> None:
    assert template_of([vj("a", "x"), vj("a", "y")]) != template_of([vj("a", "x"), vj("b", "x")])


# --- node sharing ------------------------------------------------------------------------------


def test_non_single_leaves_never_share_a_node() -> None:
    # $b/author = $x/a and $b/author = $x/c: two different authors may match.
    plural = [vj("author", "a", left_single=False), vj("author", "c", left_single=False)]
    single = [vj("author", "a"), vj("author", "c")]
    assert template_of(plural).key == "L>l1 L>l2 R>r1 R>r2 | l1=r1 l2=r2"
    assert template_of(single).key == "L>l1 R>r1 R>r2 | l1=r1 l1=r2"
    assert classify(plural)[1] == ("author", "author", "a", "c")


def test_a_path_that_is_single_in_one_comparison_only_is_two_nodes() -> None:
    joins = [vj("author", "a"), vj("author", "c", left_single=False)]
    assert template_of(joins).key == "L>l1 L>l2 R>r1 R>r2 | l1=r1 l2=r2"


def test_repeated_comparisons_count_once() -> None:
    once = [vj("author", "a", left_single=False)]
    assert template_of(once * 2) == template_of(once)


# --- reduction, golden cases -------------------------------------------------------------------

REDUCTIONS = [
    pytest.param(
        [vj("info/title", "t"), vj("info/author", "a")],
        {("left", "", "info"), ("left", "info", "title"), ("left", "info", "author")},
        id="shared-singleton-prefix-kept-as-lca",
    ),
    pytest.param([vj("info/title", "t")], {("left", "", "info/title")}, id="one-leaf-under-prefix-spliced"),
    pytest.param(
        [vj("info/title", "t"), vj("info/author", "a", left_single=False)],
        {("left", "", "info/title"), ("left", "", "info/author")},
        id="non-single-leaf-hangs-on-the-anchor",
    ),
    pytest.param(
        [vj("a/b/c", "t"), vj("a/b/d", "u")],
        {("left", "", "a/b"), ("left", "a/b", "c"), ("left", "a/b", "d")},
        id="chain-above-lca-spliced",
    ),
    pytest.param(
        [vj("a", "t"), vj("a/b", "u")],
        {("left", "", "a"), ("left", "a", "b")},
        id="joined-inner-node-not-spliced",
    ),
    pytest.param(
        [vj("x//c", "t"), vj("x/d", "u"), vj(".//e", "v"), vj("p[q/r]/s", "w")],
        {("left", "", "x"), ("left", "x", "/c"), ("left", "x", "d")}
        | {("left", "", ".//e"), ("left", "", "p[q/r]/s")},
        id="descendant-steps-and-predicates",
    ),
]


@pytest.mark.parametrize(("joins", "left_edges"), REDUCTIONS)
def test_reduction(joins: list[ValueJoin], left_edges: set[tuple[str, str, str]]) -> None:
    reduced = edges(reduce(join_graph(joins)))
    assert {edge for edge in reduced if edge[0] == "left"} == left_edges


def test_unreduced_graph_has_every_step() -> None:
    graph = join_graph([vj("info/title", "t")])
    assert edges(graph) == {("left", "", "info"), ("left", "info", "title"), ("right", "", "t")}
    assert graph.value_edges == ((3, 4),)


def test_reduction_drops_unjoined_branches_but_never_an_anchor() -> None:
    nodes = (
        Node(0, Side.LEFT, None, ""),
        Node(1, Side.RIGHT, None, ""),
        Node(2, Side.LEFT, 0, "x"),
        Node(3, Side.LEFT, 2, "y"),
        Node(4, Side.LEFT, 0, "a"),
        Node(5, Side.RIGHT, 1, "b"),
    )
    reduced = reduce(JoinGraph(nodes, ((4, 5),)))
    assert [node.id for node in reduced.nodes] == [0, 1, 4, 5]
    assert [node.id for node in reduce(JoinGraph(nodes[:2], ())).nodes] == [0, 1]


def test_reduced_template_for_prefixes() -> None:
    template, bindings = classify([vj("info/title", "t"), vj("info/author", "a")])
    assert template.key == "L>l1 l1>l2 l1>l3 R>r1 R>r2 | l2=r1 l3=r2"
    assert bindings == ("info", "author", "title", "a", "t")
    paths = {"l1": "info", "l2": "info/author", "l3": "info/title", "r1": "a", "r2": "t"}
    assert template.paths(bindings) == paths


def test_template_query_binds_a_shared_leaf_once() -> None:
    # The shared node is one variable of the query: one value must equal both. The comparisons
    # ask less (some author equals a, some author equals c), which is the same only because a
    # single path has at most one value; data breaking that shows which one the query evaluates.
    joins = [vj("author", "a"), vj("author", "c")]
    template, bindings = classify(joins)
    left = {"book": {"author": {"Ayers", "Watt"}}}
    right = {"blog": {"a": {"Ayers"}, "c": {"Watt"}}}
    assert pairs_of(joins, left, right) == {("book", "blog")}
    assert template_pairs(template, bindings, left, right) == set()
    left["book"]["author"] = {"Ayers"}
    right["blog"]["c"] = {"Ayers", "Watt"}
    assert template_pairs(template, bindings, left, right) == {("book", "blog")}
    assert pairs_of(joins, left, right) == {("book", "blog")}


# --- the template object -----------------------------------------------------------------------


def test_rt_row_and_columns() -> None:
    joins = [vj("author", "a"), vj("title", "a")]
    template = template_of(joins)
    row = template.row(42, joins, 3600.0)
    assert row == RTRow(42, ("author", "title", "a"), 3600.0)
    assert template.columns() == ("qid", "l1", "l2", "r1", "window")
    assert row.as_tuple() == (42, "author", "title", "a", 3600.0)


def test_describe() -> None:
    template = template_of([vj("info/title", "t"), vj("info/author", "t")])
    assert template.describe("T3") == (
        "T3: left anchor with 2 leaves and 1 intermediate node, right anchor with 1 leaf,"
        " value edges l2=r1 l3=r1"
    )


def test_bindings_of_another_template_are_refused() -> None:
    with pytest.raises(ValueError, match="template"):
        template_of([vj("a", "x")]).bindings([vj("a", "x"), vj("b", "y")])


def test_template_size_is_capped() -> None:
    many = [vj(f"p{i}", f"q{i % 2}") for i in range(MAX_VALUE_JOINS + 1)]
    with pytest.raises(ValueError, match=f"at most {MAX_VALUE_JOINS}"):
        template_of(many)
    assert len(template_of(many[:-1]).value_edges) == MAX_VALUE_JOINS


def test_joins_and_paths_are_checked() -> None:
    with pytest.raises(ValueError, match="left path with a right path"):
        ValueJoin(LeafPath(Side.RIGHT, "a", True), LeafPath(Side.RIGHT, "b", True))
    with pytest.raises(ValueError, match="relative"):
        LeafPath(Side.LEFT, "/a", True)


# --- properties over random subscriptions ------------------------------------------------------

LEFT_PATHS = ["a", "b", ".", "@id", "info/a", "info/b", "info/c/d", "x//c"]
RIGHT_PATHS = ["a", "c", "meta/a", "meta/b", "t/u/v", "@ref"]
ALPHABET = "xyz"


def random_joins(rng: random.Random) -> list[ValueJoin]:
    # Few paths per subscription, so that leaves and prefixes repeat.
    lefts, rights = rng.sample(LEFT_PATHS, 3), rng.sample(RIGHT_PATHS, 3)
    joins = [
        vj(rng.choice(lefts), rng.choice(rights), rng.random() < 0.7, rng.random() < 0.7)
        for _ in range(rng.randint(1, 4))
    ]
    if rng.random() < 0.3:  # a repeated comparison
        joins.append(rng.choice(joins))
    return joins


Witnesses = dict[int, dict[str, set[str]]]


def random_witnesses(rng: random.Random, paths: list[str], singles: set[str]) -> Witnesses:
    # Values come from a small alphabet so that matches happen; a path that some comparison calls
    # single selects at most one node per bound node, as the DTD guarantees.
    witnesses: Witnesses = {}
    for anchor in range(rng.randint(2, 5)):
        witnesses[anchor] = {path: random_values(rng, path in singles) for path in paths}
    return witnesses


def random_values(rng: random.Random, single: bool) -> set[str]:
    if rng.random() < 0.15:
        return set()
    return set(rng.sample(ALPHABET, 1 if single else rng.randint(1, len(ALPHABET))))


def singles(joins: list[ValueJoin], side: Side) -> set[str]:
    leaves = [join.left if side is Side.LEFT else join.right for join in joins]
    return {leaf.path for leaf in leaves if leaf.single}


@pytest.mark.parametrize("seed", SEEDS)
def test_template_query_selects_what_the_comparisons_select(seed: int) -> None:
    rng = random.Random(seed)
    joins = random_joins(rng)
    left = random_witnesses(rng, LEFT_PATHS, singles(joins, Side.LEFT))
    right = random_witnesses(rng, RIGHT_PATHS, singles(joins, Side.RIGHT))
    template, bindings = classify(joins)
    assert template_pairs(template, bindings, left, right) == pairs_of(joins, left, right)


def renamer(rng: random.Random) -> dict[str, str]:
    """An injective renaming of the name steps the random paths use ("." and "@" stay)."""
    steps = {step.strip("@") for path in LEFT_PATHS + RIGHT_PATHS for step in path.split("/")}
    names = sorted(steps - {"", "."})
    fresh = rng.sample([a + b for a in string.ascii_lowercase for b in string.ascii_lowercase], len(names))
    return dict(zip(names, fresh, strict=True))


def rename(path: str, names: dict[str, str]) -> str:
    return "/".join("".join(names.get(part, part) for part in _tokens(step)) for step in path.split("/"))


def _tokens(step: str) -> list[str]:
    return ["@", step[1:]] if step.startswith("@") else [step]


def renamed(join: ValueJoin, names: dict[str, str]) -> ValueJoin:
    return ValueJoin(
        LeafPath(Side.LEFT, rename(join.left.path, names), join.left.single),
        LeafPath(Side.RIGHT, rename(join.right.path, names), join.right.single),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_isomorphic_subscriptions_share_the_template_and_differ_in_labels(seed: int) -> None:
    rng = random.Random(seed)
    joins = random_joins(rng)
    names = renamer(rng)
    twin = [renamed(join, names) for join in joins]
    rng.shuffle(twin)
    template, bindings = classify(joins)
    twin_template, twin_bindings = classify(twin)
    assert twin_template == template
    assert sorted(twin_bindings) == sorted(rename(label, names) for label in bindings)
    # The renamed row is as good a row for the twin as its own one.
    left = random_witnesses(rng, [rename(p, names) for p in LEFT_PATHS], singles(twin, Side.LEFT))
    right = random_witnesses(rng, [rename(p, names) for p in RIGHT_PATHS], singles(twin, Side.RIGHT))
    own = template_pairs(template, twin_bindings, left, right)
    assert own == template_pairs(template, [rename(label, names) for label in bindings], left, right)
    assert own == pairs_of(twin, left, right)


@pytest.mark.parametrize("seed", SEEDS)
def test_templates_do_not_depend_on_the_order_of_the_joins(seed: int) -> None:
    rng = random.Random(seed)
    joins = random_joins(rng)
    shuffled = rng.sample(joins, len(joins))
    assert classify(shuffled) == classify(joins)


def test_a_names_uri_is_not_split_at_its_slashes() -> None:
    """``Q{http://example.com/ns}x`` is one step: a namespaced attribute leaf is one node of the
    join graph, as a plain one is (a review found made-up intermediate nodes, another template,
    and a canonical form tens of times slower)."""
    from feedrouter.join.templates import _steps

    assert _steps("@Q{http://example.com/ns}x") == ("@Q{http://example.com/ns}x",)
    assert _steps("Q{urn:a/b}c/Q{urn:d/e}f") == ("Q{urn:a/b}c", "Q{urn:d/e}f")


def test_any_attribute_is_not_one_node_of_the_join_graph() -> None:
    """``$a/@*`` may be several attributes: two joins on it keep a leaf each (sharing one would
    make the reduced query ask one attribute to equal both values)."""
    from feedrouter.join.plan import _single
    from feedrouter.lang.ast import AttributeTest, QName, RelPath

    assert _single(RelPath(tail=AttributeTest(QName("", "lang"))))
    assert not _single(RelPath(tail=AttributeTest(QName("", "*"))))
    assert not _single(RelPath(tail=AttributeTest(QName("*", "lang"))))
