"""Recursive documents and '//' chains: the node-set evaluation agrees with Saxon (issue 18, item 2).

A path with k '//' steps has up to depth^k path-tuples per node on a recursive document; such plans
switch to node sets. Every case runs twice: with the default switch (the deep documents here pass
it) and with node sets forced for every path with two '//' or more, however few tuples it has.
"""

from __future__ import annotations

import pytest

import feedrouter.plan.context as context_module
import feedrouter.plan.search as search_module
from feedrouter.schema import DtdGraph
from feedrouter.workload import generate_documents, generate_subscriptions
from tests.differential.oracle import SaxonOracle
from tests.differential.test_against_saxon import CONFIGURATIONS, compare_with_saxon

pytestmark = pytest.mark.differential

#: Everything nests in everything: every '//' chain binds in many ways.
RECURSIVE_DTD = """<!ELEMENT r (a | b)*>
<!ELEMENT a (#PCDATA | a | b | c)*>
<!ELEMENT b (#PCDATA | a | b | c)*>
<!ELEMENT c (#PCDATA)>
<!ATTLIST a n CDATA #IMPLIED>
<!ATTLIST b n CDATA #IMPLIED>
"""


def nested(depth: int, tag: str = "a", text: str = "z", attribute: str = "") -> bytes:
    """``depth`` nested elements with ``text`` in the innermost, ``attribute`` on each."""
    return (f"<{tag}{attribute}>" * depth + text + f"</{tag}>" * depth).encode()


DEEP = nested(150)
DEEP_MIXED = b"".join(
    [b"<r>", b"<a n='1'>x<b n='2'>" * 40, b"<c>7</c><c>z</c>", b"</b>y</a>" * 40, b"<a><c>z</c></a></r>"]
)
DEEP_NAMESPACED = (
    b'<n:a xmlns:n="urn:n" xmlns="urn:d">'
    + b"<n:a><a n:k='3'>" * 30
    + b"<n:c>z</n:c>"
    + b"</a></n:a>" * 30
    + b"</n:a>"
)

DEEP_CASES = [
    (DEEP, '//a[.//a//a//a = "z"]'),  # the case
    (DEEP, '//a[.//a//a//a = "y"]'),
    (DEEP, "//a[.//a//a//a//a//a]"),
    (DEEP, "for $x in //a[.//a//a = 'z'] return <r>{ $x/a/a/a/text() }</r>"),
    (DEEP, "for $x in /a/a/a where $x//a//a//a/text() = 'z' return <hit/>"),
    (DEEP_MIXED, "//a[.//b//a//c = 7]"),
    (DEEP_MIXED, "//b[.//a//b//c > 6][@n = 2]//c"),
    (DEEP_MIXED, "//a[.//b//b/@n = '2'][.//a//c != 'z']"),
    (DEEP_MIXED, "for $b in //a//b//a where $b//b//c = 'z' return <r>{ $b/c }{ $b//b//c }</r>"),
    (DEEP_MIXED, "<all>{ for $c in //a//a//c return $c/text() }</all>"),
    (DEEP_MIXED, "/r//a//b//a//b[c = 7]"),
    (DEEP_NAMESPACED, 'declare namespace n = "urn:n"; //n:a[.//n:a//n:a//n:c = "z"]'),
    (
        DEEP_NAMESPACED,
        'declare namespace n = "urn:n"; declare namespace d = "urn:d"; //d:a[.//d:a//n:a/@n:k = 3]',
    ),
]


#: Saxon's XML parser (the JDK's) refuses elements nested deeper than 100 unless told otherwise.
_JAXP_MAX_DEPTH = "http://saxon.sf.net/feature/parserProperty?uri=http%3A//www.oracle.com/xml/jaxp/properties/maxElementDepth"


@pytest.fixture(scope="module")
def oracle() -> SaxonOracle:
    oracle = SaxonOracle()
    oracle._proc.set_configuration_property(_JAXP_MAX_DEPTH, "0")  # no limit: ours is 256
    return oracle


@pytest.fixture(params=["switch", "forced"])
def node_sets(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``forced``: node sets for every path with two '//' or more, and no bounded tree search."""
    if request.param == "forced":
        monkeypatch.setattr(context_module, "TUPLES_PER_NODE", 0)
        monkeypatch.setattr(context_module, "TUPLES_SLACK", 0)
        monkeypatch.setattr(search_module, "SEARCH_STEPS_PER_NODE", 0)
        monkeypatch.setattr(search_module, "SEARCH_SLACK", 0)
    return request.param


@pytest.mark.parametrize(("document", "text"), DEEP_CASES)
def test_deep_documents_agree_with_saxon(
    oracle: SaxonOracle, node_sets: str, document: bytes, text: str
) -> None:
    counts = compare_with_saxon(oracle, [("s", text)], [document])
    assert counts["pairs"] == len(CONFIGURATIONS), counts


def test_generated_recursive_workload_agrees_with_saxon(oracle: SaxonOracle, node_sets: str) -> None:
    graph = DtdGraph.from_text(RECURSIVE_DTD)
    documents = generate_documents(graph, 10, seed=21, doc_depth=14, max_repeats=2, max_value=4)
    texts = generate_subscriptions(
        graph, 80, seed=21, form="mixed", D1=4, DSProb=0.7, max_value=4, PP=(1, 2), RP=(1, 2)
    )
    subscriptions = [(f"rec-{i}", t) for i, t in enumerate(texts)]
    counts = compare_with_saxon(oracle, subscriptions, documents, dtd=graph)
    assert counts["pairs"] >= len(CONFIGURATIONS) * 600, counts
    assert counts["matches"] >= len(CONFIGURATIONS) * 100, counts
