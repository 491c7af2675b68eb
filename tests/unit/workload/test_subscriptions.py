"""Generated subscriptions: valid XQuery (checked with Saxon), shaped by the workload parameters,
free of dynamic errors on generated documents, and matching a fair share of them."""

from __future__ import annotations

import re

import pytest

from feedrouter.schema import DtdGraph
from feedrouter.workload import (
    dtds,
    generate_documents,
    generate_selective_population,
    generate_subscriptions,
    match_probe,
)
from feedrouter.workload.subscriptions import xquery_string

saxonche = pytest.importorskip("saxonche")

NAMES = ["bib", "book", "news"]


class Saxon:
    """Runs query texts on documents with Saxon-HE; a static or dynamic error raises."""

    def __init__(self) -> None:
        self.proc = saxonche.PySaxonProcessor(license=False)
        self.xq = self.proc.new_xquery_processor()
        self.xq.set_property("!omit-xml-declaration", "yes")

    def document(self, data: bytes):  # type: ignore[no-untyped-def]
        return self.proc.parse_xml(xml_text=data.decode("utf-8"))

    def run(self, query: str, document) -> str:  # type: ignore[no-untyped-def]
        self.xq.set_context(xdm_item=document)
        self.xq.set_query_content(query)
        return self.xq.run_query_to_string() or ""


@pytest.fixture(scope="module")
def saxon() -> Saxon:
    return Saxon()


def is_filter(text: str) -> bool:
    body = [line for line in text.split("\n") if not line.startswith(("declare ", "(:"))]
    return body[0].startswith("/")


def match_rates(saxon: Saxon, texts: list[str], docs: list[bytes]) -> tuple[float, float]:
    """(share of matching pairs, share of subscriptions matching some document); runs every text too."""
    parsed = [saxon.document(d) for d in docs]
    pairs = subs = 0
    for text in texts:
        hits = 0
        for doc in parsed:
            result = saxon.run(text, doc)
            matched = saxon.run(match_probe(text), doc) == "true"
            if is_filter(text):  # a filter matches iff it selects a node
                assert matched == bool(result), text
            hits += matched
        pairs += hits
        subs += hits > 0
    return pairs / (len(texts) * len(docs)), subs / len(texts)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("form", ["flwr", "filter"])
def test_subscriptions_run_on_documents_and_match(saxon: Saxon, name: str, form: str) -> None:
    graph = dtds.load(name)
    docs = generate_documents(graph, 8, seed=1, doctype=name == "news")
    texts = generate_subscriptions(graph, 50, seed=2, form=form, PP=(1, 2))  # type: ignore[arg-type]
    pair_rate, sub_rate = match_rates(saxon, texts, docs)  # no Saxon error: no FORG0001 either
    assert pair_rate >= 0.05, pair_rate
    assert sub_rate >= 0.2, sub_rate


def test_same_seed_same_texts_and_texts_are_unique() -> None:
    graph = dtds.load("book")
    first = generate_subscriptions(graph, 200, seed=9, form="mixed")
    assert generate_subscriptions(graph, 200, seed=9, form="mixed") == first
    assert generate_subscriptions(graph, 200, seed=10, form="mixed") != first
    assert len(set(first)) == 200


def test_texts_stay_inside_the_subset() -> None:
    texts = [t for n in NAMES for t in generate_subscriptions(dtds.load(n), 300, seed=8, form="mixed")]
    assert not any("None" in t for t in texts)  # a missing predicate must not become a name test
    conditions = [c for t in texts for w in re.findall(r"\nwhere (.*)\n", t) for c in w.split(" and ")]
    assert conditions and all(re.match(r"\$\w+/", c) for c in conditions)  # paths from the variable
    assert all(not re.search(r"return \$\w+$", t, re.M) for t in texts)  # "{ $v }", never bare "$v"


def test_forms() -> None:
    graph = dtds.load("news")
    flwr = generate_subscriptions(graph, 40, seed=1, form="flwr")
    assert all(re.match(r"(<results>\{\n)?for \$\w+ in /", t) and "\nreturn " in t for t in flwr)
    filters = generate_subscriptions(graph, 40, seed=1, form="filter")
    assert all(t.startswith("/") and "$" not in t for t in filters)
    mixed = generate_subscriptions(graph, 40, seed=1, form="mixed")
    assert any(t.startswith("/") for t in mixed) and any("for $" in t for t in mixed)


def binding_path(text: str) -> str:
    return text.removeprefix("<results>{\n").split("\n")[0].split(" in ", 1)[1]


def without_predicates(path: str) -> str:
    while "[" in path:
        path = re.sub(r"\[[^\[\]]*\]", "", path)
    return path


def test_dsprob_and_wildcard() -> None:
    graph = dtds.load("book")
    none = generate_subscriptions(graph, 60, seed=3, form="mixed", DSProb=0, wildcard=0)
    assert not any("//" in t or "*" in t for t in none)
    every = generate_subscriptions(graph, 60, seed=3, form="filter", DSProb=1, wildcard=0)
    assert all(re.fullmatch(r"(//[\w.-]+)+", without_predicates(t)) for t in every)
    stars = generate_subscriptions(graph, 60, seed=3, form="filter", wildcard=1)
    assert all(set(re.split(r"//?", without_predicates(t))[1:]) == {"*"} for t in stars)


def test_d1_pp_rp_d2_bound_the_paths() -> None:
    graph = dtds.load("news")
    texts = generate_subscriptions(graph, 80, seed=4, D1=2, PP=(2, 2), RP=(1, 1), D2=1, DSProb=0, wildcard=0)
    for text in texts:
        assert without_predicates(binding_path(text)).count("/") <= 2
        where = re.search(r"\nwhere (.*)\n", text)
        if where:
            assert where[1].count(" and ") <= 1
            for condition in where[1].split(" and "):
                path = condition.split(" ", 1)[0].removesuffix("/text()")
                assert path.count("/") <= 2  # $v/child or $v/child/@attr
        ret = text.split("\nreturn ", 1)[1]
        assert ret.count("{ $") <= 2  # one return path, perhaps after a leading attribute


def test_values_stay_within_max_value() -> None:
    texts = generate_subscriptions(dtds.load("bib"), 100, seed=5, max_value=4, numeric_ratio=1.0)
    numbers = [int(n) for t in texts for n in re.findall(r"[=<>] (\d+)\b", t)]
    assert numbers and all(1 <= n <= 4 for n in numbers)


def test_prefix_and_namespaces(saxon: Saxon) -> None:
    text = """
    <!ELEMENT w:feed (w:item*)>
    <!ATTLIST w:feed xmlns:w CDATA #FIXED "urn:wire">
    <!ELEMENT w:item (w:title, w:rank)>
    <!ATTLIST w:item w:lang (en|fr) #IMPLIED>
    <!ELEMENT w:title (#PCDATA)>
    <!ELEMENT w:rank (#PCDATA)>
    """
    graph = DtdGraph.from_text(text)
    docs = generate_documents(graph, 5, seed=1)
    texts = generate_subscriptions(graph, 30, seed=1, form="mixed", prefix="(: wire :)")
    assert all(t.startswith('(: wire :)\ndeclare namespace w = "urn:wire";\n') for t in texts)
    pair_rate, _ = match_rates(saxon, texts, docs)
    assert pair_rate > 0.1


def test_string_literals_are_escaped_for_xquery(saxon: Saxon) -> None:
    doc = saxon.document(b"<a/>")
    for value in ('say "hi"', "AT&T", "it's", "a < b", "東京"):
        assert saxon.run(f"{xquery_string(value)} = {xquery_string(value)}", doc) == "true"
        assert saxon.run(f"string-length({xquery_string(value)})", doc) == str(len(value))


@pytest.mark.parametrize("name", NAMES)
def test_selective_population_matches_few(saxon: Saxon, name: str) -> None:
    graph = dtds.load(name)
    sample = generate_documents(graph, 40, seed=1)
    texts = generate_selective_population(graph, 150, seed=2, target_match_rate=0.03, documents=sample)
    assert texts == generate_selective_population(
        graph, 150, seed=2, target_match_rate=0.03, documents=sample
    )
    shared = {binding_path(t) if t.startswith("for") else t.split("[", 1)[0] for t in texts}
    assert len(shared) <= 3  # a few shared paths, many constants
    pair_rate, _ = match_rates(saxon, texts, generate_documents(graph, 10, seed=3))
    assert 0.005 <= pair_rate <= 0.1, pair_rate


def test_selective_population_needs_a_numeric_key() -> None:
    graph = DtdGraph.from_text("<!ELEMENT r (title*)> <!ELEMENT title (#PCDATA)>")
    with pytest.raises(ValueError, match="no numeric"):
        generate_selective_population(graph, 5, seed=1)
