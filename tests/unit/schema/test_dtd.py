"""The DTD element graph: element facts, reachability, loops, chains, entities and errors."""

from __future__ import annotations

import pickle

import pytest
from lxml import etree

from feedrouter.errors import CompileError
from feedrouter.schema import DtdGraph
from feedrouter.workload import dtds

# A small DTD written for these tests: mutual recursion (a <-> b), a self loop (s), ANY, EMPTY,
# mixed content, and a part (leaf) that is reachable only through the loop.
LOOPS = """
<!ENTITY % inline "em | leaf">
<!ENTITY nbsp "&#160;">
<!ENTITY who "Acme &amp; Co">
<!ENTITY ext SYSTEM "ext.txt">
<!ELEMENT top (a | s | box | gap)*>
<!ATTLIST top version CDATA #FIXED "1" id ID #IMPLIED>
<!ELEMENT a (b?, leaf)>
<!ELEMENT b (a*)>
<!ELEMENT s (s?, em)>
<!ELEMENT em (#PCDATA)>
<!ELEMENT leaf (#PCDATA | %inline;)*>
<!ELEMENT box ANY>
<!ELEMENT gap EMPTY>
<!ATTLIST gap kind (x|y) "x">
"""


@pytest.fixture(scope="module")
def loops() -> DtdGraph:
    return DtdGraph.from_text(LOOPS, source="loops.dtd")


def test_root_is_inferred_as_the_uncontained_element(loops: DtdGraph) -> None:
    assert loops.root == "top"
    assert dtds.load("bib").root == "bib"
    assert dtds.load("book").root == "book"
    assert dtds.load("news").root == "nitf"


def test_children_attributes_and_text(loops: DtdGraph) -> None:
    assert loops.children("top") == {"a", "s", "box", "gap"}
    assert loops.children("a") == {"b", "leaf"}
    assert loops.children("leaf") == {"em", "leaf"}
    assert loops.children("box") == loops.element_names  # ANY: every declared element
    assert loops.children("gap") == frozenset()
    assert loops.attributes("top") == {"version", "id"}
    assert loops.attributes("a") == frozenset()
    assert loops.has_text("em") and loops.has_text("leaf") and loops.has_text("box")
    assert not loops.has_text("a") and not loops.has_text("gap")
    assert loops.text_only("em") and not loops.text_only("leaf")
    assert loops.attribute("gap", "kind").values == ("x", "y")  # type: ignore[union-attr]
    assert loops.parents("leaf") == {"a", "leaf", "box"}


def test_reachability_and_loops(loops: DtdGraph) -> None:
    assert loops.reachable("a") == {"a", "b", "leaf", "em"}
    assert loops.reachable("em") == frozenset()
    assert loops.on_loop("a") and loops.on_loop("b") and loops.on_loop("s") and loops.on_loop("leaf")
    assert not loops.on_loop("em")
    assert loops.on_loop("top")  # box has ANY content, so top may occur below top
    assert loops.same_loop("a", "b")
    assert loops.same_loop("s", "s")
    assert not loops.same_loop("a", "s")
    assert not loops.same_loop("em", "em")
    assert not loops.same_loop("a", "leaf")  # leaf is below a, but a is not below leaf
    assert loops.is_recursive
    assert not dtds.load("bib").is_recursive
    assert dtds.load("book").recursive_elements == {"section"}
    assert dtds.load("news").same_loop("block", "bq")


def test_child_chains_resolve_descendant_steps() -> None:
    bib = dtds.load("bib")
    assert bib.child_chains("bib", "last") == {("book", "author", "last"), ("book", "editor", "last")}
    assert bib.child_chains(None, "price") == {("bib", "book", "price")}
    assert bib.child_chains("author", "price") == frozenset()
    book = dtds.load("book")
    assert book.child_chains("figure", "image") == {("image",)}
    assert book.child_chains("book", "image") is None  # section recursion: infinitely many chains
    bounded = book.child_chains("book", "image", max_len=4)
    assert bounded == {("section", "figure", "image"), ("section", "section", "figure", "image")}


def test_descendants_and_distances() -> None:
    bib = dtds.load("bib")
    assert bib.descendants_from(None) == bib.element_names
    assert bib.distances(None)["last"] == 4
    assert bib.distances("book")["first"] == 2


def test_entity_declarations_keep_internal_general_entities_only(loops: DtdGraph) -> None:
    text = loops.entity_declarations()
    assert '<!ENTITY nbsp "&#160;">' in text
    assert '<!ENTITY who "Acme &amp; Co">' in text
    assert "inline" not in text and "ext" not in text
    doc = etree.fromstring(f"<!DOCTYPE top [\n{text}\n]><top>&who;&nbsp;</top>".encode())
    assert doc.text == "Acme & Co\u00a0"


def test_news_declares_character_entities() -> None:
    names = {e.name for e in dtds.load("news").entities}
    assert names == {"nbsp", "mdash", "eacute", "copy"}


def test_namespaced_names_are_kept_as_written() -> None:
    graph = DtdGraph.from_text(
        '<!ELEMENT x:feed (x:item*)> <!ATTLIST x:feed xmlns:x CDATA #FIXED "urn:x">'
        "<!ELEMENT x:item (#PCDATA)> <!ATTLIST x:item x:rank CDATA #IMPLIED>"
    )
    assert graph.root == "x:feed"
    assert graph.children("x:feed") == {"x:item"}
    assert graph.attributes("x:item") == {"x:rank"}
    assert graph.namespaces() == {"x": "urn:x"}


def test_graph_pickles_as_plain_data(loops: DtdGraph) -> None:
    loops.reachable("a")  # cached properties must not get in the way
    assert loops.is_recursive
    copy = pickle.loads(pickle.dumps(loops))
    assert copy == loops
    assert copy.same_loop("a", "b") and copy.children("box") == loops.children("box")


@pytest.mark.parametrize(
    ("text", "root", "fragment"),
    [
        ("<!ELEMENT a (b", None, "invalid DTD"),
        ("<!-- nothing -->", None, "declares no element"),
        ("<!ELEMENT a EMPTY> <!ELEMENT b EMPTY>", None, "candidates: a, b"),
        ("<!ELEMENT a (b)> <!ELEMENT b (a?)>", None, "every element is contained"),
        ("<!ELEMENT a EMPTY>", "z", "root element 'z' is not declared"),
    ],
)
def test_bad_dtds_raise_fr303(text: str, root: str | None, fragment: str) -> None:
    with pytest.raises(CompileError) as caught:
        DtdGraph.from_text(text, root=root, source="bad.dtd")
    assert caught.value.code == "FR303"
    assert fragment in str(caught.value)
    assert str(caught.value).startswith("bad.dtd, ") and "[FR303] invalid DTD: " in str(caught.value)


def test_syntax_errors_carry_their_position() -> None:
    with pytest.raises(CompileError) as caught:
        DtdGraph.from_text("<!ELEMENT a EMPTY>\n<!ELEMENT b (c", source="bad.dtd")
    assert (caught.value.line, caught.value.column) == (2, 15)
    assert str(caught.value).startswith("bad.dtd, line 2, column 15: [FR303] invalid DTD: ")


def test_any_content_does_not_hide_the_root() -> None:
    # ANY contains every element, the document element too; it does not count for root inference.
    graph = DtdGraph.from_text("<!ELEMENT r (x)> <!ELEMENT x ANY>")
    assert graph.root == "r" and graph.children("x") == {"r", "x"}


def test_explicit_root_resolves_ambiguity() -> None:
    graph = DtdGraph.from_text("<!ELEMENT a (b)> <!ELEMENT b (a?)>", root="a")
    assert graph.root == "a" and graph.same_loop("a", "b")


def test_unknown_element_is_a_clear_key_error() -> None:
    with pytest.raises(KeyError, match=r"'nope' is not declared in bib\.dtd"):
        dtds.load("bib").children("nope")


@pytest.mark.shared_data
def test_public_dtds_load(shared_data) -> None:  # type: ignore[no-untyped-def]
    book = DtdGraph.from_text((shared_data / "xquery-usecases" / "book.dtd").read_bytes(), source="book.dtd")
    assert book.root == "book" and book.recursive_elements == {"section"}
    assert book.attributes("figure") == {"width", "height"}
    nitf = DtdGraph.from_text((shared_data / "nitf" / "nitf-3-0.dtd").read_bytes(), source="nitf-3-0.dtd")
    assert nitf.root == "nitf" and nitf.is_recursive
    assert len(nitf.element_names) > 100
    assert "tobject.subject" in nitf.reachable("nitf")
    assert "edition.area" in nitf.attributes("pubdata")
    assert nitf.entity_declarations() == ""  # NITF 3.0 declares parameter entities only
