"""The printers: canonical XQuery that parses back to the same AST, XPath 1.0 for lxml, match probes."""

from __future__ import annotations

import pytest
from lxml import etree

from feedrouter.lang import match_probe, parse, to_xpath, to_xquery
from feedrouter.lang.ast import AbsPath, Axis, Constructor, Filter, Flwr, QName, Step, Subscription
from feedrouter.workload import dtds, generate_subscriptions

ROUND_TRIPS = [
    "//a",
    "/a/b//c/*",
    '/nitf[head/pubdata[@edition.area = "SF"]][.//tobject.subject[@tobject.subject.type = "Stock"]]',
    "//a[. = 1][@b != -2.5][text() < 'x'][c/d/@e >= 1e300][.//f <= .5][g > 5.][h]",
    "//a[@x = 'say \"hi\" &amp; it''s']",
    "//a[. = '&#13;&#10;&#9;']",
    """<sections>{
  for $s in //section[@id <= 2]
  where $s//figure/title = "XML processing" and $s/@lang = "en"
  return <section>{ $s/title }{ $s//figure }</section>
}</sections>""",
    "for $v in //a return $v",
    "for $v in //a where $v and $v/text() = 'x' return $v/b/text()",
    "for $v in //a return <r>a &amp; b {{x}} &lt;{ $v/c, $v//d }<e/>{}<f>&#32;</f> tail</r>",
    "for $v in //a return <r><![CDATA[ ]]></r>",
    'declare namespace n = "urn:n"; declare default element namespace "urn:d"; '
    "<w>{ for $e in /n:feed/entry[@n:id = 2] return <n:item>{ $e/title, $e/Q{}plain }</n:item> }</w>",
    'declare namespace p = ""; declare namespace xs = "urn:x"; //xs:a[@xml:lang = "en"]',
    "for $for in //for where $for/and return $for/return",
]


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_round_trip(text: str) -> None:
    sub = parse(text)
    printed = to_xquery(sub)
    assert parse(printed) == sub
    assert to_xquery(parse(printed)) == printed  # canonical: printing is a fixed point


@pytest.mark.parametrize("name", ["bib", "book", "news"])
def test_generated_workloads_round_trip(name: str) -> None:
    for text in generate_subscriptions(dtds.load(name), 150, seed=5, form="mixed"):
        sub = parse(text)
        assert parse(to_xquery(sub)) == sub, text


def test_canonical_text() -> None:
    sub = parse("(: c :) for $x in //a [ @b=1 ] where $x/c = 'y' and 2 > $x/@d return <r> { $x } </r>")
    assert to_xquery(sub) == 'for $x in //a[@b = 1]\nwhere $x/c = "y" and $x/@d < 2\nreturn <r>{ $x }</r>'


def test_whitespace_only_text_is_printed_as_references() -> None:
    sub = parse("for $v in //a return <r>&#32;&#10;</r>")
    assert "<r>&#32;&#10;</r>" in to_xquery(sub)


def test_names_without_a_declared_prefix_use_braced_uris() -> None:
    sub = Subscription(parse("//a").body, default_element_namespace="urn:d")
    assert to_xquery(sub) == 'declare default element namespace "urn:d";\n//Q{}a'


def test_an_unprintable_constructor_name_is_a_value_error() -> None:
    body = parse("for $v in //a return <r/>").body
    assert isinstance(body, Flwr)
    sub = Subscription(Flwr("v", body.binding, (), Constructor(QName("urn:nowhere", "r"))))
    with pytest.raises(ValueError, match="cannot be written"):
        to_xquery(sub)


# -- XPath 1.0 ----------------------------------------------------------------------------------------

DOC = etree.fromstring(
    b'<r xmlns:n="urn:n"><a id="1" xml:lang="en">x<b>5</b></a><a id="2"><b c="3">y</b></a>'
    b'<n:a n:id="7"><n:b>z</n:b></n:a><d xmlns="urn:d"><e>e</e></d></r>'
)


def select(text: str) -> list[str]:
    expression, namespaces = to_xpath(parse(text))
    return [
        f"{node.tag}:{node.get('id') or node.text}" for node in DOC.xpath(expression, namespaces=namespaces)
    ]


@pytest.mark.parametrize(
    ("text", "xpath"),
    [
        ("//a[@id = 1]", "//a[@id = 1]"),
        ("/r/a[b = 'x'][.//c/@d != \"it's\"]", '/r/a[b = "x"][.//c/@d != "it\'s"]'),
        ("//a[. = 'say \"hi\" it''s']", '//a[. = concat("say ", \'"\', "hi", \'"\', " it\'s")]'),
        ("//a[@x > 1e-7]", "//a[@x > 0.0000001]"),
        ("//a[@x > -1.5e21]", "//a[@x > -1500000000000000000000]"),
        ("for $v in //a[@id] where $v/b and $v/@c = 1 return $v/b", "//a[@id][b and @c = 1]"),
        (
            "for $v in /r/* where $v = 'x' and $v//b/text() = 'y' return $v",
            '/r/*[. = "x" and .//b/text() = "y"]',
        ),
        ("for $v in //a where $v return $v", "//a[.]"),
    ],
)
def test_xpath_text(text: str, xpath: str) -> None:
    assert to_xpath(parse(text))[0] == xpath


def test_xpath_selects_what_the_subscription_binds() -> None:
    assert select("//a[b = 5]") == ["a:1"]
    assert select("for $v in /r/a where $v/b/@c >= 3 return $v") == ["a:2"]
    assert select("//a[@xml:lang = 'en']") == ["a:1"]
    assert select('declare namespace m = "urn:n"; //m:a[@m:id = 7]/m:b') == ["{urn:n}b:z"]


def test_xpath_invents_prefixes_for_the_default_element_namespace() -> None:
    expression, namespaces = to_xpath(parse('declare default element namespace "urn:d"; //d/e'))
    assert (expression, namespaces) == ("//ns0:d/ns0:e", {"ns0": "urn:d"})
    assert select('declare default element namespace "urn:d"; //d/e') == ["{urn:d}e:e"]
    assert select('declare default element namespace "urn:d"; //Q{}a[@id = 2]') == ["a:2"]


def test_xpath_cannot_order_strings() -> None:
    with pytest.raises(ValueError, match="cannot order strings"):
        to_xpath(parse("//a[. < 'm']"))


# -- match probes -----------------------------------------------------------------------------------


def test_match_probes() -> None:
    assert match_probe(parse("//a[@id]")) == "exists(//a[@id])"
    probe = match_probe(
        parse('declare namespace n = "urn:n"; <w>{ for $v in //n:a where $v/b return <r/> }</w>')
    )
    assert probe == 'declare namespace n = "urn:n";\nexists(for $v in //n:a\nwhere $v/b return 1)'


@pytest.mark.differential
def test_match_probes_run_in_saxon() -> None:
    from saxonche import PySaxonProcessor

    proc = PySaxonProcessor(license=False)
    xq = proc.new_xquery_processor()
    xq.set_property("!omit-xml-declaration", "yes")
    doc = proc.parse_xml(xml_text=etree.tostring(DOC).decode())
    cases = {
        "//a[@id = 2]": "true",
        "//a[@id = 3]": "false",
        "//a[b = 'z']": "false",
        "for $v in //a where $v/b/@c = 3 return <r>{ $v }</r>": "true",
        'declare default element namespace "urn:d"; <w>{ for $v in //d where $v/e return $v }</w>': "true",
        'declare default element namespace "urn:d"; for $v in //a return $v': "false",
    }
    for text, expected in cases.items():
        xq.set_query_content(match_probe(parse(text)))
        xq.set_context(xdm_item=doc)
        assert xq.run_query_to_string().strip() == expected, text


def test_printing_does_not_depend_on_spans() -> None:
    bare = Subscription(Filter(AbsPath((Step(Axis.DESCENDANT, QName("", "a")),))))
    assert to_xquery(bare) == to_xquery(parse("//a")) == "//a"
