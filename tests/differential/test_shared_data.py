"""Real feeds from ../shared/data (NITF articles, RSS and Atom) against Saxon.

The NITF articles do not all follow the 3.0 DTD they are checked with (they declare 3.2 and 3.4), so
the routers here use the query-level optimizations only; the DTD only shapes the subscriptions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from feedrouter.schema import DtdGraph
from feedrouter.workload import generate_subscriptions
from tests.differential.oracle import SaxonOracle
from tests.differential.test_against_saxon import compare_with_saxon

pytestmark = [pytest.mark.differential, pytest.mark.shared_data]

RSS_CASES = [
    'declare namespace dc = "http://purl.org/dc/elements/1.1/"; //item[dc:creator]/title',
    "for $i in /rss/channel/item where $i/category = 'Politics' return <hit>{ $i/title }{ $i/link }</hit>",
    "<titles>{ for $i in //item return $i/title/text() }</titles>",
    'declare namespace media = "http://search.yahoo.com/mrss/"; //item[media:content/@width > 100]/title',
    'declare default element namespace "http://www.w3.org/2005/Atom"; for $e in /feed/entry '
    "return <e>{ $e/title }{ $e/link }</e>",
    'declare namespace a = "http://www.w3.org/2005/Atom"; //a:entry[a:author/a:name]/a:id',
]


def without_external_doctype(data: bytes) -> bytes:
    """Drop a DOCTYPE that only names an external DTD we do not have (neither side may fetch it)."""
    return re.sub(rb"<!DOCTYPE[^>\[]*>", b"", data, count=1)


@pytest.fixture(scope="module")
def oracle() -> SaxonOracle:
    return SaxonOracle()


def test_real_nitf_articles_with_subscriptions_from_the_nitf_dtd(
    oracle: SaxonOracle, shared_data: Path
) -> None:
    graph = DtdGraph.from_text((shared_data / "nitf" / "nitf-3-0.dtd").read_bytes(), root="nitf")
    documents = [
        without_external_doctype(p.read_bytes()) for p in sorted((shared_data / "nitf").rglob("*.xml"))
    ]
    texts = generate_subscriptions(graph, 150, seed=21, form="mixed", D1=5, DSProb=0.4)
    counts = compare_with_saxon(oracle, [(f"nitf-{i}", t) for i, t in enumerate(texts)], documents)
    assert counts["pairs"] >= 1000 and counts["matches"] > 0, counts


def test_real_rss_and_atom_feeds(oracle: SaxonOracle, shared_data: Path) -> None:
    feeds = sorted((shared_data / "feeds").rglob("*"))
    documents = [p.read_bytes() for p in feeds if p.is_file()]
    counts = compare_with_saxon(oracle, [(f"rss-{i}", t) for i, t in enumerate(RSS_CASES)], documents)
    assert counts["matches"] >= 8, counts
