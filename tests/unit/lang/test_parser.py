"""The parser: one test per construct of SUBSCRIPTIONS.md, and every error it reports (golden file)."""

from __future__ import annotations

import pickle

import pytest

from feedrouter.errors import SubscriptionError
from feedrouter.lang import ast, parse
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
from tests.unit.lang.golden import FailCase, load_must_fail

CHILD, DESC = Axis.CHILD, Axis.DESCENDANT


def q(local: str, uri: str = "") -> QName:
    return QName(uri, local)


def step(local: str | None, axis: Axis = CHILD, *predicates, uri: str = "") -> Step:
    return Step(axis, None if local is None else QName(uri, local), tuple(predicates))


def rel(*steps: Step, tail=None) -> RelPath:
    return RelPath(tuple(steps), tail)


def attr(name: str, uri: str = "") -> AttributeTest:
    return AttributeTest(QName(uri, name))


def cmp(path: RelPath, op: str, value: str | float) -> Comparison:
    return Comparison(path, CompOp(op), Literal(value))


def flt(text: str) -> Filter:
    body = parse(text).body
    assert isinstance(body, Filter)
    return body


def flwr(text: str) -> Flwr:
    body = parse(text).body
    assert isinstance(body, Flwr)
    return body


def predicate_of(text: str):
    """The single condition of ``//a[...]``."""
    (condition,) = flt(f"//a[{text}]").path.steps[0].predicates
    return condition


def error(text: str, source: str | None = None) -> SubscriptionError:
    with pytest.raises(SubscriptionError) as info:
        parse(text, source)
    return info.value


# -- the two forms, as SUBSCRIPTIONS.md writes them ---------------------------------------------------


def test_the_flwr_example_of_the_contract() -> None:
    text = """<sections>{
  for $s in //section[@id <= 2]
  where $s//figure/title = "XML processing" and $s/@lang = "en"
  return <section>{ $s/title }{ $s//figure }</section>
}</sections>"""
    sub = parse(text)
    assert sub == Subscription(
        Flwr(
            var="s",
            binding=AbsPath((step("section", DESC, cmp(rel(tail=attr("id")), "<=", 2.0)),)),
            where=(
                cmp(rel(step("figure", DESC), step("title")), "=", "XML processing"),
                cmp(rel(tail=attr("lang")), "=", "en"),
            ),
            ret=Constructor(
                q("section"), (Enclosed((rel(step("title")),)), Enclosed((rel(step("figure", DESC)),)))
            ),
            wrapper=Constructor(q("sections")),
        )
    )
    assert sub.text == text


def test_the_filter_example_of_the_contract() -> None:
    path = flt(
        '/nitf[head/pubdata[@edition.area = "SF"]][.//tobject.subject[@tobject.subject.type = "Stock"]]'
    ).path
    pubdata = step("pubdata", CHILD, cmp(rel(tail=attr("edition.area")), "=", "SF"))
    subject = step("tobject.subject", DESC, cmp(rel(tail=attr("tobject.subject.type")), "=", "Stock"))
    assert path == AbsPath((step("nitf", CHILD, Exists(rel(step("head"), pubdata)), Exists(rel(subject))),))


def test_a_flwr_without_where_or_wrapper() -> None:
    assert flwr("for $v in /a/b return $v") == Flwr("v", AbsPath((step("a"), step("b"))), (), rel())


# -- prolog and names -------------------------------------------------------------------------------


def test_namespace_declarations_resolve_element_and_attribute_names() -> None:
    sub = parse(
        'declare namespace n = "urn:n";\ndeclare default element namespace "urn:d";\n//entry[@n:id = 2][@k]'
    )
    assert sub.namespaces == (("n", "urn:n"),)
    assert sub.default_element_namespace == "urn:d"
    (entry,) = sub.body.path.steps  # type: ignore[union-attr]
    assert entry.name == QName("urn:d", "entry")
    assert entry.predicates == (cmp(rel(tail=attr("id", "urn:n")), "=", 2.0), Exists(rel(tail=attr("k"))))
    assert entry.predicates[0].path.tail.name.prefix == "n"  # type: ignore[union-attr]


def test_the_default_element_namespace_applies_to_constructors_and_wrappers() -> None:
    body = flwr('declare default element namespace "urn:d"; <w>{ for $v in //a return <r><s/></r> }</w>')
    assert body.wrapper == Constructor(QName("urn:d", "w"))
    assert body.ret == Constructor(QName("urn:d", "r"), (Constructor(QName("urn:d", "s")),))


def test_prefixed_constructor_names_resolve() -> None:
    body = flwr('declare namespace p = "urn:p"; for $v in //a return <p:r>{ $v }</p:r>')
    assert body.ret == Constructor(QName("urn:p", "r"), (Enclosed((rel(),)),))


def test_xml_and_the_other_predeclared_prefixes() -> None:
    assert predicate_of("@xml:lang = 'en'") == cmp(rel(tail=attr("lang", XML_NS)), "=", "en")
    xs = flt("//xs:element").path.steps[0].name
    assert xs == QName("http://www.w3.org/2001/XMLSchema", "element")


def test_a_prolog_may_rebind_predeclared_prefixes_but_not_xml() -> None:
    assert flt('declare namespace xs = "urn:x"; //xs:a').path.steps[0].name == QName("urn:x", "a")
    assert error('declare namespace xml = "urn:x"; //a').code == "FR100"


def test_an_empty_namespace_uri_undeclares_the_prefix() -> None:
    sub = parse('declare namespace p = ""; //a')
    assert sub.namespaces == (("p", ""),)
    assert error('declare namespace p = ""; //p:a').code == "FR105"


def test_namespace_uris_are_whitespace_normalized_as_xquery_does() -> None:
    sub = parse(
        'declare namespace p = " urn:\tq&#x20; ";\n'
        'declare default element namespace " urn:d ";\n'
        "//p:a/Q{ urn:x }b/c"
    )
    assert sub.namespaces == (("p", "urn: q"),)
    assert [s.name.uri for s in sub.body.path.steps] == ["urn: q", "urn:x", "urn:d"]  # type: ignore[union-attr]


def test_braced_uri_names() -> None:
    sub = parse('declare default element namespace "urn:d"; //Q{}a/Q{urn:x}b[@Q{urn:y}c]')
    a, b = sub.body.path.steps  # type: ignore[union-attr]
    assert (a.name, b.name) == (QName("", "a"), QName("urn:x", "b"))
    assert b.predicates == (Exists(rel(tail=attr("c", "urn:y"))),)


def test_keywords_are_names_where_a_name_stands() -> None:
    body = flwr("for $for in //for where $for/where and $for/and = 'or' return $for/return")
    assert body.var == "for"
    assert body.binding == AbsPath((step("for", DESC),))
    assert body.where == (Exists(rel(step("where"))), cmp(rel(step("and")), "=", "or"))
    assert body.ret == rel(step("return"))
    and_or = flt("//a[and and or]").path.steps[0].predicates
    assert and_or == (Exists(rel(step("and"))), Exists(rel(step("or"))))
    assert flt("//div[div][*]").path.steps[0].predicates == (
        Exists(rel(step("div"))),
        Exists(rel(step(None))),
    )


def test_names_with_dots_and_hyphens() -> None:
    assert flt("//a.b/c-d[e-1]").path == AbsPath(
        (step("a.b", DESC), step("c-d", CHILD, Exists(rel(step("e-1")))))
    )


# -- comments and whitespace ------------------------------------------------------------------------


def test_comments_stand_wherever_whitespace_may() -> None:
    text = (
        "(: a (: nested :) one :) for (: x :) $v (: y :) in //a(: z :)[ @b (: w :) = 1 ] return $v (: end :)"
    )
    assert flwr(text) == flwr("for $v in //a[@b = 1] return $v")


def test_whitespace_inside_tokens_sequences_that_xquery_allows() -> None:
    assert flwr("for $ v in //a [ @ b ] return $ v / c") == flwr("for $v in //a[@b] return $v/c")
    assert predicate_of("text ( ) = 'x'") == cmp(rel(tail=TextTest()), "=", "x")


def test_comments_inside_constructor_content_are_text() -> None:
    body = flwr("for $v in //a return <r>(: not a comment :)</r>")
    assert body.ret == Constructor(q("r"), (TextContent("(: not a comment :)"),))


# -- paths and predicates ---------------------------------------------------------------------------


def test_child_descendant_and_wildcard_steps() -> None:
    assert flt("/a//b/*//*").path == AbsPath((step("a"), step("b", DESC), step(None), step(None, DESC)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (".", rel()),
        ("@a", rel(tail=attr("a"))),
        ("text()", rel(tail=TextTest())),
        ("title", rel(step("title"))),
        ("a/b/@c", rel(step("a"), step("b"), tail=attr("c"))),
        (".//x", rel(step("x", DESC))),
        ("./x", rel(step("x"))),
        ("./@x", rel(tail=attr("x"))),
        ("./text()", rel(tail=TextTest())),
        ("a//b/text()", rel(step("a"), step("b", DESC), tail=TextTest())),
        (".//*/@a", rel(step(None, DESC), tail=attr("a"))),
        ("a[b = 1]/c", rel(step("a", CHILD, cmp(rel(step("b")), "=", 1.0)), step("c"))),
    ],
)
def test_relative_paths_in_predicates(text: str, expected: RelPath) -> None:
    assert predicate_of(text) == Exists(expected)
    assert predicate_of(f"{text} = 'v'") == Comparison(expected, CompOp.EQ, Literal("v"))


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
def test_every_comparison_operator_and_flipping(op: str) -> None:
    assert predicate_of(f"@n {op} 3") == cmp(rel(tail=attr("n")), op, 3.0)
    assert predicate_of(f"3 {op} @n") == cmp(rel(tail=attr("n")), CompOp(op).flipped.value, 3.0)


def test_comparisons_without_spaces() -> None:
    assert predicate_of("@n<=-2") == cmp(rel(tail=attr("n")), "<=", -2.0)
    assert predicate_of('.!="x"') == cmp(rel(), "!=", "x")


def test_several_predicates_and_and_are_one_conjunction() -> None:
    both = (Exists(rel(step("b"))), cmp(rel(tail=attr("c")), ">", 1.0))
    assert flt("//a[b and @c > 1]").path.steps[0].predicates == both
    assert flt("//a[b][@c > 1]").path.steps[0].predicates == both


def test_existence_tests_carry_nested_predicates() -> None:
    inner = step("x", DESC, Exists(rel(step("y", CHILD, cmp(rel(tail=attr("z")), "=", "1")))))
    assert predicate_of(".//x[y[@z = '1']]") == Exists(rel(inner))


def test_predicates_on_every_step_of_a_binding_path() -> None:
    path = flwr("for $s in /a[@x]//b[c][d = 2] return $s").binding
    assert path.steps == (
        step("a", CHILD, Exists(rel(tail=attr("x")))),
        step("b", DESC, Exists(rel(step("c"))), cmp(rel(step("d")), "=", 2.0)),
    )


# -- literals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3", 3.0),
        ("3.25", 3.25),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("1.5E-2", 0.015),
        ("-4", -4.0),
        ("- 4", -4.0),
        ("--4", 4.0),
        ("+4", 4.0),
        ("-.5e1", -5.0),
        ("12345678901234567890", 12345678901234567890.0),
    ],
)
def test_numeric_literals_are_doubles(text: str, value: float) -> None:
    literal = predicate_of(f". = {text}").literal
    assert literal.value == value and literal.numeric


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"plain"', "plain"),
        ("'single'", "single"),
        ('"say ""hi"""', 'say "hi"'),
        ("'it''s'", "it's"),
        ('"a &amp; b &lt;&gt;&quot;&apos;"', "a & b <>\"'"),
        ('"&#65;&#x42;&#x1F600;"', "AB\U0001f600"),
        ('"x"', "x"),
        ('""', ""),
        ('"two\r\nlines\rhere"', "two\nlines\nhere"),
        ('"é ü 中"', "é ü 中"),
        ("'&#13;'", "\r"),
    ],
)
def test_string_literals(text: str, value: str) -> None:
    literal = predicate_of(f". = {text}").literal
    assert literal.value == value and not literal.numeric


# -- where and return -------------------------------------------------------------------------------


def test_where_conditions() -> None:
    body = flwr("for $v in //a where $v and $v/b = 1 and 'x' < $v//c/@d and $v/text() and $v/@e return $v")
    assert body.where == (
        Exists(rel()),
        cmp(rel(step("b")), "=", 1.0),
        cmp(rel(step("c", DESC), tail=attr("d")), ">", "x"),
        Exists(rel(tail=TextTest())),
        Exists(rel(tail=attr("e"))),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$v", rel()),
        ("$v/a", rel(step("a"))),
        ("$v//a/b", rel(step("a", DESC), step("b"))),
        ("$v/text()", rel(tail=TextTest())),
        ("$v/a/text()", rel(step("a"), tail=TextTest())),
        ("$v/a[@b = 1]", rel(step("a", CHILD, cmp(rel(tail=attr("b")), "=", 1.0)))),
    ],
)
def test_return_paths(text: str, expected: RelPath) -> None:
    assert flwr(f"for $v in //x return {text}").ret == expected


def test_constructor_content() -> None:
    body = flwr(
        "for $s in //s return <r>Section: { $s/title/text() } &amp; more<n><m/></n>{ $s, $s//f }{}</r>"
    )
    assert body.ret == Constructor(
        q("r"),
        (
            TextContent("Section: "),
            Enclosed((rel(step("title"), tail=TextTest()),)),
            TextContent(" & more"),
            Constructor(q("n"), (Constructor(q("m")),)),
            Enclosed((rel(), rel(step("f", DESC)))),
            Enclosed(()),
        ),
    )


def test_boundary_whitespace_is_dropped_but_references_and_cdata_are_kept() -> None:
    body = flwr("for $s in //s return <r>\n  <a> </a>\t{ $s }  <b>&#32;</b><c> <![CDATA[]]> </c><d/> x </r>")
    assert body.ret == Constructor(
        q("r"),
        (
            Constructor(q("a")),
            Enclosed((rel(),)),
            Constructor(q("b"), (TextContent(" "),)),
            Constructor(q("c"), (TextContent("  "),)),
            Constructor(q("d")),
            TextContent(" x "),
        ),
    )


def test_brace_escapes_references_and_cdata_in_content() -> None:
    body = flwr("for $s in //s return <r>{{x}} &lt;&#x263A;<![CDATA[<&{]]></r>")
    assert body.ret == Constructor(q("r"), (TextContent("{x} <\u263a<&{"),))


def test_empty_element_forms() -> None:
    assert flwr("for $s in //s return <r/>").ret == Constructor(q("r"))
    assert flwr("for $s in //s return <r ></r >").ret == Constructor(q("r"))
    assert flwr("for $s in //s return <r />").ret == Constructor(q("r"))


def test_a_wrapper_allows_whitespace_and_comments_around_the_flwr() -> None:
    body = flwr("<w>\n  {(: c :) for $v in //a return <x>{ $v }</x> (: d :)}\n</w> (: after :)")
    assert body.wrapper == Constructor(q("w"))
    assert body.ret == Constructor(q("x"), (Enclosed((rel(),)),))


# -- the subscription object ------------------------------------------------------------------------


def test_subscriptions_compare_by_value_and_ignore_spans_and_text() -> None:
    first, second = parse("//a[@b=1]"), parse("  //a [ @b = 1.0 ]  ")
    assert first == second
    assert first.text != second.text
    # a step's span is its name test
    assert first.body.path.steps[0].span.column == 3  # type: ignore[union-attr]
    assert second.body.path.steps[0].span.column == 5  # type: ignore[union-attr]


def test_subscriptions_pickle() -> None:
    sub = parse(
        'declare namespace p = "urn:p"; <w>{ for $v in //p:a where $v/@x = 1 return <r>t{ $v }</r> }</w>'
    )
    assert pickle.loads(pickle.dumps(sub)) == sub


# -- errors -----------------------------------------------------------------------------------------


def test_the_error_message_format() -> None:
    exc = error("for $s in //section\nwhere $s/@a = 1 or $s/@b eq 2 return $s")
    assert exc.code == "FR104"
    assert (exc.line, exc.column) == (2, 26)
    assert str(exc) == (
        "line 2, column 26: [FR104] the value comparison 'eq' is not supported; "
        "use the general comparison '='\n"
        "  where $s/@a = 1 or $s/@b eq 2 return $s\n"
        "                           ^"
    )


def test_the_source_prefixes_the_message() -> None:
    exc = error("//a[position()]", source="sub 42")
    assert str(exc).startswith("sub 42, line 1, column 5: [FR107] ")
    assert exc.source == "sub 42"


def test_a_number_is_a_position_only_as_a_whole_predicate() -> None:
    exc = error("//section[@a = 1 and 2]")
    assert exc.message == "a number is a position only as a whole predicate; write position() = n"


def test_every_problem_is_reported() -> None:
    exc = error("//a[b || c][position()][count(d)]/../e[f eq 1]/p:g")
    assert [(d.code, d.span.column) for d in exc.details] == [  # type: ignore[union-attr]
        ("FR104", 7),
        ("FR107", 13),
        ("FR104", 25),
        ("FR104", 42),
        ("FR105", 48),
    ]
    assert str(exc).count("\n") == 3 * len(exc.details) - 1


def test_the_caret_follows_tabs_and_long_lines() -> None:
    exc = error("\t//a[b || c]")
    assert exc.details[0].excerpt == "  \t//a[b || c]\n  \t      ^"
    long = "//a[" + " and ".join(f"b{i}" for i in range(40)) + " || c]"
    excerpt = error(long).details[0].excerpt
    shown, caret = excerpt.split("\n")
    assert shown.startswith("  ...") and len(shown) < 120
    assert shown[caret.index("^") : caret.index("^") + 2] == "||"


def test_invalid_characters_are_rejected() -> None:
    exc = error("//a\u0001")
    assert (exc.code, exc.column) == ("FR100", 4)
    assert "U+0001" in exc.message
    assert error("//a[b = '\ufffe']").code == "FR100"


@pytest.mark.parametrize("text", ["   ", "\n\n", "\t(: x :)\n", "(: a :)(: b :)"])
def test_blank_texts_are_empty_subscriptions(text: str) -> None:
    assert error(text).code == "FR113"


def test_windows_line_ends_count_as_one_line() -> None:
    exc = error("//a\r\n[b || c]")
    assert (exc.line, exc.column) == (2, 4)


GOLDEN = load_must_fail()


def test_the_golden_file_covers_every_language_error_code() -> None:
    codes = {p[0] for case in GOLDEN for p in case.problems}
    assert codes == {f"FR1{n:02d}" for n in range(14)} | {"FR115"}


@pytest.mark.parametrize("case", GOLDEN, ids=[c.text[:40] or "(empty)" for c in GOLDEN])
def test_golden_must_fail(case: FailCase) -> None:
    exc = error(case.text)
    got = [(d.code, d.span.line, d.span.column, d.message) for d in exc.details]  # type: ignore[union-attr]
    assert got == case.problems
    assert (exc.code, exc.line, exc.column, exc.message) == case.problems[0]


# -- join subscriptions: what each where term reads ------------------------------------------------

JOIN_PROLOG = 'import module namespace fr = "urn:feedrouter:stream:1";\n'


def join_text(where: str, ret: str = "<p/>", lets: str = "") -> str:
    return (
        JOIN_PROLOG + "for $a in fr:stream()//item, $b in fr:stream('blogs')//item "
        f"{lets}where {where} return {ret}"
    )


def joined(text: str) -> ast.JoinFlwr:
    body = parse(text).body
    assert isinstance(body, ast.JoinFlwr)
    return body


def test_a_join_condition_read_through_a_let_alias_or_self_is_its_variables() -> None:
    body = joined(
        join_text(
            "$t = 'x' and $b/self::item and $b/descendant-or-self::item/author = 'y' and $a/t = $b/t "
            "and fr:followed-by($c, $b, 'PT1H')",
            lets="let $t := $b/author let $c := $a ",
        )
    )
    assert not body.left.where and len(body.right.where) == 3
    assert (body.temporal.first, body.temporal.second) == ("a", "b")


def test_a_value_join_reads_its_paths_without_self_steps() -> None:
    body = joined(join_text("$b/self::item/title = $a/title/self::title and fr:within($a, $b, 'PT1H')"))
    (join,) = body.joins
    assert [step.name.local for step in join.left.steps] == ["title"]
    assert [step.name.local for step in join.right.steps] == ["title"]
    assert len(body.right.where) == 1 and not body.left.where  # $b is an item: a test of $b's block


@pytest.mark.parametrize(
    ("where", "code", "at", "says"),
    [
        (
            "count(//item) = 3 and $a/t = $b/t and fr:within($a, $b, 'PT1H')",
            "FR104",
            "count(",
            "reads $a or $b",
        ),
        (
            "$b/descendant-or-self::t = $a/t and fr:within($a, $b, 'PT1H')",
            "FR109",
            "$b/descendant",
            "descendant-or-self",
        ),
        (
            " and ".join(f"$a/t{i} = $b/t{i}" for i in range(7)) + " and fr:within($a, $b, 'PT1H')",
            "FR115",
            "$a/t6",
            "at most 6 value joins",
        ),
        ("$a/t = $b/t and fr:within($a, $x, 'PT1H')", "FR106", "$x", "the variables are $a, $b"),
        (  # a review found it reported as arithmetic
            "contains($a/t, $b/t) and fr:within($a, $b, 'PT1H')",
            "FR104",
            "$b/t)",
            "a literal (a string or a number) is expected here, not a path; two variables' values are "
            "compared only with '=' (a value join)",
        ),
    ],
)
def test_join_conditions_outside_the_subset_are_refused_where_they_are(
    where: str, code: str, at: str, says: str
) -> None:
    text = join_text(where)
    found = error(text)
    assert found.code == code and says in str(found)
    assert found.span is not None and found.span.offset == text.index(at)


def test_a_let_alias_of_one_variable_is_not_the_other_in_a_temporal_term() -> None:
    found = error(join_text("$a/t = $b/t and fr:within($c, $b, 'PT1H')", lets="let $c := $b "))
    assert found.code == "FR104" and "relates the two variables" in str(found)
