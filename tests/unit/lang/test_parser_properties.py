"""Properties: any text gives a Subscription or a SubscriptionError; generated ASTs round-trip."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feedrouter.errors import SubscriptionError
from feedrouter.lang import parse, to_xquery
from feedrouter.lang.ast import (
    AbsPath,
    AttributeTest,
    Axis,
    Comparison,
    CompOp,
    Constructor,
    Enclosed,
    Exists,
    Filter,
    Flwr,
    Literal,
    QName,
    RelPath,
    Step,
    Subscription,
    TextContent,
    TextTest,
)
from feedrouter.lang.parser import XML_NS

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALID = [
    "//a",
    '/nitf[head/pubdata[@edition.area = "SF"]][.//tobject.subject[@tobject.subject.type = "Stock"]]',
    """<sections>{ for $s in //section[@id <= 2]
       where $s//figure/title = "XML processing" and $s/@lang = "en"
       return <section>{ $s/title }{ $s//figure }</section> }</sections>""",
    'declare namespace n = "urn:n"; declare default element namespace "urn:d";\n'
    "(: c :) for $e in /n:feed/entry where $e/@n:id = 2 "
    "return <item>a&amp;b{ $e/title, $e//x/text() }<c/></item>",
    "for $s in //section return <s>Section: { $s/title/text() } &amp; more<![CDATA[x]]>{{</s>",
    "//a[. = -1.5e3][text() != 'it''s'][b/c/@d >= .5][.//e[f]]",
]
TOKENS = [
    "/", "//", "[", "]", "(", ")", "{", "}", "<", ">", "</", "/>", "=", "!=", "<=", ">=", "$v", "$x", "@a",
    "text()", ".", "..", "*", '"', "'", "(:", ":)", "&amp;", "&", "&#", ";", " and ", " or ", " eq ", "for ",
    "where ", "return ", "let ", "declare namespace p = 'u';", "p:", "a", "1", "1e", "-", ",", "|", "\n",
    "\r", "\x00", "é", "Q{", "{{", "}}", "<![CDATA[", "]]>", "<!--", "<?", "::", "child", "count(",
]  # fmt: skip


def parse_or_error(text: str) -> Subscription | SubscriptionError:
    """The one contract for any input: a Subscription or a SubscriptionError, nothing else."""
    try:
        return parse(text)
    except SubscriptionError as exc:
        assert exc.details and exc.code.startswith("FR1")
        assert all(d.span is not None and d.excerpt for d in exc.details)
        str(exc)
        return exc


@FAST
@given(st.text(alphabet=st.sampled_from(list("/[]()<>{}=!$@.*'\":;&#,|-+ \n\tabxy01eQ")), max_size=60))
def test_random_texts_never_raise_anything_else(text: str) -> None:
    parse_or_error(text)


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=25))
def test_random_token_soups_never_raise_anything_else(tokens: list[str]) -> None:
    parse_or_error("".join(tokens))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "replace"]))
        if kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 6)) :]
        elif kind == "insert":
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at:]
        else:
            text = text[:at] + draw(st.characters(max_codepoint=0x3000)) + text[at + 1 :]
    return text


@FAST
@given(mutated())
def test_mutated_subscriptions_never_raise_anything_else(text: str) -> None:
    result = parse_or_error(text)
    if isinstance(result, Subscription):
        assert parse(to_xquery(result)) == result


# -- generated ASTs -----------------------------------------------------------------------------------

PREFIXES = {"p": "urn:p", "q": "urn:q"}
LOCALS = st.sampled_from(["a", "b", "title", "x.y", "c-d", "for", "and", "return", "div", "text", "é"])
XML_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",)).filter(
    lambda ch: re.match("[\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", ch) is not None
)


@st.composite
def element_name(draw: st.DrawFn, default: str, constructor: bool = False) -> QName | None:
    local = draw(LOCALS)
    choices = ["default", "prefixed"] + ([] if constructor else ["braced", "wildcard"])
    kind = draw(st.sampled_from(choices))
    if kind == "default":
        return QName(default, local)
    if kind == "prefixed":
        prefix = draw(st.sampled_from(sorted(PREFIXES)))
        return QName(PREFIXES[prefix], local, prefix)
    if kind == "braced":
        return QName(draw(st.sampled_from(["", "urn:b", "urn:p"])), local)
    return None


@st.composite
def attribute_name(draw: st.DrawFn) -> QName:
    local = draw(LOCALS)
    prefix = draw(st.sampled_from(["", "", "p", "xml"]))
    uri = {"": "", "p": PREFIXES["p"], "xml": XML_NS}[prefix]
    return QName(uri, local, prefix)


@st.composite
def literal(draw: st.DrawFn) -> Literal:
    if draw(st.booleans()):
        return Literal(draw(st.floats(allow_nan=False, allow_infinity=False)))
    return Literal(draw(st.text(XML_CHARS, max_size=8)))


@st.composite
def rel_path(draw: st.DrawFn, default: str, depth: int, tails: tuple[str, ...] = ("attr", "text")) -> RelPath:
    steps = tuple(draw(st.lists(step(default, depth - 1), max_size=3)))
    tail = draw(st.sampled_from((None, *tails)))
    if tail == "attr":
        return RelPath(steps, AttributeTest(draw(attribute_name())))
    return RelPath(steps, TextTest() if tail == "text" else None)


@st.composite
def condition(draw: st.DrawFn, default: str, depth: int) -> Comparison | Exists:
    path = draw(rel_path(default, depth))
    if draw(st.booleans()):
        return Exists(path)
    return Comparison(path, draw(st.sampled_from(list(CompOp))), draw(literal()))


@st.composite
def step(draw: st.DrawFn, default: str, depth: int = 2) -> Step:
    predicates = draw(st.lists(condition(default, depth), max_size=2)) if depth > 0 else []
    axis = draw(st.sampled_from([Axis.CHILD, Axis.DESCENDANT]))
    return Step(axis, draw(element_name(default)), tuple(predicates))


@st.composite
def constructor(draw: st.DrawFn, default: str, depth: int = 2) -> Constructor:
    items: list[Constructor | Enclosed | TextContent] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["enclosed", "text", "element"] if depth > 0 else ["enclosed", "text"]))
        if kind == "text" and not (items and isinstance(items[-1], TextContent)):
            items.append(TextContent(draw(st.text(XML_CHARS, min_size=1, max_size=6))))
        elif kind == "element":
            items.append(draw(constructor(default, depth - 1)))
        else:
            paths = draw(st.lists(rel_path(default, 1, tails=("text",)), max_size=2))
            items.append(Enclosed(tuple(paths)))
    return Constructor(draw(element_name(default, constructor=True)), tuple(items))  # type: ignore[arg-type]


@st.composite
def subscription(draw: st.DrawFn) -> Subscription:
    default = draw(st.sampled_from(["", "urn:d"]))
    binding = AbsPath(tuple(draw(st.lists(step(default), min_size=1, max_size=3))))
    namespaces = tuple(PREFIXES.items())
    if draw(st.booleans()):
        return Subscription(Filter(binding), namespaces, default)
    where = tuple(draw(st.lists(condition(default, 2), max_size=3)))
    ret = draw(st.one_of(rel_path(default, 1, tails=("text",)), constructor(default)))
    wrapper = draw(st.one_of(st.none(), element_name(default, constructor=True)))
    var = draw(st.sampled_from(["v", "for", "s.t"]))
    return Subscription(Flwr(var, binding, where, ret, wrapper), namespaces, default)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(subscription())
def test_generated_asts_round_trip(sub: Subscription) -> None:
    text = to_xquery(sub)
    assert parse(text) == sub, text
