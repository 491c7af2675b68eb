"""Prefixed names in content models, and the tag (namespace, local name) each declared element has."""

from __future__ import annotations

import pickle

import pytest

from feedrouter.errors import CompileError
from feedrouter.schema import DtdGraph, dtd

# RSS 1.0 / Dublin Core style: 'title' and 'dc:title' both declared, each used in its own place.
DUBLIN_CORE = """<!ELEMENT r (a, title)>
<!ATTLIST r xmlns:dc CDATA #FIXED "urn:dc">
<!ELEMENT a (dc:title)>
<!ELEMENT title (#PCDATA)>
<!ELEMENT dc:title (#PCDATA)>"""

# XHTML style: the document element fixes a default namespace, which documents may leave out.
DEFAULT_NAMESPACE = """<!ELEMENT bib (book*)>
<!ATTLIST bib xmlns CDATA #FIXED "urn:bib">
<!ELEMENT book (title)>
<!ATTLIST book year CDATA #IMPLIED>
<!ELEMENT title (#PCDATA)>"""


def test_a_prefixed_name_in_a_content_model_keeps_its_prefix() -> None:
    graph = DtdGraph.from_text(DUBLIN_CORE, root="r")
    assert graph.children("a") == {"dc:title"}
    assert graph.children("r") == {"a", "title"}
    assert str(graph.declaration("a").model) == "dc:title"
    assert graph.child_chains(None, "title") == {("r", "title")}
    assert graph.child_chains(None, "dc:title") == {("r", "a", "dc:title")}


def test_prefixes_survive_parameter_entities_mixed_content_and_nested_groups() -> None:
    graph = DtdGraph.from_text(
        """<!ENTITY % dc.title "dc:title">
        <!ENTITY % inline "#PCDATA | %dc.title; | title">
        <!ELEMENT r (m | s)*>
        <!ELEMENT m (%inline;)*>
        <!ELEMENT s ((title, x:y*)+ | (%dc.title;, title?))>
        <!ELEMENT title (#PCDATA)> <!ELEMENT dc:title (#PCDATA)> <!ELEMENT x:y EMPTY>
        <!-- <!ELEMENT m (title)> is a comment, not a declaration -->
        <!ATTLIST r note CDATA "&lt;!ELEMENT s (title)&gt;">""",
        root="r",
    )
    assert str(graph.declaration("m").model) == "(#PCDATA | dc:title | title)*"
    assert str(graph.declaration("s").model) == "((title, x:y*)+ | (dc:title, title?))"
    assert graph.children("m") == {"dc:title", "title"}
    assert graph.children("s") == {"title", "x:y", "dc:title"}


def test_a_prefixed_name_that_is_not_declared_is_not_a_child() -> None:
    # 'x:title' is undeclared, so no valid document has it; it is not the declared 'title'
    graph = DtdGraph.from_text("<!ELEMENT r (a?, title)> <!ELEMENT a (x:title?)> <!ELEMENT title (#PCDATA)>")
    assert graph.children("a") == frozenset()
    assert graph.children("r") == {"a", "title"}


def test_a_loop_through_a_prefixed_name_is_seen() -> None:
    # a -> x:b -> a is a loop; reading 'x:b' as the declared 'b' (EMPTY) would hide it
    graph = DtdGraph.from_text(
        "<!ELEMENT r (a)> <!ELEMENT a (x:b?)> <!ELEMENT x:b (a?, b?)> <!ELEMENT b EMPTY>", root="r"
    )
    assert graph.children("a") == {"x:b"}
    assert graph.on_loop("a") and graph.same_loop("a", "x:b")


def test_tags_of_names_whose_namespace_the_dtd_fixes() -> None:
    graph = DtdGraph.from_text(DUBLIN_CORE, root="r")
    assert graph.element_tag("dc:title") == "{urn:dc}title"
    assert graph.element_tag("title") == "title"  # no element declares xmlns: no default namespace
    assert graph.element_tag("r") == "r"
    assert graph.declared_name("{urn:dc}title") == "dc:title"
    assert graph.declared_name("title") == "title"
    assert graph.declared_name("{urn:other}title") is None
    assert graph.declared_name("*") is None
    assert graph.declared_name("nope") is None


def test_a_fixed_default_namespace_leaves_unprefixed_names_open() -> None:
    # <bib xmlns="urn:bib"> and <bib> (the fixed attribute left out) are both valid
    graph = DtdGraph.from_text(DEFAULT_NAMESPACE)
    assert graph.element_tag("bib") is None and graph.element_tag("book") is None
    # either way a 'book' element, in whichever namespace, is declared 'book'
    assert graph.declared_name("book") == "book"
    assert graph.declared_name("{urn:bib}book") == "book"
    assert graph.declared_name("{urn:bib}nope") is None


@pytest.mark.parametrize(
    "attlist",
    [
        '<!ATTLIST r xmlns:dc CDATA #IMPLIED x CDATA "1">',  # any URI
        '<!ATTLIST r xmlns:dc CDATA "urn:dc">',  # a default a document may override
        '<!ATTLIST r xmlns:dc CDATA #FIXED "urn:dc"> <!ATTLIST a xmlns:dc CDATA #FIXED "urn:dc2">',
        '<!ATTLIST r xmlns:dc NMTOKEN #FIXED "urn:dc">',  # validation strips spaces the URI keeps
        "",  # the prefix is never declared
    ],
)
def test_prefixes_the_dtd_does_not_fix_give_no_tag(attlist: str) -> None:
    graph = DtdGraph.from_text(
        f"<!ELEMENT r (a)> <!ELEMENT a (dc:title)> <!ELEMENT dc:title (#PCDATA)> {attlist}", root="r"
    )
    assert graph.element_tag("dc:title") is None
    assert graph.element_tag("a") == "a"
    # whichever namespace it is in, a 'title' element with a namespace can only be the declared 'dc:title'
    assert graph.declared_name("{urn:dc}title") == "dc:title"
    assert graph.declared_name("title") is None  # a prefixed element is never in no namespace


def test_the_same_prefix_fixed_alike_on_several_elements_gives_one_tag() -> None:
    graph = DtdGraph.from_text(
        DUBLIN_CORE
        + '<!ATTLIST a xmlns:dc CDATA #FIXED "urn:dc">'
        + '<!ATTLIST r xmlns:e CDATA #FIXED "urn:dc">',
        root="r",
    )
    assert graph.element_tag("dc:title") == "{urn:dc}title"
    assert graph.declared_name("{urn:dc}title") == "dc:title"


def test_an_open_prefix_makes_its_local_names_ambiguous() -> None:
    # 'x' may be bound to urn:dc too, so a {urn:dc}title may be declared 'x:title'
    graph = DtdGraph.from_text(
        DUBLIN_CORE.replace("(dc:title)", "(dc:title | x:title)")
        + "<!ELEMENT x:title (#PCDATA)> <!ATTLIST a xmlns:x CDATA #IMPLIED>",
        root="r",
    )
    assert graph.element_tag("dc:title") == "{urn:dc}title"
    assert graph.element_tag("x:title") is None
    assert graph.declared_name("{urn:dc}title") is None


def test_namespace_facts_pickle() -> None:
    graph = DtdGraph.from_text(DUBLIN_CORE, root="r")
    graph.element_tag("dc:title")
    copy = pickle.loads(pickle.dumps(graph))
    assert copy.element_tag("dc:title") == "{urn:dc}title" and copy.children("a") == {"dc:title"}


def test_without_the_written_prefixes_only_an_ambiguous_name_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # libxml2 writing the DTD back is what tells 'title' from 'dc:title'; never expected to fail, but
    # when it does a guess would be wrong for some valid documents
    monkeypatch.setattr(dtd, "_written_models", lambda raw: None)
    with pytest.raises(
        CompileError, match="cannot tell which of dc:title, title the content model of r uses"
    ):
        DtdGraph.from_text(DUBLIN_CORE, root="r")
    graph = DtdGraph.from_text(DEFAULT_NAMESPACE)
    assert graph.children("book") == {"title"}
