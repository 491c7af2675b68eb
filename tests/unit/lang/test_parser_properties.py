"""Properties: any text gives a Subscription or a SubscriptionError; generated ASTs round-trip."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feedrouter.errors import SubscriptionError
from feedrouter.lang import parse, to_xquery
from feedrouter.lang.ast import (
    ANY,
    MATCH_FUNCTIONS,
    AbsPath,
    And,
    AttributeConstructor,
    AttributeTest,
    Axis,
    BooleanCall,
    Call,
    CallComparison,
    CommentContent,
    Comparison,
    CompOp,
    Condition,
    Constructor,
    Enclosed,
    Exists,
    Filter,
    Flwr,
    Items,
    Literal,
    Not,
    Or,
    OrderSpec,
    Position,
    QName,
    RelPath,
    SelfTest,
    Step,
    Subscription,
    TextContent,
    TextTest,
    Union,
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
    '//story[@lang = "en" or (@lang = "fr" and not(b[1]))][category = ("Sport", "Culture")]',
    '//p[contains(lower-case(.), "merger")][string-length(@n) > 2][count(.//q) >= 1][last()]',
    'for $s in //s where matches($s/t, "^a+", "i") or empty($s/p[position() <= 2]) return $s',
    "//a[b | c][position() > 1 and position() < last()][starts-with(@x, 'y')][ends-with(., 'z')]",
]
TOKENS = [
    "/", "//", "[", "]", "(", ")", "{", "}", "<", ">", "</", "/>", "=", "!=", "<=", ">=", "$v", "$x", "@a",
    "text()", ".", "..", "*", '"', "'", "(:", ":)", "&amp;", "&", "&#", ";", " and ", " or ", " eq ", "for ",
    "where ", "return ", "let ", "declare namespace p = 'u';", "p:", "a", "1", "1e", "-", ",", "|", "\n",
    "\r", "\x00", "é", "Q{", "{{", "}}", "<![CDATA[", "]]>", "<!--", "<?", "::", "child", "count(",
    "not(", "empty(", "exists(", "contains(", "matches(", "lower-case(", "string-length(", "last()",
    "position()", " or ", "(", ")", '"x", "y"', "fn:",
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
def attribute_name(draw: st.DrawFn, wildcards: bool = False) -> QName:
    local = draw(LOCALS)
    if wildcards and draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from([QName(ANY, ANY), QName(ANY, local), QName(PREFIXES["p"], ANY, "p")]))
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
        return RelPath(steps, AttributeTest(draw(attribute_name(wildcards=True))))
    return RelPath(steps, TextTest() if tail == "text" else None)


@st.composite
def plain_condition(draw: st.DrawFn, default: str, depth: int) -> Comparison | Exists:
    path = draw(rel_path(default, depth))
    if draw(st.booleans()):
        return Exists(path)
    return Comparison(path, draw(st.sampled_from(list(CompOp))), draw(literal()))


STRING_CALLS = ["lower-case", "upper-case", "normalize-space", "string"]
PATTERNS = st.sampled_from(["^a", "b+c?", "x|y", r"\d{2}", "[a-z-[aeiou]]", "."])


@st.composite
def call(draw: st.DrawFn, default: str, depth: int, name: str) -> Call:
    nested = name in MATCH_FUNCTIONS or name in ("lower-case", "upper-case", "normalize-space")
    if nested and depth > 0 and draw(st.integers(0, 4)) == 0:
        arg: RelPath | Call = draw(call(default, depth - 1, draw(st.sampled_from(STRING_CALLS))))
    else:
        arg = draw(rel_path(default, depth))
    if name == "matches":
        flags = draw(st.sampled_from([(), ("i",), ("smx",)]))
        return Call(name, arg, tuple(Literal(v) for v in (draw(PATTERNS), *flags)))
    if name in MATCH_FUNCTIONS:
        return Call(name, arg, (Literal(draw(st.text(XML_CHARS, max_size=6))),))
    return Call(name, arg)


@st.composite
def function_condition(draw: st.DrawFn, default: str, depth: int) -> BooleanCall | CallComparison:
    name = draw(st.sampled_from([*MATCH_FUNCTIONS, *STRING_CALLS, "string-length", "count"]))
    found = draw(call(default, depth, name))
    if name in MATCH_FUNCTIONS:
        return BooleanCall(found)
    op = draw(st.sampled_from(list(CompOp)))
    if name in ("string-length", "count"):
        return CallComparison(found, op, Literal(float(draw(st.integers(0, 9)))))
    return CallComparison(found, op, Literal(draw(st.text(XML_CHARS, max_size=6))))


@st.composite
def position(draw: st.DrawFn) -> Position:
    index = draw(st.one_of(st.none(), st.integers(-1, 5).map(float), st.just(1.5)))
    return Position(draw(st.sampled_from(list(CompOp))), index)


@st.composite
def condition(draw: st.DrawFn, default: str, depth: int, positions: bool = False) -> Condition:
    """Any condition as the parser builds it: or/and flattened, and only under or/not."""
    kinds = ["plain", "plain", "function"] + (["or", "and", "not"] if depth > 0 else [])
    kinds += ["position"] if positions else []
    kinds += ["self"]
    kind = draw(st.sampled_from(kinds))
    if kind == "self":  # self::* is '.' once parsed: only named tests round-trip
        return SelfTest(draw(element_name(default).filter(lambda n: n is not None)))
    if kind == "plain":
        return draw(plain_condition(default, depth))
    if kind == "function":
        return draw(function_condition(default, depth))
    if kind == "position":
        return draw(position())
    if kind == "not":
        return Not(draw(condition(default, depth - 1, positions)))
    terms = draw(st.lists(condition(default, depth - 1, positions), min_size=2, max_size=3))
    if kind == "and":
        return Or((And(tuple(t for t in terms if not isinstance(t, And)) or terms[:1]), terms[0]))
    return Or(tuple(t for t in terms if not isinstance(t, Or)) or terms[:1])


def _normal(condition: Condition) -> Condition:
    """Or and And of one term are that term (the parser never builds them)."""
    if isinstance(condition, (Or, And)):
        terms = tuple(_normal(t) for t in condition.terms)
        flat = tuple(x for t in terms for x in (t.terms if isinstance(t, type(condition)) else (t,)))
        return flat[0] if len(flat) == 1 else type(condition)(flat)
    if isinstance(condition, Not):
        return Not(_normal(condition.operand))
    return condition


@st.composite
def predicate(draw: st.DrawFn, default: str, depth: int) -> Condition:
    found = _normal(draw(condition(default, depth, positions=True)))
    return found.terms[0] if isinstance(found, And) and len(found.terms) == 1 else found


@st.composite
def step(draw: st.DrawFn, default: str, depth: int = 2) -> Step:
    predicates = draw(st.lists(predicate(default, depth), max_size=2)) if depth > 0 else []
    axis = draw(st.sampled_from([Axis.CHILD, Axis.DESCENDANT]))
    return Step(axis, draw(element_name(default)), tuple(predicates))


#: Namespace declarations written on constructors: a default, a new prefix, a rebound one, xmlns="".
DECLARATIONS = st.sampled_from([(), (), (("", "urn:z"),), (("q", "urn:q"),), (("r", "urn:r"), ("", ""))])


@st.composite
def constructor(draw: st.DrawFn, default: str, depth: int = 2) -> Constructor:
    declared = draw(DECLARATIONS)
    default = dict(declared).get("", default)  # the element's name and content see its declarations
    items: list[Constructor | Enclosed | TextContent | CommentContent] = []
    for _ in range(draw(st.integers(0, 3))):
        kinds = ["enclosed", "text", "comment"] + (["element"] if depth > 0 else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "text" and not (items and isinstance(items[-1], TextContent)):
            items.append(TextContent(draw(st.text(XML_CHARS, min_size=1, max_size=6))))
        elif kind == "comment":
            items.append(CommentContent(draw(st.sampled_from(["", " c ", "a-b", "x&y<z"]))))
        elif kind == "element":
            items.append(draw(constructor(default, depth - 1)))
        else:
            paths = draw(st.lists(rel_path(default, 1, tails=("text",)), max_size=2))
            items.append(Enclosed(tuple(paths)))
    attributes: dict[QName, AttributeConstructor] = {}
    for _ in range(draw(st.integers(0, 2))):
        name = draw(attribute_name())
        parts: list[str | Enclosed] = [draw(st.text(XML_CHARS, max_size=5))]
        if draw(st.booleans()):
            parts.append(Enclosed((draw(rel_path(default, 1, tails=("attr", "text"))),)))
        kept = tuple(p for p in parts if p != "") or ("",)  # the parser keeps no empty literal run
        attributes[name] = AttributeConstructor(name, kept)
    name = draw(element_name(default, constructor=True))
    return Constructor(
        name, tuple(items), attributes=tuple(attributes.values()), namespaces=declared  # type: ignore[arg-type]
    )


@st.composite
def subscription(draw: st.DrawFn) -> Subscription:
    default = draw(st.sampled_from(["", "urn:d"]))
    binding = AbsPath(tuple(draw(st.lists(step(default), min_size=1, max_size=3))))
    namespaces = tuple(PREFIXES.items())
    version = draw(st.sampled_from(["", "", "1.0", "3.1"]))
    if draw(st.booleans()):
        if draw(st.booleans()):
            more = draw(st.lists(st.lists(step(default), min_size=1, max_size=2), min_size=1, max_size=2))
            union = Union((binding, *(AbsPath(tuple(p)) for p in more)))
            return Subscription(Filter(union), namespaces, default, version=version)
        return Subscription(Filter(binding), namespaces, default, version=version)
    where = tuple(_normal(c) for c in draw(st.lists(condition(default, 2), max_size=3)))
    where = tuple(t for c in where for t in (c.terms if isinstance(c, And) else (c,)))
    item = st.one_of(rel_path(default, 1, tails=("text",)), constructor(default))
    ret = draw(st.one_of(item, st.lists(item, min_size=2, max_size=3).map(lambda i: Items(tuple(i)))))
    wrapper_name = draw(st.one_of(st.none(), element_name(default, constructor=True)))
    wrapper = None
    if wrapper_name is not None:
        value = draw(st.text(XML_CHARS, min_size=1, max_size=5))
        constant = AttributeConstructor(QName("", "feed"), (value,))
        attributes = (constant,) if draw(st.booleans()) else ()
        declared = draw(st.sampled_from([(), (("r", "urn:r"),)]))  # a new prefix: names inside keep theirs
        wrapper = Constructor(wrapper_name, attributes=attributes, namespaces=declared)
    var = draw(st.sampled_from(["v", "for", "s.t"]))
    order = tuple(draw(st.lists(order_spec(default), max_size=2)))
    flwr = Flwr(var, binding, where, ret, wrapper, order=order)
    return Subscription(flwr, namespaces, default, version=version)


@st.composite
def order_spec(draw: st.DrawFn, default: str) -> OrderSpec:
    path = draw(rel_path(default, 1, tails=("attr",)))
    return OrderSpec(path, draw(st.booleans()), draw(st.booleans()), draw(st.booleans()))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(subscription())
def test_generated_asts_round_trip(sub: Subscription) -> None:
    text = to_xquery(sub)
    assert parse(text) == sub, text
