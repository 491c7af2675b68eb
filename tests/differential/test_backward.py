"""Backward axes (issue 15) against Saxon: ``..``, ``parent::``, ``ancestor::`` and
``ancestor-or-self::`` in filter paths, binding paths, predicates and where clauses, on documents
where an element's ancestors include elements of its own name, through every strategy and
optimization level (see :func:`compare_with_saxon`); each shape is its own test id."""

from __future__ import annotations

import pytest

from feedrouter.workload import dtds, generate_documents, generate_subscriptions
from tests.differential.oracle import SaxonOracle
from tests.differential.test_against_saxon import compare_with_saxon

pytestmark = pytest.mark.differential

DOCUMENTS = [
    b"<lib><story lang='en'><h>a</h><sec id='1'><p>X</p><fig><title>t</title></fig>"
    b"<sec id='2'><p>Y</p><sec id='3'><fig><title>u</title></fig></sec></sec></sec></story>"
    b"<story><p>X</p><sec><fig><title>t</title></fig></sec></story><p>X</p></lib>",
    # recursive: a inside a inside a, b at every level
    b"<a n='1'><b>1</b><a n='2'><b>2</b><c/><a n='3'><b>3</b><c><b>4</b></c></a></a><c><a n='4'/></c></a>",
    b"<feed><entry><title>T</title><author><name>Ann</name></author></entry>"
    b"<entry><title>U</title></entry></feed>",
    # '//fig/..' on a root fig: the document node, comments and processing instructions around it
    b"<!-- wire --><fig n='1'><title>t</title><fig><title>t</title></fig></fig><?route x?>",
]

CASES: dict[str, list[str]] = {
    "filters": [
        '//p[. = "X"]/ancestor::story',
        '//fig[title = "t"]/parent::*',
        "//sec/fig/../p",
        "//lib/story/sec/p/ancestor::story",
        "//fig/ancestor-or-self::sec",
        "//b/ancestor::a",
        "//a/a/b/parent::a",
        "//c/ancestor::a[@n > 1]/b",
        "//b/ancestor-or-self::*[@n]",
        "//entry/author/name/../../title",
        "//a/c/parent::a | //b/ancestor::c",
        "//title/parent::entry/author/name",
        "//sec/p/ancestor::*",
        "//a/b/ancestor::a/ancestor::a",
        '//fig[title = "t"]/..',
        "/fig/..",
        "//fig/.. | //title",
        "//a/.. | //entry/..",
    ],
    "conditions": [
        '//p[ancestor::story[@lang = "en"]]',
        "//title[ancestor-or-self::story/h]",
        "//story/sec[not(../h)]",
        "//sec/fig[../p = 'X']",
        "//b[ancestor::a[@n = 2]]",
        "//b[parent::c]",
        "//a/b[../c]",
        "//b[not(ancestor::c)]",
        "//entry/title[../author/name = 'Ann']",
        "//a[b/../c]",
        "//fig[ancestor::sec[@id = 2] or ancestor::story/h]",
        "//a/a[ancestor-or-self::a[@n = 3]]",
        "//story/sec/p[../../h]",
        # '..' on what may be the root element: the document node, read from it
        "//a[../b]",
        "//a[..]",
        "//a[not(../a)]",
        "//*[..//fig]",
        "/*[../lib or ../feed]",
        "for $a in //a where $a/../c return <r>{ $a/@n }</r>",
        '//fig[../title = "t"]',
    ],
    "flwr": [
        "for $f in //sec/fig where $f/../p = 'X' return $f/title",
        "for $b in //b/ancestor::a return <a>{ $b/@n }{ $b/b }</a>",
        "for $t in //entry/title where $t/parent::entry/author return $t",
        "for $s in //p/ancestor::sec order by $s/@id descending return <s>{ $s/@id }</s>",
        "for $c in //a/c where $c/ancestor::a[@n = 1] return ($c, <sep/>)",
    ],
    # positions on backward steps count nearest first: walked over the recorded parents
    "positions": [
        "//fig[ancestor::sec[1]/@id = 3]",
        "//b[ancestor::a[2]/@n = 2]",
        "//b[ancestor::a[last()][@n = 1]]",
        'for $f in //fig return <r i="{ $f/ancestor::sec[1]/@id }">'
        "{ $f/ancestor::sec[position() > 1]/p }</r>",
        '//title[ancestor-or-self::*[2][self::fig] or ancestor::sec[@id][1]/p = "Y"]',
        "for $b in //a/b where $b/ancestor::a[1]/@n > 1 return $b",
        "//b[not(ancestor::a[@n > 1][1]/c)]",
        "//p[parent::*[1]/@id]",
        # in filter and binding paths: the nodes the steps reach from any of the path's nodes
        "//fig/ancestor::sec[1]",
        "//b/ancestor::a[2]/b",
        "for $s in //p/ancestor::sec[last()] return <r>{ $s/@id }</r>",
        "//b/ancestor::*[@n][1] | //c/parent::a[1]",
        "//title/ancestor-or-self::*[2]",
        # ancestor-or-self:: below another backward step: walked as well
        "//fig/ancestor-or-self::fig/ancestor::sec[@id]",
        "//sec/p[../ancestor-or-self::sec[@id = 2]]",
        "for $t in //fig/title return $t/../ancestor-or-self::*[@id]/p",
        "//b[ancestor-or-self::a/ancestor::a[@n = 1]]",
        "for $p in //sec/p order by $p/ancestor::sec[1]/@id descending return $p",
        "for $p in //sec/p order by $p/ancestor::story/@lang descending, $p/../@id return $p",
        "for $f in //sec/fig order by number($f/../@id) descending return $f/title",
    ],
    # a function of the parent's path: contains(../title, "x") is the parent's contains(title, "x")
    "functions": [
        '//sec/fig[contains(../p, "X")]',
        '//sec/p[count(../fig) = 1]',
        '//fig[string-length(parent::sec[@id > 1]/p) = 1]',
        'for $f in //sec/fig where contains($f/../p, "Y") or empty($f/title) return $f',
        '//fig/title[lower-case(..) = "t"]',
        '//a/b[count(..//b) > 2 or starts-with(parent::a/@n, "3")]',
    ],
    # a condition path that turns upward after forward steps: where the node it reaches can stand
    "turns": [
        "//story[.//p/ancestor::sec]",
        '//story[.//p/ancestor::sec[@id > 1]//fig/title = "u"]',
        "//a[.//c/ancestor::a[@n = 2]]",
        "//a[b/ancestor-or-self::a[@n = 3]]",
        "//a[.//b/ancestor-or-self::*[@n > 2]]",
        "//lib[story//fig/..//p = 'Y']",
        "//sec[.//title/../parent::*/p]",
        "//a[.//b/../c]",
        "//a[c//a/parent::c]",
        "//a[not(.//c/ancestor::a/b = 4)]",
        "//sec/fig[title/ancestor::sec/p = 'X']",
        "//entry[author/name/ancestor::feed]",
        "//story[parent::*//fig/ancestor::sec/@id = 3]",
        "for $s in //sec where $s//title/ancestor::sec[p = 'Y'] return <s>{ $s/@id }</s>",
        "for $a in //a return <r>{ $a/b[..//c/parent::a] }</r>",
        "for $s in //story//sec order by $s/fig[title/ancestor::sec/@id = 1]/title return $s",
    ],
    "returns": [
        # forward return and order paths whose predicates go upward
        "for $s in //story/sec return $s/fig[../p = 'X']",
        "for $s in //story//sec order by $s/fig[../p][1]/title descending return <s>{ $s/@id }</s>",
        "for $a in //a/a return <r v='{ $a/b[ancestor::a[1]/@n > 1] }'>{ $a/c[not(../b = 2)] }</r>",
        "for $f in //sec/fig return <r>{ $f/../p }</r>",
        "for $t in //fig/title return $t/ancestor::story/h",
        "for $b in //a/b return <r n='{ $b/parent::a/@n }'>{ $b/ancestor::a[@n > 1]/b }</r>",
        "for $p in //story//p return ($p/.., <sep/>, $p/ancestor-or-self::*[@id])",
        "for $n in //entry/author/name return $n/../../title/text()",
        "for $c in //a/a/c return <c n='{ $c/ancestor::a/@n }'/>",
        "<all>{ for $b in //c//b return $b/ancestor::a[@n]/c }</all>",
        # a child step's parent below the first step folds into a condition: $s/a[b]/c
        "for $s in //story return $s/sec/fig/../p",
        "for $a in //a return <r>{ $a/a/c/parent::a/b }</r>",
        "for $l in //lib order by $l/story/sec/p/../@id return $l/story/h",
    ],
}


@pytest.fixture(scope="module")
def oracle() -> SaxonOracle:
    return SaxonOracle()


@pytest.mark.parametrize("shape", list(CASES))
def test_backward_axes_agree_with_saxon(oracle: SaxonOracle, shape: str) -> None:
    subscriptions = [(f"{shape}-{i}", text) for i, text in enumerate(CASES[shape])]
    counts = compare_with_saxon(oracle, subscriptions, DOCUMENTS)
    assert counts["matches"] >= len(subscriptions), counts


@pytest.mark.parametrize(
    ("dtd_name", "seed", "knobs"),
    [
        ("bib", 31, {}),
        ("book", 32, {}),
        ("news", 33, {}),
        # recursive documents and '//' chains: an element's ancestors include its own name
        ("book", 34, {"DSProb": 0.5, "wildcard": 0.3}),
    ],
    ids=["bib", "book", "news", "book-recursive"],
)
def test_generated_backward_axes_agree_with_saxon(
    oracle: SaxonOracle, dtd_name: str, seed: int, knobs: dict[str, float]
) -> None:
    """Backward steps after binding and filter steps and at the start of predicates and where
    conditions, mixed with the language round's constructs."""
    graph = dtds.load(dtd_name)
    documents = generate_documents(graph, 12, seed=seed, doctype=dtd_name == "news")
    texts = generate_subscriptions(
        graph, 80, seed=seed, form="mixed", backward=0.25, conditions=0.2, positions=0.1, orders=0.2, **knobs
    )
    assert sum(any(k in t for k in ("parent::", "ancestor", "/..")) for t in texts) >= 20
    subscriptions = [(f"{dtd_name}-{i}", t) for i, t in enumerate(texts)]
    counts = compare_with_saxon(oracle, subscriptions, documents, dtd=graph)
    assert counts["pairs"] >= 900 and counts["matches"] >= 50, counts
