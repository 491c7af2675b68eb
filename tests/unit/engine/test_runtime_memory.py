"""The runtime's memory per element (issue 18, item 3): machine ints for ids, one string per
name, and element objects only for the root and the elements paths end on; the others are made
again from the tree when asked for, the same elements in the same document order."""

from __future__ import annotations

import gc
import pickle
import tracemalloc
from array import array

from hypothesis import given, settings
from lxml import etree

from feedrouter import Router
from feedrouter.engine.document import DocumentParser
from feedrouter.engine.nfa import Nfa
from feedrouter.engine.runtime import LazyDfa, Matches, run
from tests.unit.engine.test_nfa import nav
from tests.unit.engine.test_runtime import trees

WIDE = b"<a>" + b"<b><c/></b>" * 20_000 + b"<d/></a>"


def matches_for(doc: bytes, paths: list[str]) -> Matches:
    nfa = Nfa()
    for path in paths:
        nfa.add_path(nav(path))
    return run(LazyDfa(nfa), DocumentParser().events(doc), 256)


def kept(matches: Matches) -> int:
    return sum(1 for element in matches.nodes._elements if element is not None)


def test_ids_are_machine_ints() -> None:
    matches = matches_for(b"<a><b/><b><c/></b></a>", ["//b"])
    assert isinstance(matches.parents, array) and list(matches.parents) == [-1, 0, 0, 2]
    assert all(isinstance(members, array) for members in matches.by_state.values())
    assert isinstance(matches.subtree_ends(), array) and list(matches.subtree_ends()) == [3, 1, 3, 3]


def test_element_objects_are_kept_only_where_a_path_ends() -> None:
    matches = matches_for(WIDE, ["/a/d"])
    assert len(matches.nodes) == 40_002
    assert kept(matches) == 2  # the root and the one <d>
    assert matches.nodes[2].tag == "c"
    assert kept(matches) == 2 + 20_000 + 1  # the root's other children, then the first <b>'s


def test_the_nfa_pass_costs_few_bytes_per_element() -> None:
    nfa = Nfa()
    nfa.add_path(nav("/a/d"))
    dfa = LazyDfa(nfa)
    root = DocumentParser().events(WIDE)
    tracemalloc.start()
    try:
        matches = run(dfa, root, 256)
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # one element object per element alone would be ~80 bytes each; ints ~32 more
    assert size / len(matches.nodes) < 40  # a parent, a state member, a name and an element slot: ~25
    assert matches.nodes[-1].tag == "d"


@given(trees())
@settings(max_examples=60, deadline=None)
def test_nodes_made_on_demand_are_the_tree_s_elements_in_document_order(doc: str) -> None:
    data = doc.encode()
    matches = matches_for(data, ["//b"])
    expected = [el.tag for el in etree.fromstring(data).iter(etree.Element)]
    # ask from the end first: ancestors and siblings are made on the way
    got = [matches.nodes[nid].tag for nid in reversed(range(len(matches.nodes)))]
    assert got[::-1] == expected
    assert [el.tag for el in matches.nodes] == expected
    # one object per element: asking twice, or iterating, gives the same objects
    assert all(matches.nodes[nid] is el for nid, el in enumerate(matches.nodes))


def test_made_elements_are_the_parsed_tree_s() -> None:
    matches = matches_for(WIDE, ["/a/d"])
    last_b = matches.nodes[len(matches.nodes) - 3]
    assert last_b.tag == "b" and last_b.getparent() is matches.nodes[0]
    assert matches.nodes[len(matches.nodes) - 2].getparent() is last_b


def test_comments_and_processing_instructions_do_not_shift_made_elements() -> None:
    doc = b"<a><!-- c --><b/><?pi x?><c><!-- d --><d/>text<e/></c><f/></a>"
    matches = matches_for(doc, ["/a/f"])
    assert kept(matches) == 2
    assert [matches.nodes[nid].tag for nid in (4, 3, 2, 1)] == ["e", "d", "c", "b"]


def test_a_pickled_dfa_ships_without_its_memo() -> None:
    nfa = Nfa()
    nfa.add_path(nav("//b"))
    dfa = LazyDfa(nfa)
    run(dfa, DocumentParser().events(WIDE), 256)
    assert dfa.size > 1
    copy = pickle.loads(pickle.dumps(dfa))
    assert copy.size == 1
    assert run(copy, DocumentParser().events(WIDE), 256).stream(nfa.path_id(nav("//b")))[:1] == [(1,)]


def test_a_routed_document_is_freed_as_soon_as_routing_drops_it() -> None:
    """No reference cycle holds a document's run (its nodes hold the run's parents, not the run):
    the tree goes when routing is done with it, not at the collector's next pass, which may be
    many documents later."""
    router = Router.compile(
        [("s", "//b[c]"), ("t", "for $x in //b where $x/c return <r>{ $x/c }{ $x/parent::*/d }</r>")]
    )
    document = b"<a><b><c>1</c></b><b/><d>2</d></a>"
    assert router.route(document).keys() == {"s", "t"}  # and its lazy states are made
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            router.route(document)
        matches_for(WIDE, ["//c"]).nodes[5]  # an element made on demand
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
