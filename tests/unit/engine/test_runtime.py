"""The runtime's path-tuple streams equal a brute-force enumeration over the document tree."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from feedrouter.engine.document import DocumentParser
from feedrouter.engine.nfa import Nfa
from feedrouter.engine.runtime import LazyDfa, run
from tests.unit.engine.test_nfa import nav


def streams_for(doc: bytes, paths: list[str]) -> dict[str, list[tuple[int, ...]]]:
    nfa = Nfa()
    pids = {p: nfa.add_path(nav(p)) for p in paths}
    matches = run(LazyDfa(nfa), DocumentParser().events(doc), 256)
    return {p: matches.stream(pid) for p, pid in pids.items()}


def brute_force(doc: bytes, path: str) -> list[tuple[int, ...]]:
    """Every assignment of elements to steps that satisfies axes and names, by definition."""
    root = etree.fromstring(doc)
    elements = list(root.iter(etree.Element))
    ids = {el: i for i, el in enumerate(elements)}
    steps = nav(path)
    out = []
    for combo in itertools.product(elements, repeat=len(steps)):
        if _fits(combo, steps, root):
            out.append(tuple(ids[e] for e in combo))
    return sorted(out, key=lambda t: (t[-1], t))


def _fits(combo, steps, root) -> bool:  # type: ignore[no-untyped-def]
    parent = None
    for element, step in zip(combo, steps, strict=True):
        if step.tag != "*" and element.tag != step.tag:
            return False
        if parent is None:
            linked = step.axis.value == "//" or element is root
        elif step.axis.value == "/":
            linked = element.getparent() is parent
        else:
            linked = parent in list(element.iterancestors())
        if not linked:
            return False
        parent = element
    return True


def test_streams_are_ordered_by_their_last_field() -> None:
    doc = b"<a><b><c/></b><c/><b><b><c/></b></b></a>"
    streams = streams_for(doc, ["//b//c", "/a//c", "//*"])
    for tuples in streams.values():
        lasts = [t[-1] for t in tuples]
        assert lasts == sorted(lasts)


def test_descendant_paths_give_one_tuple_per_binding() -> None:
    doc = b"<a><a><b/></a></a>"
    assert sorted(streams_for(doc, ["//a//b"])["//a//b"]) == [(0, 2), (1, 2)]


def test_comments_and_processing_instructions_are_not_nodes() -> None:
    doc = b"<a><!-- c --><?pi x?><b/></a>"
    assert streams_for(doc, ["/a/b"])["/a/b"] == [(0, 1)]


_tags = st.sampled_from(["a", "b", "c"])


@st.composite
def trees(draw, depth: int = 0) -> str:  # type: ignore[no-untyped-def]
    tag = draw(_tags)
    children = draw(st.lists(trees(depth + 1), max_size=3)) if depth < 4 else []
    return f"<{tag}>{''.join(children)}</{tag}>"


_step = st.tuples(st.sampled_from(["/", "//"]), st.sampled_from(["a", "b", "c", "*"]))
_path = st.lists(_step, min_size=1, max_size=3).map(lambda steps: "".join(a + t for a, t in steps))


@settings(max_examples=120, deadline=None)
@given(trees(), st.lists(_path, min_size=1, max_size=5, unique=True))
def test_streams_equal_brute_force_enumeration(doc: str, paths: list[str]) -> None:
    data = doc.encode()
    streams = streams_for(data, paths)
    for p in paths:
        got = sorted(streams[p], key=lambda t: (t[-1], t))
        assert got == brute_force(data, p), p


@settings(max_examples=60, deadline=None)
@given(doc=trees())
def test_recorded_positions_equal_the_tree(doc: str) -> None:
    """With positions on, each element's ordinal among same-named and among all element siblings,
    and each parent's counts, are what the tree says."""
    matches = run(LazyDfa(Nfa()), DocumentParser().events(doc.encode()), 256, positions=True)
    elements = list(etree.fromstring(doc.encode()).iter(etree.Element))
    assert matches.ordinals is not None and matches.element_ordinals is not None
    for nid, element in enumerate(elements):
        parent = element.getparent()
        siblings = [element] if parent is None else [c for c in parent if isinstance(c.tag, str)]
        same = [s for s in siblings if s.tag == element.tag]
        assert matches.ordinals[nid] == same.index(element) + 1
        assert matches.element_ordinals[nid] == siblings.index(element) + 1
        counts = matches.child_counts[matches.parents[nid]]
        assert counts[element.tag] == len(same) and counts[""] == len(siblings)


def test_positions_are_recorded_only_when_asked_for() -> None:
    doc = b"<a><!-- c --><b/><c/><b/></a>"
    plain = run(LazyDfa(Nfa()), DocumentParser().events(doc), 256)
    assert plain.ordinals is None and not plain.child_counts
    counted = run(LazyDfa(Nfa()), DocumentParser().events(doc), 256, positions=True)
    assert list(counted.ordinals or ()) == [1, 1, 1, 2]
    assert list(counted.element_ordinals or ()) == [1, 1, 2, 3]
    assert counted.child_counts == {-1: {"a": 1, "": 1}, 0: {"b": 2, "c": 1, "": 3}}
