"""A recursive-descent parser for the subscription subset of XQuery 3.1 (the contract: docs/language.md).

>>> parse('//item[@id = 3]').body.path.steps[0].name.local
'item'

Everything the subset does not cover is rejected with a :class:`SubscriptionError` that names the
construct; the parser goes on after cheap-to-skip problems (an unsupported predicate, clause or
operator, an unknown prefix or variable) so that one error lists every problem it found.

Decisions where the contract is silent (each is the conservative reading of XQuery 3.1):

* ``child::``, ``descendant::`` and ``attribute::`` are the abbreviated steps; ``self::`` and
  ``descendant-or-self::`` are rewritten while the path is read (a ``self::`` step narrows the step
  before it or tests the context node; ``descendant-or-self::`` is a ``self::`` or a ``//``
  alternative), and positions on those two axes are FR107;
* ``//@a`` and ``//text()`` are FR104 (they reach the context node itself); a binding path ending in
  ``@a`` or ``text()`` is FR111, and so is an attribute in a return path;
* a copied attribute (``{ $s/@id }``, ``{ $s/@* }``) must come before other content (XQTY0024) and
  name each attribute once (XQDY0025), so a wildcard copy must be the element's only attributes;
* a second ``where`` clause is FR104 (join with ``and``); ``{}`` is an empty enclosed expression;
  ``Q{uri}name`` is accepted in paths;
* as in XQuery: line ends are normalized first, namespace URIs are whitespace-collapsed, a prolog
  ``declare namespace p = ""`` undeclares ``p``, characters outside XML 1.0 are rejected (FR100), a
  number directly followed by a name is FR112, and ``$ v``, ``@ a``, ``text ( )`` are accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import TypeVar

from feedrouter.errors import ErrorDetail, Span, SubscriptionError, error
from feedrouter.lang import backward
from feedrouter.lang.ast import (
    ANY,
    MATCH_FUNCTIONS,
    STREAM_MODULE,
    XML_NAMESPACE,
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
    JoinFlwr,
    Literal,
    Not,
    Or,
    OrderSpec,
    Position,
    QName,
    RelPath,
    Return,
    SelfTest,
    Step,
    StreamBinding,
    Subscription,
    Tail,
    Temporal,
    TemporalKind,
    TextContent,
    TextTest,
    Union,
    ValueJoin,
    is_positional,
    mentions,
)
from feedrouter.lang.lexer import (
    Diagnostics,
    Lexer,
    RawName,
    Recover,
    Stop,
    Token,
    collapse_whitespace,
    invalid_character,
)
from feedrouter.lang.windows import parse_window
from feedrouter.limits import DEFAULT_MAX_SUBSCRIPTION_CHARS

XML_NS = XML_NAMESPACE
XMLNS_NS = "http://www.w3.org/2000/xmlns/"
#: The prefixes XQuery 3.1 declares in every query (a prolog may rebind all but ``xml``).
PREDECLARED = {
    "xml": XML_NS,
    "xs": "http://www.w3.org/2001/XMLSchema",
    "xsi": "http://www.w3.org/2001/XMLSchema-instance",
    "fn": "http://www.w3.org/2005/xpath-functions",
    "local": "http://www.w3.org/2005/xquery-local-functions",
    "math": "http://www.w3.org/2005/xpath-functions/math",
    "map": "http://www.w3.org/2005/xpath-functions/map",
    "array": "http://www.w3.org/2005/xpath-functions/array",
    "err": "http://www.w3.org/2005/xqt-errors",
}
#: A join's bounds: the feed names of ``fr:stream("…")`` and the value joins of one subscription.
T = TypeVar("T")

MAX_FEED_NAME = 128
MAX_VALUE_JOINS = 6  # as join.templates: a template's canonical form costs up to 6! orders (8!: 0.6 s)
COMPARISONS = {op.value: op for op in CompOp}
VALUE_COMPARISONS = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
KIND_TESTS = {
    "node", "comment", "element", "attribute", "document-node", "processing-instruction",
    "schema-element", "schema-attribute", "namespace-node",
}  # fmt: skip
COMPUTED = ("element", "attribute", "processing-instruction", "namespace")
CLAUSES = {"for", "let", "where", "order", "stable", "group", "count", "return"}
#: Predicates and element constructors nested deeper than this are refused (FR104), so that no
#: later stage (planner, printer) recurses deeper and Python's stack is never the limit.
MAX_DEPTH = 64
#: Steps, conditions and constructor items of one subscription together (FR114 past it): a 64 KiB
#: text could still hold some 30,000, and each costs NFA states and plan operators for every document.
MAX_PARTS = 2048
#: Alternatives of one ``or`` (a literal sequence counts each literal): past this many a condition
#: is refused (FR115) rather than split into that many conjunctive plans.
MAX_ALTERNATIVES = 64
#: What an order key may be wrapped in to compare as numbers.
NUMBER_CASTS = ("number", "fn:number", "xs:double")
#: The versions a version declaration may name (Saxon runs texts of each with the same meaning here).
SUPPORTED_VERSIONS = ("1.0", "3.0", "3.1")
#: Explicit forward axes written out, and the abbreviation each is (positions aside, see step()).
EXPLICIT_AXES = {"child": "/", "descendant": "//", "attribute": "@"}
SELF_AXES = ("self", "descendant-or-self")
BACKWARD_AXES = {"parent": Axis.PARENT, "ancestor": Axis.ANCESTOR, "ancestor-or-self": Axis.ANCESTOR_OR_SELF}
#: ``parent::node()`` while it is read (it becomes ``..``).
_NODE_TEST = QName("", "node()")

_SELECTS_NOTHING = (
    "this {role} path selects nothing: its 'self::' step names another element than the step before "
    "it, or tests the document node (which is no element)"
)
Where = str  # "predicate" or "where": which kind of condition is being read
#: One alternative of a path with self::/descendant-or-self:: steps: the conditions on its context
#: node (from a leading self::) and its plain steps.
Alternative = tuple[tuple[Condition, ...], tuple[Step, ...]]


def parse(
    text: str, source: str | None = None, *, max_chars: int | None = DEFAULT_MAX_SUBSCRIPTION_CHARS
) -> Subscription:
    """Parse a subscription text into its :class:`~feedrouter.lang.ast.Subscription`.

    Args:
        text: the subscription, in the XQuery subset of SUBSCRIPTIONS.md.
        source: what to call the text in messages (a subscription id).
        max_chars: longer texts are refused before they are read (FR114); ``None`` for no limit
            (tests and tools that measure the parser itself).

    Raises:
        SubscriptionError: the text is not in the subset; ``details`` lists every problem found
            (at most :data:`~feedrouter.lang.lexer.MAX_PROBLEMS` of them).
    """
    check_size(text, source, max_chars)
    return _Parser(text).subscription(source)


def check_size(text: object, source: str | None, max_chars: int | None) -> None:
    """Refuse what is not a text, or a text longer than ``max_chars``, before any work is done on it."""
    if not isinstance(text, str):
        kind = type(text).__name__
        raise error("FR100", f"a subscription must be a text (str), not {kind}", source=source)
    if max_chars is not None and len(text) > max_chars:
        message = (
            f"the subscription has {len(text)} characters, more than the limit of {max_chars} "
            "(DEFAULT_MAX_SUBSCRIPTION_CHARS); shorten it or split it into several subscriptions"
        )
        raise error("FR114", message, source=source)


class _Parser:
    def __init__(self, text: str) -> None:
        self.original = text
        # XQuery normalizes line ends before parsing, inside string literals too.
        self.text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.diag = Diagnostics(self.text)
        self.lexer = Lexer(self.text, self.diag)
        self.namespaces = dict(PREDECLARED)
        self.declared: list[tuple[str, str]] = []
        self.declared_prefixes: set[str] = set()  # the duplicate check must not rescan the prolog
        self.default_ns: str | None = None
        self.var: str | None = None
        self.join_vars: dict[str, int] = {}  # a join's variables: 0 the first binding's, 1 the second's
        self.stream_prefix = ""  # the prefix the stream module is imported under (join subscriptions)
        self.depth = 0
        self.parts = 0
        self.predicate_start = -1  # where the innermost predicate's expression starts
        self.aliases: dict[str, RelPath] = {}  # let $t := $s/title: $t stands for that path
        self.order: tuple[OrderSpec, ...] = ()
        self.order_start = -1  # where the 'order by' clause starts
        self.version = ""
        self.prefixed_constructor = False  # a constructor or its attribute uses a prefix (not xml:)
        self.wildcard_copies: list[int] = []  # offsets of { $s/@* } copies, checked at the end
        self.tok = Token("eof", "", 0, 0)

    # -- token plumbing ----------------------------------------------------------------------------

    def advance(self) -> Token:
        """Consume the current token and return it."""
        tok = self.tok
        self.tok = self.lexer.token_at(tok.end)
        return tok

    def peek(self) -> Token:
        """The token after the current one (XQuery needs two tokens to tell ``f(`` and ``a::``)."""
        return self.lexer.token_at(self.tok.end)

    def jump(self, pos: int) -> None:
        """Continue in expression mode at ``pos`` (after element content, for instance)."""
        self.tok = self.lexer.token_at(pos)

    def span(self, offset: int) -> Span:
        return self.diag.span(offset)

    def enter(self) -> None:
        """One level deeper (predicate or constructor); bounded so that Python's stack is never the limit."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            # FR104, not FR114: the golden must-fail file fixed this code before FR114 existed
            raise self.diag.fail(
                "FR104", f"nesting deeper than {MAX_DEPTH} levels is not supported", self.tok.start
            )

    def count_part(self, offset: int) -> None:
        """One more step, condition or constructor item; bounded so that compiling stays cheap."""
        self.parts += 1
        if self.parts > MAX_PARTS:
            message = (
                f"more than {MAX_PARTS} steps, conditions and constructor items in one subscription; "
                "split it into several subscriptions"
            )
            raise self.diag.fail("FR114", message, offset)

    def close(self, char: str, opener: Token, what: str) -> Token:
        """Check that the current token closes ``what`` (opened by ``opener``); it is not consumed."""
        tok = self.tok
        if tok.is_punct(char):
            return tok
        found = _operator_message(tok)
        if found:
            raise self.diag.fail("FR104", found, tok.start)
        at = f"{what} opened at {self.where_at(opener.start)}"
        if tok.kind == "eof":
            raise self.diag.fail("FR103", f"missing '{char}' to close {at}", tok.start)
        raise self.diag.fail("FR103", f"expected '{char}' to close {at}, found {tok.describe()}", tok.start)

    def skip_until(self, stop: Callable[[Token], bool]) -> None:
        """Error recovery: skip balanced tokens up to one ``stop`` accepts or an unmatched closer."""
        depth = 0
        while self.tok.kind != "eof":
            tok = self.tok
            if depth == 0 and (stop(tok) or tok.is_punct("]", ")", "}")):
                return
            depth += 1 if tok.is_punct("[", "(", "{") else -1 if tok.is_punct("]", ")", "}") else 0
            self.advance()
        raise Stop()

    def skip_call(self) -> None:
        """Skip ``name(...)`` (already reported) so that parsing can go on after it."""
        self.advance()
        self.skip_group()

    def skip_group(self) -> None:
        """Skip ``(...)`` (already reported)."""
        opener = self.advance()
        self.skip_until(lambda t: False)
        self.close(")", opener, "the argument list")
        self.advance()

    # -- subscription and prolog -------------------------------------------------------------------

    def subscription(self, source: str | None) -> Subscription:
        body: Flwr | Filter | JoinFlwr | None = None
        try:
            bad = invalid_character(self.text)
            if bad is not None:
                code = f"U+{ord(self.text[bad]):04X}"
                raise self.diag.fail("FR100", f"character {code} is not allowed in XQuery text", bad)
            self.jump(0)
            self.prolog()
            body = self.body()
            self.expect_end()
            if not self.diag.details:  # on a tree that parsed cleanly: the problems stay in text order
                for code, message, offset in backward.problems(body):
                    self.diag.add(code, message, offset)
        except (Stop, Recover):
            pass
        except RecursionError:  # a safety net: MAX_DEPTH keeps the recursion far below Python's limit
            self.diag.details.append(self.too_deep())
        if self.diag.details or body is None:
            raise self.error(source)
        return Subscription(
            body, tuple(self.declared), self.default_ns or "", self.original, self.version, self.stream_prefix
        )

    def too_deep(self) -> ErrorDetail:
        offset = self.tok.start
        span, excerpt = self.diag.span(offset), self.diag.excerpt(offset)
        return ErrorDetail("FR104", "the subscription is nested too deeply", span, excerpt)

    def error(self, source: str | None) -> SubscriptionError:
        if not self.diag.details:  # cannot happen: every Stop is raised after a diagnostic
            self.diag.add("FR100", "syntax error", self.tok.start)
        return self.diag.error(source)

    def prolog(self) -> None:
        if self.tok.is_name("xquery") and self.peek().is_name("version", "encoding"):
            self.version_declaration()
        while True:
            tok, nxt = self.tok, self.peek()
            if tok.is_name("declare") and (nxt.kind == "name" or nxt.is_punct("%")):
                self.declaration()
            elif tok.is_name("import") and nxt.is_name("module"):
                self.module_import()
            elif (
                (tok.is_name("xquery") and nxt.is_name("version", "encoding"))
                or (tok.is_name("import") and nxt.is_name("schema", "module"))
                or (tok.is_name("module") and nxt.is_name("namespace"))
            ):
                message = f"'{tok.text} {nxt.text}' is not supported; a prolog may only declare namespaces"
                self.diag.add("FR104", message, tok.start)
                self.skip_declaration()
            else:
                return

    def module_import(self) -> None:
        """``import module namespace fr = "urn:feedrouter:stream:1";``: the one module a subscription
        may import, the stream module of join subscriptions, which feedrouter ships (so no ``at``)."""
        start = self.advance()
        self.advance()
        self.expect_name("namespace", "after 'import module'")
        prefix = self.advance()
        if prefix.kind != "name" or ":" in prefix.text or "{" in prefix.text:
            raise self.diag.fail("FR100", "expected a prefix after 'import module namespace'", prefix.start)
        if not self.tok.is_punct("="):
            raise self.diag.fail("FR100", f"expected '=' after the prefix '{prefix.text}'", self.tok.start)
        self.advance()
        uri = self.uri_literal()
        if uri != STREAM_MODULE:
            message = f'only the stream module "{STREAM_MODULE}" can be imported (join subscriptions)'
            self.diag.add("FR104", message, start.start)
        elif self.stream_prefix:
            self.diag.add("FR100", "the stream module is imported twice", start.start)
        if self.tok.is_name("at"):
            message = "a module location ('at ...') is not supported: feedrouter ships the stream module"
            raise self.diag.fail("FR104", message, self.tok.start)
        if prefix.text in self.declared_prefixes or prefix.text in ("xml", "xmlns"):
            self.diag.add("FR100", f"the prefix '{prefix.text}' is declared twice", prefix.start)
        self.declared_prefixes.add(prefix.text)
        self.namespaces[prefix.text] = uri
        self.stream_prefix = prefix.text
        if not self.tok.is_punct(";"):
            raise self.diag.fail("FR100", "expected ';' after the module import", self.tok.start)
        self.advance()

    def stream_function(self, tok: Token) -> str:
        """The local name of a call of the stream module (``fr:stream``, ``fr:followed-by``), else ""."""
        raw = tok.value
        if tok.kind != "name" or not isinstance(raw, RawName) or not self.stream_prefix:
            return ""
        uri = raw.uri if raw.uri is not None else self.namespaces.get(raw.prefix) if raw.prefix else None
        return raw.local if uri == STREAM_MODULE else ""

    def version_declaration(self) -> None:
        """``xquery version "3.1";`` (optionally ``encoding "UTF-8"``): first in the text, as XQuery wants."""
        start = self.advance()
        if self.tok.is_name("version"):
            self.advance()
            tok = self.advance()
            if tok.kind != "string" or str(tok.value) not in SUPPORTED_VERSIONS:
                versions = ", ".join(f'"{v}"' for v in SUPPORTED_VERSIONS)
                raise self.diag.fail("FR104", f"the XQuery version must be one of {versions}", tok.start)
            self.version = str(tok.value)
        if self.tok.is_name("encoding"):
            self.advance()
            if self.advance().kind != "string":
                raise self.diag.fail("FR100", "expected the encoding's name in quotes", start.start)
        if not self.tok.is_punct(";"):
            raise self.diag.fail("FR100", "expected ';' after the version declaration", self.tok.start)
        self.advance()

    def skip_declaration(self) -> None:
        self.skip_until(lambda t: t.is_punct(";"))
        self.close(";", self.tok, "the declaration")
        self.advance()

    def declaration(self) -> None:
        start = self.advance()
        keyword = self.advance()
        if keyword.is_name("namespace"):
            self.namespace_declaration()
        elif keyword.is_name("default") and self.tok.is_name("element"):
            self.advance()
            self.expect_name("namespace", "after 'declare default element'")
            uri = self.uri_literal()
            if self.default_ns is not None:
                self.diag.add("FR100", "the default element namespace is declared twice", start.start)
            self.default_ns = uri
        else:
            what = f"{keyword.text} {self.tok.text}" if keyword.is_name("default") else keyword.text
            what = f"%{self.tok.text}" if keyword.is_punct("%") else what
            message = (
                f"'declare {what}' is not supported; a prolog may only have 'declare namespace p = \"uri\";'"
                " and 'declare default element namespace \"uri\";'"
            )
            self.diag.add("FR104", message, start.start)
            self.tok = keyword
            self.skip_declaration()
            return
        if not self.tok.is_punct(";"):
            raise self.diag.fail("FR100", "expected ';' after the namespace declaration", self.tok.start)
        self.advance()

    def namespace_declaration(self) -> None:
        prefix = self.advance()
        if prefix.kind != "name" or ":" in prefix.text or "{" in prefix.text:
            raise self.diag.fail("FR100", "expected a prefix after 'declare namespace'", prefix.start)
        if not self.tok.is_punct("="):
            raise self.diag.fail(
                "FR100", f"expected '=' after 'declare namespace {prefix.text}'", self.tok.start
            )
        self.advance()
        uri = self.uri_literal()
        if uri == ANY:
            message = 'the namespace URI "*" is not supported (it reads as a wildcard)'
            self.diag.add("FR100", message, prefix.start)
        if prefix.text in ("xml", "xmlns") or uri in (XML_NS, XMLNS_NS):
            self.diag.add("FR100", f"the prefix '{prefix.text}' cannot be bound to \"{uri}\"", prefix.start)
        elif prefix.text in self.declared_prefixes:
            self.diag.add("FR100", f"the prefix '{prefix.text}' is declared twice", prefix.start)
        self.declared.append((prefix.text, uri))
        self.declared_prefixes.add(prefix.text)
        if uri:
            self.namespaces[prefix.text] = uri
        else:  # XQuery 3.1: an empty URI undeclares the prefix
            self.namespaces.pop(prefix.text, None)

    def uri_literal(self) -> str:
        tok = self.tok
        if tok.kind != "string":
            raise self.diag.fail("FR100", "expected a namespace URI in quotes", tok.start)
        self.advance()
        return collapse_whitespace(str(tok.value))

    def expect_name(self, name: str, context: str) -> None:
        if not self.tok.is_name(name):
            raise self.diag.fail(
                "FR100", f"expected '{name}' {context}, found {self.tok.describe()}", self.tok.start
            )
        self.advance()

    # -- forms -------------------------------------------------------------------------------------

    def body(self) -> Flwr | Filter | JoinFlwr:
        tok = self.tok
        if tok.kind == "eof":
            raise self.diag.fail(
                "FR113",
                "empty subscription: write a filter path such as //item or a FLWR expression",
                tok.start,
            )
        if (tok.is_name("for") and self.peek().is_punct("$")) or tok.is_punct("<"):
            flwr = self.flwr() if tok.is_name("for") else self.wrapped()
            if self.wildcard_copies and self.prefixed_constructor:
                message = (
                    "an attribute wildcard copy cannot be combined with prefixed constructor names "
                    "(the copied attributes bring their own prefixes); name the attributes"
                )
                self.diag.add("FR111", message, self.wildcard_copies[0])
            return flwr
        if tok.is_punct("/", "//"):
            return Filter(self.filter_path(), self.span(tok.start))
        raise self.unexpected(tok, "a subscription (a path starting with '/' or '//', or 'for ...')", "top")

    def filter_path(self) -> AbsPath | Union:
        """A filter's path, or ``p1 | p2 | ...``: the nodes any of them selects."""
        start = self.tok
        paths = self.absolute_alternatives(self.abs_path("filter"), "filter")
        while self.tok.is_punct("|") or self.tok.is_name("union"):
            self.advance()
            paths += self.absolute_alternatives(self.abs_path("filter"), "filter")
        if not paths:
            raise self.diag.fail("FR109", _SELECTS_NOTHING.format(role="filter"), start.start)
        if len(paths) == 1:
            return paths[0]
        if any(p.tail is not None for p in paths):
            message = "a union of paths selects elements; deliver text nodes with one text() filter"
            raise self.diag.fail("FR111", message, start.start)
        if len(paths) > MAX_ALTERNATIVES:
            message = f"{len(paths)} paths in one union; at most {MAX_ALTERNATIVES} are supported"
            raise self.diag.fail("FR115", message, start.start)
        return Union(tuple(paths), self.span(start.start))

    def expect_end(self) -> None:
        tok = self.tok
        if tok.kind == "eof":
            return
        message = _operator_message(tok) or _comparison_message(tok)
        if tok.is_punct(","):
            message = "sequences (',') are not supported; write one subscription per path"
        if message:
            raise self.diag.fail("FR104", message, tok.start)
        raise self.diag.fail(
            "FR100", f"unexpected {tok.describe()} after the end of the subscription", tok.start
        )

    def flwr(self) -> Flwr | JoinFlwr:
        start = self.advance()
        self.advance()
        name = self.advance()
        if not _plain(name):
            raise self.diag.fail("FR100", "expected a variable name after '$'", name.start)
        self.before_in()
        if self.stream_function(self.tok) == "stream" and self.peek().is_punct("("):
            return self.join_flwr(start, name)
        binding = self.binding_path()
        self.var = name.text
        self.order = ()
        where = self.clauses()
        self.advance()
        ret = self.return_expr()
        return Flwr(name.text, binding, where, ret, None, self.span(start.start), self.order)

    # -- join subscriptions (issue 16) --------------------------------------------------------------

    def join_flwr(self, start: Token, first: Token) -> JoinFlwr:
        """``for $a in fr:stream()//x, $b in fr:stream("feed")//y where … return …``."""
        left = self.stream_binding(first)
        if not self.tok.is_punct(","):
            message = (
                'a join subscription binds two streams: for $a in fr:stream()//x, $b in fr:stream("feed")//y'
            )
            raise self.diag.fail("FR104", message, self.tok.start)
        self.advance()
        if not self.tok.is_punct("$"):
            raise self.diag.fail("FR100", "expected the second variable after ','", self.tok.start)
        self.advance()
        second = self.advance()
        if not _plain(second):
            raise self.diag.fail("FR100", "expected a variable name after '$'", second.start)
        if second.text == first.text:
            raise self.diag.fail("FR106", f"the variable '${second.text}' is bound twice", second.start)
        self.before_in()
        if self.stream_function(self.tok) != "stream":
            message = (
                f'the second binding of a join reads a stream too: ${second.text} in fr:stream("feed")//y'
            )
            raise self.diag.fail("FR104", message, self.tok.start)
        right = self.stream_binding(second)
        self.var, self.join_vars = first.text, {first.text: 0, second.text: 1}
        where = self.clauses()
        if self.order:
            message = "a join subscription cannot order its pairs ('order by')"
            raise self.diag.fail("FR104", message, self.order_start)
        self.advance()
        ret = self.return_expr()
        return self.joined(start, left, right, where, ret)

    def stream_binding(self, name: Token) -> StreamBinding:
        """``fr:stream()//book[@lang = "en"]`` or ``fr:stream("blogs")//item`` after ``$v in``."""
        call = self.advance()
        if not self.tok.is_punct("("):
            # the caller checked the name only; taking any token for the '(' read fr:stream+'x') as a call
            message = f"expected '(' after '{call.text}': a stream binding calls it, fr:stream(\"feed\")//y"
            raise self.diag.fail("FR100", message, self.tok.start)
        opener = self.advance()
        feed = ""
        if self.tok.kind == "string":
            feed = str(self.advance().value)
            if not feed or len(feed) > MAX_FEED_NAME or not feed.isprintable():
                message = f"a feed name is 1 to {MAX_FEED_NAME} printable characters"
                raise self.diag.fail("FR112", message, call.start)
        self.close(")", opener, "the argument list of stream()")
        self.advance()
        if not self.tok.is_punct("/", "//"):
            message = "a stream binding goes on with a path from its documents: fr:stream()//item"
            raise self.diag.fail("FR100", message, self.tok.start)
        path = self.binding_path()
        return StreamBinding(name.text, feed, path, (), self.span(name.start))

    def temporal(self, tok: Token) -> Temporal:
        """``fr:followed-by($a, $b, "PT6H")`` or ``fr:within($a, $b, "PT1H")``."""
        name = self.stream_function(tok)
        if name not in ("followed-by", "within"):
            message = f"'{tok.text}' is not a condition; use fr:followed-by or fr:within"
            raise self.diag.recover("FR108", message, tok.start)
        self.advance()
        opener = self.advance()
        variables = []
        for _ in range(2):
            at = self.tok.start
            path = self.var_path("where")
            if path.steps or path.tail is not None:
                message = f"{tok.text}() takes the two variables themselves, not paths from them"
                self.diag.add("FR104", message, at)  # the call is read on: its other problems, not its tail's
            variables.append(path.var)
            if not self.tok.is_punct(","):
                message = f"expected ',' in the arguments of {tok.text}()"
                raise self.diag.recover("FR100", message, self.tok.start)
            self.advance()
        window = self.tok
        if window.kind != "string":
            message = f'the window of {tok.text}() is a duration in quotes, such as "PT6H"'
            raise self.diag.recover("FR112", message, window.start)
        self.advance()
        try:
            parse_window(str(window.value))
        except ValueError as exc:
            self.diag.add("FR112", str(exc), window.start)
        self.close(")", opener, f"the argument list of {tok.text}()")
        self.advance()
        if variables[0] == variables[1]:
            raise self.diag.recover("FR104", f"{tok.text}() relates the two variables of the join", tok.start)
        kind = TemporalKind(name)
        return Temporal(kind, variables[0], variables[1], str(window.value), self.span(tok.start))

    def joined(
        self,
        start: Token,
        left: StreamBinding,
        right: StreamBinding,
        where: tuple[Condition, ...],
        ret: Return,
    ) -> JoinFlwr:
        """The where clause's terms sorted out: value joins, the temporal term, each side's own."""
        joins: list[ValueJoin] = []
        temporal: list[Temporal] = []
        sides: tuple[list[Condition], list[Condition]] = ([], [])
        for term in _join_terms(where):
            if isinstance(term, ValueJoin):
                joins.append(term)
            elif isinstance(term, Temporal):
                temporal.append(term)
            else:
                self.local_condition(term, sides)
        offset = start.start
        if self.diag.details:  # a term was refused: what is missing may be that term
            raise Stop()
        if not temporal or len(temporal) > 1:
            message = (
                "a join subscription has exactly one fr:followed-by or fr:within term in its where clause"
            )
            at = temporal[1].span.offset if len(temporal) > 1 and temporal[1].span else offset
            raise self.diag.fail("FR104", message, at)
        if not joins:
            message = "a join subscription compares at least one value of each side: $b/author = $a/author"
            raise self.diag.fail("FR104", message, offset)
        if len(joins) > MAX_VALUE_JOINS:
            extra = joins[MAX_VALUE_JOINS].span
            message = f"at most {MAX_VALUE_JOINS} value joins are supported"
            raise self.diag.fail("FR115", message, extra.offset if extra else offset)
        left = replace(left, where=tuple(sides[0]))
        right = replace(right, where=tuple(sides[1]))
        return JoinFlwr(left, right, tuple(joins), temporal[0], ret, self.span(start.start))

    def local_condition(self, term: Condition, sides: tuple[list[Condition], list[Condition]]) -> None:
        """A where term that reads one variable goes to that side's block; join terms stand alone."""
        if mentions(term, _Reported):  # what it reads is unknown: any problem found would be an echo
            return
        if mentions(term, ValueJoin) or mentions(term, Temporal):
            message = "value joins and the temporal term are where-clause terms of their own, joined by 'and'"
            self.diag.add("FR104", message, term.span.offset if term.span else 0)
            return
        used = {self.join_vars[v] for v in _variables(term) if v in self.join_vars}
        if len(used) > 1:
            message = "a condition reads one variable; relate the two with '=' value joins"
            self.diag.add("FR104", message, term.span.offset if term.span else 0)
            return
        if not used:  # XQuery: an absolute path has no context item in a join (XPDY0002)
            names = " or ".join(f"${v}" for v in self.join_vars)
            message = (
                f"a condition of a join reads {names} (a path from one of them); an absolute path has no "
                "context here"
            )
            self.diag.add("FR104", message, term.span.offset if term.span else 0)
            return
        sides[used.pop()].append(term)

    def binding_path(self) -> AbsPath:
        path = self.abs_path("binding")
        found = self.absolute_alternatives(path, "binding")
        if len(found) > 1:
            message = (
                "'descendant-or-self::' in a for binding would bind a union of paths; write '//', or "
                "use a filter subscription"
            )
            raise self.diag.fail("FR109", message, path.span.offset if path.span else 0)
        return found[0]

    def before_in(self) -> None:
        tok = self.tok
        if tok.is_name("at"):
            raise self.diag.fail("FR104", "positional variables ('at $i') are not supported", tok.start)
        if tok.is_name("as"):
            raise self.diag.fail("FR104", "type declarations ('as ...') are not supported", tok.start)
        if tok.is_name("allowing"):
            raise self.diag.fail("FR104", "'allowing empty' is not supported", tok.start)
        if tok.kind == "eof":
            raise self.diag.fail("FR101", "unexpected end of text: expected 'in'", tok.start)
        if not tok.is_name("in"):
            raise self.diag.fail(
                "FR100", f"expected 'in' after the variable, found {tok.describe()}", tok.start
            )
        self.advance()

    def clauses(self) -> tuple[Condition, ...]:
        """The clauses between the binding and ``return``: at most one ``where``."""
        where: list[Condition] = []
        seen = False
        last = "for"  # the clause before: a ',' continues a for or let clause, and no other
        while not self.tok.is_name("return"):
            tok = self.tok
            if tok.is_name("let") and self.peek().is_punct("$"):
                if seen:
                    self.diag.add("FR104", "a let clause must come before 'where'", tok.start)
                self.let_clause()
                last = "let"
                continue
            if (tok.is_name("order") and self.peek().is_name("by")) or (
                tok.is_name("stable") and self.peek().is_name("order")
            ):
                self.order_clause()
                last = "order"
                continue
            if self.order:
                raise self.unexpected(tok, "'return' after 'order by'", "clause")
            if tok.is_name("where"):
                if seen:
                    self.diag.add(
                        "FR104", "only one 'where' clause is supported; join conditions with 'and'", tok.start
                    )
                seen = True
                self.advance()
                where.extend(self.conditions("where"))
                last = "where"
                continue
            if tok.is_punct(",") and last == "where":  # XQuery's where takes one ExprSingle
                one = "a where clause holds one condition: join its terms with 'and', not ','"
                raise self.diag.fail("FR100", one, tok.start)
            message = _clause_message(tok, self.peek())
            if tok.is_punct(",") and last == "for" and self.join_vars:
                message = "a join subscription binds two streams; a third binding is not supported"
            if message is None:
                raise self.unexpected(tok, "'where' or 'return'", "clause")
            self.diag.add("FR104", message, tok.start)
            if self.advance().is_name("stable"):
                self.advance()
            self.skip_until(lambda t: t.is_name(*CLAUSES) or t.is_punct(","))
        return tuple(where)

    def order_clause(self) -> None:
        """``[stable] order by key [ascending|descending] [empty greatest|least], ...``."""
        if self.order:
            message = "only one 'order by' clause is supported; list the keys in it"
            self.diag.add("FR104", message, self.tok.start)
        else:
            self.order_start = self.tok.start
        if self.tok.is_name("stable"):
            self.advance()
        self.advance()
        self.advance()
        keys = [self.order_key()]
        while self.tok.is_punct(","):
            self.advance()
            keys.append(self.order_key())
        self.order = tuple(keys)

    def order_key(self) -> OrderSpec:
        tok = self.tok
        numeric = tok.text in NUMBER_CASTS and tok.kind == "name" and self.peek().is_punct("(")
        if numeric:
            self.advance()
            opener = self.advance()
            path = self.var_path("order")
            self.close(")", opener, f"the argument list of {tok.text}()")
            self.advance()
        else:
            path = self.var_path("order")
        descending = False
        if self.tok.is_name("ascending", "descending"):
            descending = self.advance().text == "descending"
        empty_greatest = False
        if self.tok.is_name("empty"):
            self.advance()
            if not self.tok.is_name("greatest", "least"):
                raise self.diag.fail("FR100", "expected 'greatest' or 'least' after 'empty'", self.tok.start)
            empty_greatest = self.advance().text == "greatest"
        if self.tok.is_name("collation"):
            message = "collations are not supported; keys compare by codepoint"
            raise self.diag.fail("FR104", message, self.tok.start)
        return OrderSpec(path, descending, empty_greatest, numeric)

    def wrapped(self) -> Flwr:
        """``<w>{ for ... }</w>``: a FLWR inside one constant element."""
        lt = self.tok.start
        ctor, end, offsets = self.constructor(lt, self.wrapper_body)
        # wrapper_body puts the FLWR where a constructor's content has its enclosed expressions
        items: tuple[object, ...] = ctor.content
        if len(items) == 1 and isinstance(items[0], JoinFlwr):
            message = (
                "a join subscription delivers each pair on its own; write it without the element around it"
            )
            raise self.diag.fail("FR104", message, lt)
        if len(items) == 1 and isinstance(items[0], Flwr):
            if any(a.constant is None for a in ctor.attributes):
                message = "the attributes of the element around a subscription must be constant"
                raise self.diag.fail("FR104", message, lt)
            self.jump(end)
            return replace(items[0], wrapper=replace(ctor, content=()), span=self.span(lt))
        offset = next((o for o, i in zip(offsets, items, strict=True) if not isinstance(i, Flwr)), lt)
        if len(items) > 1 and all(isinstance(i, Flwr) for i in items):
            offset = offsets[1]
        message = "the element around a subscription may contain only one FLWR in braces: <w>{ for ... }</w>"
        raise self.diag.fail("FR104", message, offset)

    def wrapper_body(self, brace: int) -> tuple[Flwr | JoinFlwr, int]:
        self.jump(brace + 1)
        opener, tok = Token("punct", "{", brace, brace + 1), self.tok
        if not (tok.is_name("for") and self.peek().is_punct("$")):
            if tok.is_punct("/", "//"):
                message = "a filter path cannot be wrapped in an element; write the path alone"
                raise self.diag.fail("FR104", message, tok.start)
            raise self.unexpected(tok, "a FLWR expression ('for $v in ...')", "wrapper")
        flwr = self.flwr()
        return flwr, self.close("}", opener, "the enclosed expression").end

    # -- paths -------------------------------------------------------------------------------------

    def abs_path(self, role: str) -> AbsPath:
        """A binding or filter path: ``/`` or ``//`` steps from the document node, elements only."""
        start = self.tok
        if not start.is_punct("/", "//"):
            raise self.unexpected(start, "an absolute path starting with '/' or '//'", role)
        steps: list[Step] = []
        while self.tok.is_punct("/", "//"):
            axis_tok = self.advance()
            at = self.tok.start
            item = self.step(Axis(axis_tok.text), lone_slash=not steps and axis_tok.text == "/")
            if isinstance(item, Step):
                steps.append(item)
                continue
            if isinstance(item, TextTest) and role == "filter" and steps:
                self.no_more_steps(item)
                return AbsPath(tuple(steps), self.span(start.start), item)
            what = "attributes" if isinstance(item, AttributeTest) else "text nodes"
            self.diag.add("FR111", f"a {role} path must select elements, not {what}", at)
        return AbsPath(tuple(steps), self.span(start.start))

    def rel_steps(self) -> tuple[tuple[Step, ...], Tail | None]:
        """``/a//b/@c`` after a context (``.``, ``$v`` or a first step): steps and an optional tail."""
        steps: list[Step] = []
        while self.tok.is_punct("/", "//"):
            axis = Axis(self.advance().text)
            item = self.step(axis)
            if isinstance(item, Step):
                steps.append(item)
                continue
            self.no_more_steps(item)
            return tuple(steps), item
        return tuple(steps), None

    def no_more_steps(self, tail: Tail) -> None:
        tok = self.tok
        what = "an attribute" if isinstance(tail, AttributeTest) else "text()"
        if tok.is_punct("/", "//"):
            raise self.diag.recover("FR104", f"{what} can only be the last step of a path", tok.start)
        if tok.is_punct("["):
            message = f"predicates on {what} are not supported; compare it directly, e.g. [@a = 1]"
            raise self.diag.recover("FR104", message, tok.start)

    def step(self, axis: Axis, lone_slash: bool = False, explicit: bool = False) -> Step | Tail:
        """One step after ``/`` or ``//`` (or the first step of a relative path, on the child axis)."""
        tok, nxt = self.tok, self.peek()
        self.count_part(tok.start)
        if tok.kind == "name" and nxt.is_punct("::") and tok.text in SELF_AXES and not explicit:
            return self.self_step(axis, tok)
        if (tok.kind == "name" and nxt.is_punct("::") and tok.text in BACKWARD_AXES) or tok.is_punct(".."):
            return self.backward_step(axis, tok)
        if tok.kind == "name" and nxt.is_punct("::") and tok.text in EXPLICIT_AXES and not explicit:
            return self.explicit_step(axis, tok)
        if tok.is_punct("@") and not explicit:
            return self.attribute_step(axis)
        if tok.is_name("text") and nxt.is_punct("("):
            return self.text_step(axis)
        if self.unsupported_step(tok, nxt):
            return Step(axis, None, self.predicates(), self.span(tok.start))
        if tok.is_punct("*"):
            name = None
        elif tok.kind == "wildcard":
            name = self.wildcard_name(tok)
        elif tok.kind == "name":
            name = self.resolve(tok, element=True)
        elif lone_slash:
            message = "'/' alone (the document node) is not supported; select elements, e.g. '/*'"
            raise self.diag.fail("FR104", message, tok.start)
        elif tok.kind == "eof":
            raise self.diag.fail(
                "FR101", f"unexpected end of text: expected a step after '{axis.value}'", tok.start
            )
        else:
            found = f"expected a name, '*', '@' or 'text()' after '{axis.value}', found {tok.describe()}"
            raise self.diag.fail("FR100", found, tok.start)
        self.advance()
        return Step(axis, name, self.predicates(), self.span(tok.start))

    def explicit_step(self, axis: Axis, tok: Token) -> Step | Tail:
        """``child::a``, ``descendant::a``, ``attribute::a`` written out: the abbreviated step they are.
        Positions differ for ``descendant::`` (they count all descendants of the context node, where
        ``//a[1]`` counts each parent's children), so a positional predicate there is refused."""
        written = EXPLICIT_AXES[tok.text]
        self.advance()
        self.advance()
        if written == "@":
            return self.attribute_name(axis, tok)
        if self.tok.is_punct("@"):
            raise self.diag.fail("FR100", f"expected a name test after '{tok.text}::'", self.tok.start)
        found = self.step(Axis.DESCENDANT if written == "//" else axis, explicit=True)
        if written == "//" and isinstance(found, Step) and any(is_positional(p) for p in found.predicates):
            message = (
                "positions on 'descendant::' count all descendants of the context node; "
                "write '//a[1]' for the first a child of each parent"
            )
            raise self.diag.fail("FR107", message, tok.start)
        return found

    def self_step(self, axis: Axis, tok: Token) -> _AxisStep:
        """``self::a`` or ``descendant-or-self::a`` (after ``//``, ``self::`` is ``descendant-or-self::``
        too): kept as an :class:`_AxisStep` until the path is complete, then rewritten
        (:meth:`alternatives_of`). Positions on these axes are refused (FR107): on ``self::`` they are
        always 1, on ``descendant-or-self::`` they count a different sequence than ``//a[1]``."""
        self.advance()
        self.advance()
        name_tok = self.tok
        if name_tok.is_punct("*"):
            name = None
        elif name_tok.kind == "wildcard":
            name = self.wildcard_name(name_tok)
        elif name_tok.kind == "name" and not self.peek().is_punct("(", "::"):
            name = self.resolve(name_tok, element=True)
        else:
            found = f"expected an element name test after '{tok.text}::', found {name_tok.describe()}"
            raise self.diag.fail("FR100", found, name_tok.start)
        self.advance()
        predicates = self.predicates()
        if any(is_positional(p) for p in predicates):
            message = f"positions on '{tok.text}::' are not supported; put the position on the step before"
            raise self.diag.fail("FR107", message, tok.start)
        descendants = tok.text == "descendant-or-self" or axis is Axis.DESCENDANT
        return _AxisStep(axis, name, predicates, self.span(tok.start), descendants)

    def backward_step(self, axis: Axis, tok: Token) -> Step:
        """``..``, ``parent::a``, ``ancestor::*``, ``ancestor-or-self::p:*`` with predicates (issue 15).
        Positions on these reverse axes count backwards and are refused (FR107), as is a backward
        step right after ``//`` (``a//..`` is every node below ``a`` that has children)."""
        if axis is Axis.DESCENDANT:
            written = ".." if tok.is_punct("..") else f"{tok.text}::"
            message = f"'//{written}' is not supported; write the backward step after '/'"
            raise self.diag.fail("FR109", message, tok.start)
        self.advance()
        if tok.is_punct(".."):
            backward, name = Axis.PARENT_NODE, None
        else:
            self.advance()
            backward = BACKWARD_AXES[tok.text]
            name = self.backward_name_test(tok)
            if name is _NODE_TEST:
                if backward is not Axis.PARENT:
                    message = f"'{tok.text}::node()' is not supported; write '{tok.text}::*' for elements"
                    raise self.diag.fail("FR109", message, tok.start)
                backward, name = Axis.PARENT_NODE, None
        predicates = self.predicates()  # positions: where they may stand is lang.backward's check
        return Step(backward, None if name is _NODE_TEST else name, predicates, self.span(tok.start))

    def backward_name_test(self, axis_tok: Token) -> QName | None:
        """The name test after ``parent::``, ``ancestor::``...: a name, ``*``, a wildcard, or
        ``node()`` (``_NODE_TEST``, for ``parent::node()``, which is ``..``)."""
        tok = self.tok
        if tok.is_name("node") and self.peek().is_punct("("):
            self.advance()
            opener = self.advance()
            self.close(")", opener, "'node('")
            self.advance()
            return _NODE_TEST
        if tok.is_punct("*"):
            self.advance()
            return None
        if tok.kind == "wildcard":
            self.advance()
            return self.wildcard_name(tok)
        if tok.kind == "name" and not self.peek().is_punct("(", "::"):
            self.advance()
            return self.resolve(tok, element=True)
        found = f"expected an element name test after '{axis_tok.text}::', found {tok.describe()}"
        raise self.diag.fail("FR100", found, tok.start)

    def alternatives_of(self, steps: tuple[Step, ...], at: int) -> list[Alternative]:
        """A path's ``self::``/``descendant-or-self::`` steps rewritten: the alternatives (their union
        is the path's nodes), each as the conditions its context node must pass (a leading ``self::``)
        and plain steps. ``x/self::a[p]`` narrows ``x`` (``x[self::a][p]``); ``x/descendant-or-self::a``
        is ``x/self::a`` or ``x//a``. Alternatives that can never select a node are left out."""
        found: list[Alternative] = [((), ())]
        for step in steps:
            if not isinstance(step, _AxisStep):
                found = [(guards, (*done, step)) for guards, done in found]
                continue
            grown: list[Alternative] = []
            for guards, done in found:
                if not done:  # the context node: an element, so self::* holds
                    test = () if step.name is None else (SelfTest(step.name, step.span),)
                    grown.append(((*guards, *test, *step.predicates), done))
                elif (narrowed := _narrowed(done[-1], step)) is not None:
                    grown.append((guards, (*done[:-1], narrowed)))
                if step.descendants:
                    below = Step(Axis.DESCENDANT, step.name, step.predicates, step.span)
                    grown.append((guards, (*done, below)))
            found = grown
            if len(found) > MAX_ALTERNATIVES:
                message = f"more than {MAX_ALTERNATIVES} alternatives from a path's descendant-or-self::"
                raise self.diag.fail("FR115", message, at)
        return found

    def plain_path(self, path: RelPath, role: str) -> RelPath:
        """A path that must stay one path (a return, order, let or argument path): its ``self::``
        steps folded into the steps before; a leading one or ``descendant-or-self::`` is refused."""
        if not any(isinstance(s, _AxisStep) for s in path.steps):
            return path
        at = path.span.offset if path.span is not None else 0
        found = self.alternatives_of(path.steps, at)
        if len(found) != 1 or found[0][0]:
            message = (
                f"'self::a' at the start of a path, or 'descendant-or-self::' in one, is not supported in "
                f"a {role} path; write the test as a condition (a predicate or the where clause), or '//'"
            )
            raise self.diag.fail("FR109", message, at)
        return RelPath(found[0][1], path.tail, path.span, path.var)

    def absolute_alternatives(self, path: AbsPath, role: str) -> list[AbsPath]:
        """An absolute path's alternatives (see :meth:`alternatives_of`); a leading ``self::`` tests the
        document node, which is no element, so those alternatives select nothing and are dropped."""
        if not any(isinstance(s, _AxisStep) for s in path.steps):
            return [path]
        at = path.span.offset if path.span is not None else 0
        alternatives = self.alternatives_of(path.steps, at)
        found = [AbsPath(steps, path.span, path.tail) for tests, steps in alternatives if not tests and steps]
        if not found and role != "filter":  # a union's other paths may select something
            raise self.diag.fail("FR109", _SELECTS_NOTHING.format(role=role), at)
        return found

    def expand_axes(self, condition: Condition) -> Condition:
        """A condition with its paths' ``self::``/``descendant-or-self::`` steps rewritten: a path's
        alternatives become an ``or`` (exact for existence and general comparisons, which are
        existential), a leading ``self::`` a :class:`SelfTest` on the context node."""
        if isinstance(condition, (And, Or)):
            return replace(condition, terms=tuple(self.expand_axes(t) for t in condition.terms))
        if isinstance(condition, Not):
            return replace(condition, operand=self.expand_axes(condition.operand))
        if isinstance(condition, (BooleanCall, CallComparison)):
            return replace(condition, call=self.plain_call(condition.call))
        if not isinstance(condition, (Comparison, Exists)) or not any(
            isinstance(s, _AxisStep) for s in condition.path.steps
        ):
            return condition
        path = condition.path
        at = path.span.offset if path.span is not None else 0
        terms: list[Condition] = []
        for tests, steps in self.alternatives_of(path.steps, at):
            guards = _with_var(tests, path.var) if path.var else tests  # a join's: they test $b's node
            if not steps and path.tail is None and isinstance(condition, Exists) and guards:
                parts = guards  # '.' always exists
            else:
                parts = (*guards, replace(condition, path=RelPath(steps, path.tail, path.span, path.var)))
            terms.append(parts[0] if len(parts) == 1 else And(parts, condition.span))
        if len(terms) == 1:
            return terms[0]
        never = Not(Exists(RelPath((), None, None, path.var)), condition.span)
        return Or(tuple(terms), condition.span) if terms else never

    def plain_call(self, call: Call) -> Call:
        arg = call.arg
        if isinstance(arg, Call):
            return replace(call, arg=self.plain_call(arg))
        if isinstance(arg, AbsPath):
            found = self.absolute_alternatives(arg, "argument")
            if len(found) > 1:
                at = arg.span.offset if arg.span is not None else 0
                raise self.diag.fail(
                    "FR109", "'descendant-or-self::' is not supported in a function argument; write '//'", at
                )
            return replace(call, arg=found[0])
        return replace(call, arg=self.plain_path(arg, "function argument"))

    def unsupported_step(self, tok: Token, nxt: Token) -> bool:
        """Report a step outside the subset and skip it (True), so that parsing goes on."""
        found = _construct_message(tok, nxt)
        if found is not None:
            self.diag.add(*found, tok.start)
            if tok.is_punct("("):
                self.skip_group()
            elif nxt.is_punct("("):
                self.skip_call()
            elif nxt.is_punct("::"):
                self.advance()
                self.advance()
                if self.tok.kind == "name" or self.tok.is_punct("*", "."):
                    self.advance()
            else:
                self.advance()
            return True

        if tok.is_punct("."):
            self.diag.add("FR104", "'.' is only allowed at the start of a relative path", tok.start)
            self.advance()
            return True
        return False

    def wildcard_name(self, tok: Token) -> QName:
        """``*:local`` (any namespace) or ``prefix:*`` (any name in the prefix's namespace)."""
        text = tok.text
        if text.startswith("*:"):
            return QName(ANY, text[2:])
        if isinstance(tok.value, RawName) and tok.value.uri is not None:
            return QName(tok.value.uri, ANY)  # Q{uri}*, Q{}* (any element in no namespace)
        prefix = text[:-2]
        uri = self.namespaces.get(prefix)
        if uri is None:
            message = f"unknown namespace prefix '{prefix}'; declare it in the prolog"
            self.diag.add("FR105", message, tok.start)
            return QName(ANY, ANY)
        return QName(uri, ANY, prefix)

    def attribute_step(self, axis: Axis) -> AttributeTest:
        return self.attribute_name(axis, self.advance())

    def attribute_name(self, axis: Axis, at: Token) -> AttributeTest:
        """The name after ``@`` (or ``attribute::``, which ``at`` is then)."""
        tok = self.tok
        if axis is Axis.DESCENDANT:
            a = f"@{tok.text}" if tok.kind == "name" else "@a"
            message = (
                f"'//{a}' is not supported (it reaches the attributes of the node itself and of all its "
                f"descendants); write '/{a}' for the node's own attributes or '//*/{a}' for those of its "
                "descendant elements"
            )
            self.diag.add("FR104", message, at.start)
        if tok.is_punct("*"):
            self.advance()
            return AttributeTest(QName(ANY, ANY))
        if tok.kind == "wildcard":
            self.advance()
            return AttributeTest(self.wildcard_name(tok))  # '@*:id' also selects 'id'
        if tok.kind != "name":
            raise self.diag.fail(
                "FR100", f"expected an attribute name after '@', found {tok.describe()}", tok.start
            )
        if self.peek().is_punct("(", "::"):
            raise self.diag.fail("FR104", f"'@{tok.text}{self.peek().text}' is not supported", tok.start)
        self.advance()
        return AttributeTest(self.resolve(tok, element=False))

    def text_step(self, axis: Axis) -> TextTest:
        tok = self.advance()
        opener = self.advance()
        self.close(")", opener, "'text('")
        self.advance()
        if axis is Axis.DESCENDANT:
            message = (
                "'//text()' is not supported (it selects every text node below); write '/text()' for the "
                "node's own text, or compare the node itself ('.') for its whole string value"
            )
            self.diag.add("FR104", message, tok.start)
        return TextTest()

    def predicates(self) -> tuple[Condition, ...]:
        found: list[Condition] = []
        while self.tok.is_punct("["):
            found.extend(self.predicate())
        return tuple(found)

    def predicate(self) -> tuple[Condition, ...]:
        opener = self.advance()
        self.enter()
        try:
            if self.tok.is_punct("]"):
                self.diag.add("FR100", "empty predicate '[]'", opener.start)
                conditions: tuple[Condition, ...] = ()
            else:
                outer, self.predicate_start = self.predicate_start, self.tok.start
                try:
                    conditions = self.conditions("predicate")
                finally:
                    self.predicate_start = outer
            self.close("]", opener, "the predicate")
            self.advance()
        finally:
            self.depth -= 1
        return conditions

    def rel_path(self) -> RelPath:
        """A predicate's path: ``.``, ``@a``, ``text()``, ``a/b/@c``, ``.//x``, ``./x[...]``."""
        tok = self.tok
        if tok.is_punct("."):
            self.advance()
            if self.tok.is_punct("["):
                raise self.diag.recover("FR104", "predicates on '.' are not supported", self.tok.start)
            steps, tail = self.rel_steps()
            return RelPath(steps, tail, self.span(tok.start))
        if tok.is_punct("/", "//"):
            message = (
                "absolute paths are not supported in predicates; use a relative path such as 'a/b' or './/b'"
            )
            raise self.diag.recover("FR104", message, tok.start)
        if tok.is_punct("$"):
            raise self.variable_in_predicate(tok)
        if not (tok.kind in ("name", "wildcard") or tok.is_punct("*", "@", "..")):
            raise self.unexpected(tok, "a path or a literal", "predicate")
        first = self.step(Axis.CHILD)
        if not isinstance(first, Step):
            self.no_more_steps(first)
            return RelPath((), first, self.span(tok.start))
        steps, tail = self.rel_steps()
        return RelPath((first, *steps), tail, self.span(tok.start))

    def variable_in_predicate(self, tok: Token) -> Recover:
        name = self.peek()
        if self.var is not None and name.text == self.var:
            message = (
                f"variables are not supported in predicates; use '.' for the context node, not '${self.var}'"
            )
            return self.diag.recover("FR104", message, tok.start)
        return self.diag.recover("FR106", f"unknown variable '${name.text}'", tok.start)

    def var_path(self, role: str) -> RelPath:
        """``$v``, ``$v/a/b``, ``$v//c/@d``: a path from the bound variable."""
        tok = self.tok
        if not tok.is_punct("$"):
            raise self.unexpected(tok, f"a path from ${self.var}", role)
        self.advance()
        name = self.advance()
        if not _plain(name):
            raise self.diag.fail("FR100", "expected a variable name after '$'", name.start)
        alias = self.aliases.get(name.text)
        if name.text != self.var and alias is None and name.text not in self.join_vars:
            if self.var is None:
                message = f"unknown variable '${name.text}': no variable is bound here (outside the FLWR)"
            else:
                known = ", ".join(f"${v}" for v in [*(self.join_vars or [self.var]), *self.aliases])
                message = f"unknown variable '${name.text}'; the variables are {known}"
            self.diag.add("FR106", message, tok.start)
        if self.tok.is_punct("["):
            message = "predicates on the variable are not supported; put the condition in the where clause"
            raise self.diag.recover("FR104", message, self.tok.start)
        steps, tail = self.rel_steps()
        if alias is None:
            path = RelPath(steps, tail, self.span(tok.start), name.text if self.join_vars else "")
        elif alias.tail is not None and (steps or tail is not None):
            message = f"'${name.text}' holds attributes or text: no steps below it"
            raise self.diag.recover("FR104", message, tok.start)
        else:
            path = RelPath(
                alias.steps + steps,
                tail if alias.tail is None else alias.tail,
                self.span(tok.start),
                alias.var,
            )
        # a where path is part of a condition, whose self:: steps expand_axes rewrites
        return path if role == "where" else self.plain_path(path, role)

    def let_clause(self) -> None:
        """``let $t := $s/title``: an alias of a path from the bound variable (or an earlier alias),
        substituted where it is used, which gives the same nodes as XQuery's binding of the sequence.
        ``let $x := ..., $y := ...`` is XQuery's spelling of two let clauses."""
        after = self.advance()
        self.let_binding(after)
        while self.tok.is_punct(","):
            self.let_binding(self.advance())

    def let_binding(self, after: Token) -> None:
        dollar = self.tok
        if not dollar.is_punct("$"):
            raise self.diag.fail("FR100", f"expected a variable after '{after.text}'", dollar.start)
        self.advance()
        name = self.advance()
        if not _plain(name):
            raise self.diag.fail("FR100", "expected a variable name after '$'", name.start)
        bound = name.text == self.var or name.text in self.aliases or name.text in self.join_vars
        if bound:
            message = f"'${name.text}' is already bound; give the let variable another name"
            self.diag.add("FR104", message, dollar.start)
        if not self.tok.is_punct(":="):
            raise self.diag.fail("FR100", f"expected ':=' after 'let ${name.text}'", self.tok.start)
        self.advance()
        if not self.tok.is_punct("$"):
            message = f"a let clause may only name a path from ${self.var}, e.g. let $t := ${self.var}/title"
            raise self.diag.fail("FR104", message, self.tok.start)
        path = self.var_path("let")
        if not bound:  # the name keeps its first meaning: problems of other terms are not its echoes
            self.aliases[name.text] = path

    # -- conditions --------------------------------------------------------------------------------

    def conditions(self, where: Where) -> tuple[Condition, ...]:
        """A predicate's or where clause's expression, as its top-level ``and`` terms.

        In a predicate, positional terms move to the front (several together as one ``And``): every
        term of one predicate sees the same context position, so ``[@x and position() <= 3]`` is
        ``[position() <= 3][@x]``, and the step's predicates can be read as a sequence of filters.
        """
        found = self.or_condition(where)
        terms = found.terms if isinstance(found, And) else (found,)
        if where != "predicate":
            return terms
        positional = tuple(t for t in terms if is_positional(t))
        rest = tuple(t for t in terms if not is_positional(t))
        if len(positional) > 1:
            return (And(positional, positional[0].span), *rest)
        return positional + rest

    def or_condition(self, where: Where) -> Condition:
        start = self.tok
        terms = [self.and_condition(where)]
        while self.tok.is_name("or"):
            self.advance()
            terms.append(self.and_condition(where))
        if len(terms) == 1:
            return terms[0]
        return self.alternatives(_flattened(terms, Or), start)

    def alternatives(self, terms: tuple[Condition, ...], start: Token) -> Or:
        if len(terms) > MAX_ALTERNATIVES:
            message = (
                f"{len(terms)} alternatives in one condition; at most {MAX_ALTERNATIVES} are supported "
                "(split the subscription, or test a shared value, e.g. with contains())"
            )
            raise self.diag.fail("FR115", message, start.start)
        return Or(terms, self.span(start.start))

    def and_condition(self, where: Where) -> Condition:
        """Conditions joined by ``and``; a bad one is reported and skipped up to the next ``and``/``or``."""
        start = self.tok
        terms: list[Condition] = []
        while True:
            try:
                terms.append(self.expand_axes(self.condition(where)))
            except Recover:
                self.skip_until(lambda t: t.is_name("and", "or", "return", "order", "stable"))
            if not self.tok.is_name("and"):
                break
            self.advance()
        if not terms:  # every term was reported; the subscription fails, the tree is never used
            return _Reported(RelPath(), self.span(start.start))
        return terms[0] if len(terms) == 1 else And(_flattened(terms, And), self.span(start.start))

    def condition(self, where: Where) -> Condition:
        start = self.tok
        self.count_part(start.start)
        nxt = self.peek()
        if start.is_punct("(") and not (nxt.kind in ("string", "number") or nxt.is_punct("-", "+", ")")):
            return self.parenthesized(where)
        if nxt.is_punct("(") and start.kind == "name":
            special = self.boolean_call(start, where)
            if special is not None:
                return special
        left = self.operand(where)
        tok = self.tok
        op = COMPARISONS.get(tok.text) if tok.kind == "punct" else None
        if op is None and tok.is_name(*VALUE_COMPARISONS):
            general = VALUE_COMPARISONS[tok.text]
            message = (
                f"the value comparison '{tok.text}' is not supported; use the general comparison '{general}'"
            )
            self.diag.add("FR104", message, tok.start)
            op = COMPARISONS[general]
        if op is None:
            return self.existence(left, start, where)
        self.advance()
        right = self.operand(where)
        if COMPARISONS.get(self.tok.text) and self.tok.kind == "punct":
            raise self.diag.recover("FR100", "comparisons cannot be chained", self.tok.start)
        return self.comparison(left, op, right, start, where)

    def parenthesized(self, where: Where) -> Condition:
        opener = self.advance()
        self.enter()
        try:
            inner = self.or_condition(where)
            self.close(")", opener, "the parenthesized condition")
            self.advance()
        finally:
            self.depth -= 1
        return inner

    def boolean_call(self, tok: Token, where: Where) -> Condition | None:
        """``not(c)``, ``empty(p)``, ``exists(p)``, ``contains(p, "x")``...; None for other names."""
        if self.join_vars and where == "where" and self.stream_function(tok):
            return self.temporal(tok)
        name = _function_name(tok)
        if name in ("not", "empty", "exists"):
            self.advance()
            opener = self.advance()
            self.enter()
            try:
                if name == "not":
                    inner: Condition = self.or_condition(where)
                else:
                    inner = Exists(self.exists_path(where), self.span(self.tok.start))
                self.close(")", opener, f"the argument list of {name}()")
                self.advance()
            finally:
                self.depth -= 1
            span = self.span(tok.start)
            return (
                Exists(inner.path, span)
                if name == "exists" and isinstance(inner, Exists)
                else (Not(inner, span))
            )
        if name in MATCH_FUNCTIONS:
            call = self.call(where)
            if self.tok.kind == "punct" and self.tok.text in COMPARISONS:
                message = f"{name}() gives a boolean; use it as a condition, not in a comparison"
                raise self.diag.recover("FR104", message, tok.start)
            return BooleanCall(call, call.span)
        if name in ("true", "false"):
            raise self.diag.recover("FR108", f"{name}() is not supported; leave the condition out", tok.start)
        return None

    def call(self, where: Where) -> Call:
        """A call of a supported function: one argument path (or call) and, for the match functions,
        the literals after it."""
        tok = self.advance()
        name = _function_name(tok)
        arity = FUNCTION_ARITY.get(name)
        if arity is None:
            raise self.diag.recover(*_call_message(tok.text), tok.start)
        opener = self.advance()
        self.enter()
        try:
            if self.tok.is_punct(")") and arity[0] == 0:
                arg: RelPath | AbsPath | Call = RelPath((), None, self.span(self.tok.start))
                literals: list[Literal] = []
            else:
                arg = self.call_argument(where)
                literals = []
                while self.tok.is_punct(","):
                    self.advance()
                    literal = self.literal()
                    if literal.numeric:
                        raise self.diag.recover("FR104", f"{name}() takes string literals here", tok.start)
                    literals.append(literal)
            self.close(")", opener, f"the argument list of {name}()")
            self.advance()
        finally:
            self.depth -= 1
        count = 1 + len(literals)
        if not arity[0] <= count <= arity[1] and not (count == 1 and arity[0] == 0):
            raise self.diag.recover("FR108", _arity_message(name, arity), tok.start)
        found = Call(name, arg, tuple(literals), self.span(tok.start))
        if name == "matches":
            self.check_regex(found, tok)
        return found

    def check_regex(self, call: Call, tok: Token) -> None:
        pattern = str(call.literals[0].value)
        flags = str(call.literals[1].value) if len(call.literals) > 1 else ""
        problem = regex_problem(pattern, flags)
        if problem is not None:
            self.diag.add("FR112", f"invalid regular expression in matches(): {problem}", tok.start)

    def call_argument(self, where: Where) -> RelPath | AbsPath | Call:
        tok = self.tok
        if tok.kind == "name" and self.peek().is_punct("(") and _function_name(tok) in FUNCTION_ARITY:
            return self.call(where)
        return self.call_path(where)

    def exists_path(self, where: Where) -> RelPath:
        if self.tok.is_punct("/", "//"):
            message = "absolute paths are not supported here; use a relative path such as 'a/b' or './/b'"
            raise self.diag.recover("FR104", message, self.tok.start)
        return self.var_path("where") if where == "where" else self.rel_path()

    def call_path(self, where: Where) -> RelPath | AbsPath:
        """A function's path argument: as in the condition around it, or absolute (``count(//p)``)."""
        if self.tok.is_punct("/", "//"):
            return self.abs_path("argument")
        if where == "where":
            return self.var_path("where")
        return self.rel_path()

    def existence(self, left: Operand, start: Token, where: Where) -> Condition:
        message = _operator_message(self.tok)
        if message and not (self.tok.is_punct("|") and isinstance(left, RelPath)):
            raise self.diag.recover("FR104", message, self.tok.start)
        if isinstance(left, RelPath):
            return self.union_existence(left, start, where)
        # a number is a position only as a whole predicate ([2]); inside 'and'/'or' it is a boolean
        whole = start.start == self.predicate_start and self.tok.is_punct("]")
        if isinstance(left, _PositionCall):
            if left.last and whole:
                return Position(CompOp.EQ, None, left.span)
            name = "last" if left.last else "position"
            raise self.diag.recover("FR107", f"compare {name}(), e.g. [position() <= 3]", start.start)
        if isinstance(left, Literal) and left.numeric and where == "predicate":
            if whole:
                return Position(CompOp.EQ, float(left.value), left.span)
            raise self.diag.recover(
                "FR107", "a number is a position only as a whole predicate; write position() = n", start.start
            )
        if isinstance(left, Call):
            raise self.diag.recover(
                "FR104", f"{left.name}() gives a value; compare it, e.g. {left.name}(...) = ...", start.start
            )
        message = "a literal alone is not a condition; compare a path with it"
        raise self.diag.recover("FR104", message, start.start)

    def union_existence(self, left: RelPath, start: Token, where: Where) -> Condition:
        """``a`` or ``a | b | ...`` used as a condition: some path selects a node."""
        paths = [left]
        while self.tok.is_punct("|"):
            self.advance()
            paths.append(self.var_path("where") if where == "where" else self.rel_path())
        terms = tuple(Exists(p, p.span) for p in paths)
        return terms[0] if len(terms) == 1 else self.alternatives(terms, start)

    def comparison(self, left: Operand, op: CompOp, right: Operand, start: Token, where: Where) -> Condition:
        span = self.span(start.start)
        if isinstance(right, (RelPath, Call, _PositionCall)) and isinstance(left, (Literal, tuple)):
            left, right, op = right, left, op.flipped
        if isinstance(left, _PositionCall) and isinstance(right, _PositionCall) and left.last != right.last:
            return Position(op if right.last else op.flipped, None, span)  # position() op last()
        if isinstance(right, (Literal, tuple)):
            literals = right if isinstance(right, tuple) else (right,)
            terms = tuple(self.compared(left, op, lit, span, start) for lit in literals)
            return terms[0] if len(terms) == 1 else self.alternatives(terms, start)
        if isinstance(left, RelPath) and isinstance(right, RelPath) and self.join_vars and where == "where":
            return self.value_join(left, op, right, span, start)
        if isinstance(left, RelPath) and isinstance(right, RelPath):
            message = "comparing two paths is not supported; compare a path with a literal"
        else:
            message = "this comparison is not supported; compare a path or a function of it with a literal"
        raise self.diag.recover("FR104", message, start.start)

    def value_join(self, left: RelPath, op: CompOp, right: RelPath, span: Span, start: Token) -> Condition:
        """``$blog/author = $book/author``: equality between the two variables (paper 001). A
        leading ``self::item`` (``$b/self::item/title``) tests the variable's node: a condition of
        its block beside the join, which compares ``$b/title``."""
        sides = self.join_vars.get(left.var, 0), self.join_vars.get(right.var, 0)
        if sides[0] == sides[1]:
            message = "a comparison of two paths relates the join's two variables: $b/author = $a/author"
            raise self.diag.recover("FR104", message, start.start)
        if op is not CompOp.EQ:
            message = f"a value join compares with '=' only (equality joins), not '{op.value}'"
            raise self.diag.recover("FR104", message, start.start)
        if sides[0] == 1:
            left, right = right, left
        (left, left_tests), (right, right_tests) = self.join_leaf(left), self.join_leaf(right)
        joined = ValueJoin(left, right, span)
        return And((joined, *left_tests, *right_tests), span) if left_tests or right_tests else joined

    def join_leaf(self, path: RelPath) -> tuple[RelPath, tuple[Condition, ...]]:
        """A value join's path without its ``self::`` steps (folded into the steps before them,
        or, leading, tests of the variable's node); ``descendant-or-self::`` is refused."""
        if not any(isinstance(s, _AxisStep) for s in path.steps):
            return path, ()
        at = path.span.offset if path.span is not None else 0
        found = self.alternatives_of(path.steps, at)
        if len(found) != 1:
            message = "'descendant-or-self::' in a value join's path is not supported; write '//'"
            raise self.diag.fail("FR109", message, at)
        tests, steps = found[0]
        return RelPath(steps, path.tail, path.span, path.var), _with_var(tests, path.var)

    def compared(self, left: Operand, op: CompOp, literal: Literal, span: Span, start: Token) -> Condition:
        if isinstance(left, RelPath):
            return Comparison(left, op, literal, span)
        if isinstance(left, _PositionCall):
            if left.last or not literal.numeric:
                message = "compare position() with a number or with last()"
                raise self.diag.recover("FR107", message, start.start)
            return Position(op, float(literal.value), span)
        if isinstance(left, Call):
            numeric = left.name in NUMERIC_FUNCTIONS
            if numeric != literal.numeric:
                kind = "a number" if numeric else "a string"
                message = f"{left.name}() gives {kind}; compare it with {kind} literal (XPTY0004 otherwise)"
                raise self.diag.recover("FR104", message, start.start)
            return CallComparison(left, op, literal, span)
        raise self.diag.recover("FR104", "comparing two literals is not supported", start.start)

    def operand(self, where: Where) -> Operand:
        tok = self.tok
        if tok.kind in ("string", "number") or tok.is_punct("-", "+"):
            return self.literal()
        nxt = self.peek()
        if tok.is_punct("("):
            return self.literal_sequence()
        if tok.kind == "name" and nxt.is_punct("("):
            name = _function_name(tok)
            if name in ("position", "last"):
                return self.position_call(tok, where)
            if name in FUNCTION_ARITY and name not in MATCH_FUNCTIONS:
                return self.call(where)
        # steps report calls and axes themselves; here only what cannot start a path at all
        found = _construct_message(tok, nxt) if nxt.is_punct("$") else None
        if found is not None:
            raise self.diag.recover(*found, tok.start)
        if where == "where":
            if self.var is not None and not tok.is_punct("$"):
                raise self.unexpected(tok, f"a path from ${self.var} or a literal", "where")
            return self.var_path("where")
        return self.rel_path()

    def position_call(self, tok: Token, where: Where) -> _PositionCall:
        """``position()`` or ``last()``: completed into a :class:`Position` by the comparison."""
        name = _function_name(tok)
        self.advance()
        opener = self.advance()
        self.close(")", opener, f"the argument list of {name}()")
        self.advance()
        if where != "predicate":
            raise self.diag.recover("FR107", f"{name}() is only supported in a step's predicate", tok.start)
        if self.tok.is_punct("+", "-", "*") or self.tok.is_name("div", "idiv", "mod"):
            raise self.diag.recover("FR104", f"arithmetic on {name}() is not supported", self.tok.start)
        return _PositionCall(name == "last", self.span(tok.start))

    def literal_sequence(self) -> tuple[Literal, ...]:
        """``("a", "b")``: compared with a path it is an ``or`` of comparisons."""
        opener = self.advance()
        found: list[Literal] = []
        refused = False
        while not self.tok.is_punct(")"):
            try:
                found.append(self.literal())
            except Recover:  # read on to the ')': the condition's recovery stops at the first one
                refused = True
                self.skip_until(lambda t: t.is_punct(","))
            if not self.tok.is_punct(","):
                break
            self.no_trailing_comma(self.advance(), ")")
        self.close(")", opener, "the sequence")
        self.advance()
        if refused:
            raise Recover()
        if not found:
            message = "the empty sequence '()' compares false; leave it out"
            raise self.diag.recover("FR104", message, opener.start)
        return tuple(found)

    def no_trailing_comma(self, comma: Token, closer: str) -> None:
        """XQuery has no empty item after a ',' (XPST0003): ``('x', )`` is no sequence of one."""
        if self.tok.is_punct(closer):
            message = "a trailing ',' is not allowed: write another item after it, or remove it"
            self.diag.add("FR100", message, comma.start)

    def literal(self) -> Literal:
        start = self.tok
        sign = 1.0
        while self.tok.is_punct("-", "+"):
            sign = -sign if self.advance().text == "-" else sign
        tok = self.tok
        if tok.kind == "string" and tok is start:
            self.advance()
            return Literal(str(tok.value), self.span(start.start))
        if tok.kind != "number":
            raise self.diag.recover("FR104", _literal_expected(tok, signed=tok is not start), start.start)
        self.advance()
        assert isinstance(tok.value, float)
        return Literal(sign * tok.value, self.span(start.start))

    # -- return and constructors ---------------------------------------------------------------------

    def return_expr(self) -> Return:
        tok = self.tok
        if tok.is_punct("("):
            return self.return_items()
        return self.return_item()

    def return_items(self) -> Return:
        """``($i/title, <sep/>, $i/link)``: a sequence of paths and constructors, in order."""
        opener = self.advance()
        if self.tok.is_punct(")"):
            message = "an empty return '()' delivers nothing; return a path"
            raise self.diag.fail("FR104", message, opener.start)
        items = [self.return_item()]
        while self.tok.is_punct(","):
            self.advance()
            items.append(self.return_item())
        self.close(")", opener, "the returned sequence")
        self.advance()
        if len(items) == 1:
            return items[0]
        return Items(tuple(items), self.span(opener.start))

    def return_item(self) -> Constructor | RelPath:
        tok = self.tok
        if tok.is_punct("<"):
            ctor, end, _ = self.constructor(tok.start, self.enclosed)
            self.jump(end)
            return ctor
        if not tok.is_punct("$"):
            raise self.unexpected(tok, f"'${self.var}', a path from it or an element constructor", "return")
        path = self.var_path("return")
        if isinstance(path.tail, AttributeTest):
            message = f"an attribute cannot be returned; return the element, e.g. '${self.var}'"
            self.diag.add("FR111", message, tok.start)
        return path

    def enclosed(self, brace: int) -> tuple[Enclosed, int]:
        """``{ $v/a, $v//b }`` in a return constructor; ``{}`` is empty."""
        self.jump(brace + 1)
        opener = Token("punct", "{", brace, brace + 1)
        paths: list[RelPath] = []
        while not self.tok.is_punct("}"):
            try:
                paths.append(self.enclosed_path())
            except Recover:
                self.skip_until(lambda t: t.is_punct(","))
            if not self.tok.is_punct(","):
                break
            self.no_trailing_comma(self.advance(), "}")
        end = self.close("}", opener, "the enclosed expression").end
        return Enclosed(tuple(paths), self.span(brace)), end

    def enclosed_path(self) -> RelPath:
        tok = self.tok
        if tok.kind == "string":
            raise self.diag.recover(
                "FR104", "write literal text directly in the element, not in braces", tok.start
            )
        return self.var_path("enclosed")  # attributes: constructor() checks where they stand

    def constructor(
        self, lt: int, on_enclosed: Callable[[int], tuple[object, int]]
    ) -> tuple[Constructor, int, list[int]]:
        """A direct element constructor at ``lt``; returns it, its end and its items' offsets."""
        found = self.lexer.tag_name(lt + 1)
        if found is None:
            raise self.diag.fail("FR100", "expected an element name right after '<'", lt + 1)
        raw, pos = found
        pos, empty, written = self.start_tag_rest(pos, raw)
        declared = self.namespace_declarations(written)
        saved = self.namespaces, self.default_ns
        try:
            self.declare_namespaces(declared)
            return self.constructor_in_scope(lt, raw, pos, empty, written, declared, on_enclosed)
        finally:
            self.namespaces, self.default_ns = saved

    def constructor_in_scope(
        self,
        lt: int,
        raw: RawName,
        pos: int,
        empty: bool,
        written: list[_WrittenAttribute],
        declared: tuple[tuple[str, str], ...],
        on_enclosed: Callable[[int], tuple[object, int]],
    ) -> tuple[Constructor, int, list[int]]:
        """The rest of a constructor once its namespace declarations are in scope: its name, its
        attributes and its content resolve names with them (XQuery's statically known namespaces)."""
        name = self.resolve_raw(raw, lt + 1, element=True)
        attributes: list[AttributeConstructor] = []
        for attribute in written:
            if not _is_declaration(attribute.raw):
                self.attribute(attribute, attributes)
        if declared or _foreign(name) or any(_foreign(a.name) for a in attributes):
            self.prefixed_constructor = True
        if empty:
            return Constructor(name, (), self.span(lt), tuple(attributes), declared), pos, []
        self.enter()
        items: list = []
        offsets: list[int] = []
        while True:
            piece = self.lexer.content_at(pos)
            if piece.kind == "end":
                pos = self.end_tag(piece.end, raw, lt)
                break
            if piece.kind == "eof":
                raise self.diag.fail(
                    "FR103", f"missing end tag </{raw}> for the element at {self.where_at(lt)}", pos
                )
            self.count_part(piece.start)
            item, pos = self.content_item(piece.kind, piece.start, piece.end, piece.value, on_enclosed)
            if item is not None and not (piece.kind == "text" and piece.boundary):
                items.append(item)
                offsets.append(piece.start)
        self.depth -= 1
        self.check_attribute_content(items, offsets, attributes)
        return Constructor(name, tuple(items), self.span(lt), tuple(attributes), declared), pos, offsets

    def check_attribute_content(
        self, items: list, offsets: list[int], attributes: list[AttributeConstructor]
    ) -> None:
        """``{ $v/@id }`` in element content makes attributes of the constructed element: XQuery wants
        them before any other content (XQTY0024) and each name once (XQDY0025). feedrouter takes the
        bound node's own attributes (at most one node per name), so both are checked here; a wildcard
        copy (``{ $v/@* }``) must be the element's only attributes, as its names are known only per
        document."""
        names = {a.name for a in attributes}
        wildcard = False
        content_seen = False
        for item, offset in zip(items, offsets, strict=True):
            paths = item.paths if isinstance(item, Enclosed) else ()
            if not paths:
                content_seen = content_seen or not isinstance(item, Enclosed)
                continue
            for path in paths:
                if not isinstance(path.tail, AttributeTest):
                    content_seen = True
                    continue
                var = path.var or self.var
                if content_seen:
                    message = "attributes must come before the element's other content (XQTY0024)"
                    self.diag.add("FR111", message, offset)
                elif path.steps:
                    message = f"only the bound node's own attributes go here, e.g. {{ ${var}/@id }}"
                    self.diag.add("FR111", message, offset)
                elif _foreign(path.tail.name) and not is_wildcard(path.tail.name):
                    message = (
                        f"copying an attribute in a namespace other than xml: ('@{path.tail.name}') is not "
                        f"supported; copy attributes in no namespace, or all of them with {{ ${var}/@* }}"
                    )
                    self.diag.add("FR111", message, offset)
                elif path.tail.name in names or ((wildcard or is_wildcard(path.tail.name)) and names):
                    message = (
                        f"the attribute '{path.tail.name}' is given twice (XQDY0025)"
                        if not is_wildcard(path.tail.name) and not wildcard
                        else "an attribute wildcard copy may give an attribute twice (XQDY0025); make it "
                        "the element's only attributes, or name the attributes"
                    )
                    self.diag.add("FR104", message, offset)
                elif is_wildcard(path.tail.name):
                    wildcard = True
                    self.wildcard_copies.append(offset)
                names.add(path.tail.name)

    def content_item(
        self, kind: str, start: int, end: int, value: str, on_enclosed: Callable[[int], tuple[object, int]]
    ) -> tuple[object, int]:
        if kind == "text":
            return TextContent(value), end
        if kind == "enclosed":
            return on_enclosed(start)
        if kind == "start":
            ctor, pos, _ = self.constructor(start, on_enclosed)
            return ctor, pos
        if kind == "comment":
            return CommentContent(value), end
        return None, end  # skipped markup, already reported

    def where_at(self, offset: int) -> str:
        span = self.span(offset)
        return f"line {span.line}, column {span.column}"

    def start_tag_rest(self, pos: int, raw: RawName) -> tuple[int, bool, list[_WrittenAttribute]]:
        """Read the rest of a start tag: its attributes as written, then ``/>`` or ``>``. Names are
        resolved later, once the tag's namespace declarations (which may come last) are known."""
        text = self.text
        written: list[_WrittenAttribute] = []
        while True:
            after = self.lexer.skip_space(pos)
            if text.startswith("/>", after):
                return after + 2, True, written
            if text.startswith(">", after):
                return after + 1, False, written
            attribute = self.lexer.tag_name(after) if after > pos else None
            if attribute is not None:
                value, start, pos = self.lexer.attribute_value(attribute[1])
                self.count_part(after)
                written.append(_WrittenAttribute(attribute[0], after, value, start))
                continue
            if after >= len(text):
                raise self.diag.fail("FR103", f"unterminated start tag <{raw}>: close it with '>'", after)
            raise self.diag.fail("FR100", f"expected '>' to end the start tag <{raw}>", after)

    def namespace_declarations(self, written: list[_WrittenAttribute]) -> tuple[tuple[str, str], ...]:
        """The ``xmlns="uri"`` and ``xmlns:p="uri"`` attributes of a start tag, as (prefix, uri) with
        "" for the default element namespace; XQuery's static errors for them are reported."""
        declared: dict[str, str] = {}
        for attribute in written:
            if not _is_declaration(attribute.raw):
                continue
            prefix = attribute.raw.local if attribute.raw.prefix else ""
            shown = f"xmlns:{prefix}" if prefix else "xmlns"
            if "{" in attribute.value.replace("{{", ""):
                message = f"the namespace declaration '{shown}' must be a constant URI (XQST0022)"
                self.diag.add("FR104", message, attribute.at)
                continue
            parts = self.attribute_parts(attribute.value, attribute.start)
            uri = " ".join("".join(p for p in parts if isinstance(p, str)).split())
            problem = _declaration_problem(prefix, uri, shown, prefix in declared)
            if problem is not None:
                self.diag.add("FR104", problem, attribute.at)
                continue
            declared[prefix] = uri
        return tuple(declared.items())

    def declare_namespaces(self, declared: tuple[tuple[str, str], ...]) -> None:
        """Put a constructor's namespace declarations in scope (the caller restores the old scope)."""
        if not declared:
            return
        self.namespaces = dict(self.namespaces)
        for prefix, uri in declared:
            if prefix:
                self.namespaces[prefix] = uri
            else:
                self.default_ns = uri

    def attribute(self, written: _WrittenAttribute, attributes: list[AttributeConstructor]) -> None:
        """One ``name="value"`` of a start tag."""
        raw, at = written.raw, written.at
        parts = self.attribute_parts(written.value, written.start)
        name = self.resolve_raw(raw, at, element=False)
        if name.uri and not name.prefix:
            self.diag.add("FR104", f"give the attribute '{raw}' a prefix declared in the prolog", at)
            return
        if any(a.name == name for a in attributes):
            self.diag.add("FR104", f"the attribute '{raw}' is given twice (XQST0040)", at)
            return
        attributes.append(AttributeConstructor(name, parts))

    def attribute_parts(self, value: str, start: int) -> tuple[str | Enclosed, ...]:
        """An attribute value template, ``value`` as written at ``start``: literal runs and
        ``{ $v/... }`` enclosed paths, in order."""
        quote = self.text[start - 1]
        parts: list[str | Enclosed] = []
        literal: list[str] = []
        i = 0
        while i < len(value):
            if value.startswith(("{{", "}}", quote * 2), i):
                literal.append(value[i])
                i += 2
            elif value[i] == "{":
                self.flush_literal(literal, parts)
                enclosed, end = self.enclosed(start + i)
                if len(enclosed.paths) != 1:
                    message = "write one path per '{ }' in an attribute value: '{ $v/a } { $v/b }'"
                    raise self.diag.fail("FR104", message, start + i)
                parts.append(enclosed)
                i = end - start
            elif value[i] == "}":
                raise self.diag.fail("FR100", "write a '}' in an attribute value as '}}'", start + i)
            elif value[i] == "&":
                # resolved here, not per run, so that a bad reference is reported where it stands
                char, length = self.lexer.reference(value, i, start + i)
                literal.append(char)
                i += length
            else:
                # XQuery normalizes literal whitespace in the value to spaces; references stay
                literal.append(" " if value[i] in "\t\n" else value[i])
                i += 1
        self.flush_literal(literal, parts)
        return tuple(parts) if parts else ("",)

    def flush_literal(self, literal: list[str], parts: list[str | Enclosed]) -> None:
        if literal:
            parts.append("".join(literal))
            literal.clear()

    def end_tag(self, pos: int, raw: RawName, lt: int) -> int:
        found = self.lexer.tag_name(pos)
        if found is None:
            raise self.diag.fail("FR100", "expected an element name after '</'", pos)
        end_raw, after = found
        after = self.lexer.skip_space(after)
        if not self.text.startswith(">", after):
            raise self.diag.fail("FR100", f"expected '>' to end the end tag </{end_raw}>", after)
        if str(end_raw) != str(raw):
            message = f"end tag </{end_raw}> does not match the start tag <{raw}> at {self.where_at(lt)}"
            self.diag.add("FR110", message, pos - 2)
        return after + 1

    # -- names -------------------------------------------------------------------------------------

    def resolve(self, tok: Token, element: bool) -> QName:
        assert isinstance(tok.value, RawName)
        return self.resolve_raw(tok.value, tok.start, element)

    def resolve_raw(self, raw: RawName, offset: int, element: bool) -> QName:
        """Resolve a name against the prolog; the default element namespace applies to elements only."""
        if raw.uri is not None:
            return QName(raw.uri, raw.local)
        if raw.prefix:
            uri = self.namespaces.get(raw.prefix)
            if uri is None:
                message = (
                    f"unknown namespace prefix '{raw.prefix}'; declare it with "
                    f"'declare namespace {raw.prefix} = \"...\";'"
                )
                self.diag.add("FR105", message, offset)
                uri = ""
            return QName(uri, raw.local, raw.prefix)
        return QName((self.default_ns or "") if element else "", raw.local)

    # -- messages ----------------------------------------------------------------------------------

    def unexpected(self, tok: Token, expected: str, role: str) -> Stop:
        """The error for a token that cannot start what ``role`` needs: specific when we can be."""
        nxt = self.peek()
        found = _construct_message(tok, nxt)
        if found is not None:
            return self.diag.fail(*found, tok.start)
        if tok.is_name(*COMPUTED) and nxt.kind == "name":
            message = f"computed constructors ('{tok.text} {nxt.text} {{...}}') are not supported"
            return self.diag.fail("FR104", message, tok.start)
        if tok.kind == "eof":
            return self.diag.fail("FR101", f"unexpected end of text: expected {expected}", tok.start)
        if tok.is_punct("$"):
            name = self.peek().text
            if role in ("top", "binding") or self.var is None:
                return self.diag.fail("FR106", f"unknown variable '${name}'", tok.start)
        role_message = _role_message(tok, role, self.var)
        if role_message:
            return self.diag.fail("FR104", role_message, tok.start)
        return self.diag.fail("FR100", f"expected {expected}, found {tok.describe()}", tok.start)


@dataclass(frozen=True)
class _Reported(Exists):
    """Stands for conditions already reported and skipped (the subscription fails, so it is never
    evaluated); kept apart so that no later check reports on what it cannot read."""


@dataclass(frozen=True)
class _AxisStep(Step):
    """A ``self::`` (``descendants`` False) or ``descendant-or-self::`` step while its path is read;
    never in a parsed subscription (the parser rewrites it, see ``_Parser.alternatives_of``)."""

    descendants: bool = False


def _narrowed(previous: Step, step: _AxisStep) -> Step | None:
    """``previous/self::name[p]`` as one step, or None when no node can pass both name tests. The name
    tests intersect where ``previous`` has no position (positions count ``previous``'s own matches:
    ``*[1]/self::a`` is the first element if it is an ``a``); otherwise a :class:`SelfTest` follows."""
    if previous.axis is Axis.PARENT_NODE:  # '../self::a' is parent::a: a name test takes elements only
        previous = replace(previous, axis=Axis.PARENT)
    if step.name is None:
        return replace(previous, predicates=previous.predicates + step.predicates)
    if previous.name is not None and not _wild(previous.name) and not _wild(step.name):
        if previous.name != step.name:
            return None
        return replace(previous, predicates=previous.predicates + step.predicates)
    name = _intersection(previous.name, step.name)
    if name is not None and not any(is_positional(p) for p in previous.predicates):
        return replace(previous, name=name, predicates=previous.predicates + step.predicates)
    test = SelfTest(step.name, step.span)
    return replace(previous, predicates=(*previous.predicates, test, *step.predicates))


def _wild(name: QName) -> bool:
    return name.uri == ANY or name.local == ANY


def _intersection(first: QName | None, second: QName) -> QName | None:
    """The one name test equal to passing both, where there is one (``*:a`` and ``p:*`` is ``p:a``)."""
    if first is None:
        return second
    uri = second.uri if first.uri == ANY else first.uri if second.uri == ANY else None
    local = second.local if first.local == ANY else first.local if second.local == ANY else None
    if uri is None or local is None:
        same_uri = first.uri == second.uri or ANY in (first.uri, second.uri)
        same_local = first.local == second.local or ANY in (first.local, second.local)
        if not (same_uri and same_local):
            return None
        uri = first.uri if uri is None else uri
        local = first.local if local is None else local
    prefix = second.prefix if uri == second.uri else first.prefix
    return QName(uri, local, prefix)


@dataclass(frozen=True)
class _WrittenAttribute:
    """An attribute of a start tag as written: its name is resolved once the tag is read."""

    raw: RawName
    at: int
    value: str
    start: int


def _is_declaration(raw: RawName) -> bool:
    return raw.prefix == "xmlns" or (not raw.prefix and raw.local == "xmlns")


def _declaration_problem(prefix: str, uri: str, shown: str, repeated: bool) -> str | None:
    """What XQuery refuses in a namespace declaration attribute, or None."""
    if repeated:
        return f"the namespace declaration '{shown}' is given twice (XQST0071)"
    if prefix in ("xml", "xmlns") or uri in (XML_NS, XMLNS_NS):
        return f"'{shown}' cannot bind the xml or xmlns prefixes or namespaces (XQST0070)"
    if prefix and not uri:
        return f"'{shown}=\"\"' would undeclare the prefix, which XQuery does not allow here (XQST0085)"
    return None


def _plain(tok: Token) -> bool:
    """An unprefixed name (variables in the subset have no namespace)."""
    return (
        tok.kind == "name"
        and isinstance(tok.value, RawName)
        and not tok.value.prefix
        and tok.value.uri is None
    )


def _role_message(tok: Token, role: str, var: str | None) -> str | None:
    """Why ``tok`` cannot start what ``role`` needs, for the usual mistakes."""
    relative = tok.kind in ("name", "wildcard") or tok.is_punct("*", "@", ".")
    if role == "top" and relative:
        return "a filter path must be absolute: start it with '/' or '//'"
    if role == "binding" and (relative or tok.is_punct("$")):
        return "the 'for' binding path must be absolute: start it with '/' or '//'"
    if role in ("where", "return", "enclosed") and (relative or tok.is_punct("/", "//")):
        return f"paths here must start from the variable: write '${var}/...' or '${var}//...'"
    if tok.kind in ("string", "number"):
        return {
            "top": "a literal alone is not a subscription",
            "return": f"return a path from '${var}' or an element constructor, not a literal",
        }.get(role)
    if tok.is_punct("<") and role in ("enclosed", "wrapper"):
        return "element constructors inside braces are not supported; write them directly in the element"
    if tok.is_punct("-", "+"):
        return "arithmetic is not supported"
    return None


def _construct_message(tok: Token, nxt: Token) -> tuple[str, str] | None:
    """(code, message) for a recognizable construct outside the subset that starts at ``tok``."""
    if tok.is_punct("("):
        return "FR104", "parenthesized expressions and sequences are not supported"
    if tok.kind != "name":
        return None
    name = tok.text
    if nxt.is_punct("$") and name in ("let", "some", "every", "for"):
        return "FR104", {
            "let": "'let' clauses are not supported",
            "for": "nested FLWR expressions are not supported; a subscription has one 'for' clause",
        }.get(name, f"quantified expressions ('{name}') are not supported; use an existence test")
    if nxt.is_punct("("):
        return _call_message(name)
    if nxt.is_punct("::"):
        return "FR109", _axis_message(name)
    if nxt.is_punct("{") and name in (
        "ordered", "unordered", "validate", "try", "document", "element", "attribute", "text", "comment",
        "processing-instruction", "namespace", "map", "array",
    ):  # fmt: skip
        return "FR104", f"'{name} {{...}}' is not supported"
    return None


def _call_message(name: str) -> tuple[str, str]:
    if name in ("if", "switch", "typeswitch"):
        return "FR104", f"'{name}' expressions are not supported"
    if name in KIND_TESTS:
        return "FR104", f"the kind test '{name}()' is not supported; only text() may end a path"
    if name in ("last", "position"):
        return "FR107", f"positional predicates such as [{name}()] are not supported"
    if name in FUNCTION_ARITY or name in ("not", "empty", "exists"):
        return "FR108", f"'{name}()' is only supported in a predicate or a where clause"
    supported = ", ".join([*FUNCTION_ARITY, "not", "empty", "exists", "position", "last"])
    return "FR108", f"the function '{name}()' is not supported; the subset has {supported}"


def _axis_message(name: str) -> str:
    hint = "; write 'a/b' for child::, 'a//b' for descendant::, '@a' for attribute::"
    if name in ("preceding", "preceding-sibling"):
        return f"the backward axis '{name}::' is not supported"
    if name in ("following", "following-sibling", "namespace"):
        return f"the axis '{name}::' is not supported"
    if name in ("child", "descendant", "attribute"):
        return f"'{name}::' is not supported here{hint}"
    return f"'{name}::' is not an axis"


def _clause_message(tok: Token, nxt: Token) -> str | None:
    """The message for a FLWR clause outside the subset at ``tok``, if it is one."""
    if tok.is_punct(","):
        return "only one 'for' binding is supported"
    if tok.is_name("let"):
        return "'let' clauses are not supported"
    if tok.is_name("for"):
        return "only one 'for' clause is supported"
    if (tok.is_name("order") and nxt.is_name("by")) or (tok.is_name("stable") and nxt.is_name("order")):
        return "'order by' is not supported: results come in document order"
    if tok.is_name("group") and nxt.is_name("by"):
        return "'group by' is not supported"
    if tok.is_name("count") and nxt.is_punct("$"):
        return "'count' clauses are not supported"
    return None


def _literal_expected(tok: Token, signed: bool) -> str:
    """Why a literal's place holds something else: a sign before a non-number is arithmetic; a
    path (often a second variable's, ``contains($a/k, $b/k)``) is not a literal."""
    if signed:
        return "arithmetic is not supported"
    found = "a path" if tok.is_punct("$", "/", "//", "@", ".") or tok.kind == "name" else f"'{tok.text}'"
    message = f"a literal (a string or a number) is expected here, not {found}"
    if tok.is_punct("$"):
        message += "; two variables' values are compared only with '=' (a value join)"
    return message


def _operator_message(tok: Token) -> str | None:
    """The message for an operator outside the subset (after an operand), if ``tok`` is one."""
    if tok.kind == "punct":
        return {
            "|": "union ('|') is not supported; use two subscriptions",
            "+": "arithmetic is not supported",
            "-": "arithmetic is not supported",
            "*": "arithmetic is not supported",
            "||": "string concatenation ('||') is not supported",
            "!": "the simple map operator '!' is not supported",
            "=>": "the arrow operator '=>' is not supported",
            "<<": "node order comparisons ('<<') are not supported",
            ">>": "node order comparisons ('>>') are not supported",
        }.get(tok.text)
    if tok.is_name("union", "intersect", "except"):
        return f"'{tok.text}' is not supported; use two subscriptions"
    if tok.is_name("div", "idiv", "mod"):
        return "arithmetic is not supported"
    if tok.is_name("to"):
        return "range expressions ('to') are not supported"
    if tok.is_name("is"):
        return "node identity comparisons ('is') are not supported"
    if tok.is_name("instance", "treat", "castable", "cast"):
        return f"'{tok.text}' expressions are not supported"
    return None


def _comparison_message(tok: Token) -> str | None:
    if tok.is_name("or"):
        return "'or' is not supported; use two subscriptions"
    if tok.is_name("and"):
        return "'and' is only supported between conditions in a predicate or a where clause"
    if (tok.kind == "punct" and tok.text in COMPARISONS) or tok.is_name(*VALUE_COMPARISONS):
        return "a subscription cannot be a comparison; put it in a predicate, e.g. //a[b = 1]"
    return None


@dataclass(frozen=True)
class _PositionCall:
    """``position()`` or ``last()`` read as an operand, before the comparison makes a Position."""

    last: bool
    span: Span


Operand = RelPath | Literal | tuple[Literal, ...] | Call | _PositionCall

#: The functions of the subset and their (least, most) argument counts.
FUNCTION_ARITY: dict[str, tuple[int, int]] = {
    "contains": (2, 2),
    "starts-with": (2, 2),
    "ends-with": (2, 2),
    "matches": (2, 3),
    "lower-case": (1, 1),
    "upper-case": (1, 1),
    "normalize-space": (0, 1),
    "string-length": (0, 1),
    "string": (0, 1),
    "count": (1, 1),
}
NUMERIC_FUNCTIONS = ("string-length", "count")
FN_NS = PREDECLARED["fn"]


def _variables(node: object) -> set[str]:
    """The variables the paths of a condition start from (a join's where clause)."""
    if isinstance(node, (RelPath, SelfTest)):
        return {node.var} if node.var else set()
    if isinstance(node, tuple):
        return set().union(*(_variables(item) for item in node)) if node else set()
    fields = getattr(node, "__dataclass_fields__", None)
    if fields is None or isinstance(node, Step):  # a predicate's paths are relative to its step
        return set()
    return set().union(*(_variables(getattr(node, f)) for f in fields if f != "span"))


def _join_terms(where: tuple[Condition, ...]) -> Iterator[Condition]:
    """A join's where terms, a value join's tests of its variables' nodes beside it
    (:meth:`_Parser.value_join`)."""
    for term in where:
        if isinstance(term, And) and any(isinstance(part, ValueJoin) for part in term.terms):
            yield from term.terms
        else:
            yield term


def _with_var(node: T, var: str) -> T:
    """``node`` with its paths (and ``self::`` tests) read from a join's variable ``var``: the
    tests a leading ``self::name[p]`` of ``$b/self::name[p]/x`` puts on the context node are on
    ``$b``'s node, and go to its block. A step's own predicates are relative to that step, and
    keep theirs."""
    if isinstance(node, (RelPath, SelfTest)):
        return replace(node, var=var)
    if isinstance(node, tuple):
        return tuple(_with_var(item, var) for item in node)  # type: ignore[return-value]
    if isinstance(node, Step) or not is_dataclass(node) or isinstance(node, type):
        return node
    changed = {
        f.name: _with_var(getattr(node, f.name), var) for f in fields(node) if f.init and f.name != "span"
    }
    return replace(node, **changed)


def _function_name(tok: Token) -> str:
    """The local name of a call in the function namespace (``contains``, ``fn:contains``), else ""."""
    raw = tok.value
    if not isinstance(raw, RawName):
        return ""
    if raw.uri is not None:
        return raw.local if raw.uri == FN_NS else ""
    if raw.prefix in ("", "fn"):
        return raw.local
    return ""


def _arity_message(name: str, arity: tuple[int, int]) -> str:
    low, high = arity
    counts = f"{low}" if low == high else f"{low} or {high}" if high == low + 1 else f"{low} to {high}"
    return f"{name}() takes {counts} arguments"


def _flattened(terms: list[Condition], kind: type[And] | type[Or]) -> tuple[Condition, ...]:
    """Terms with nested ones of the same kind spliced in: ``(a or b) or c`` is one ``or`` of three."""
    out: list[Condition] = []
    for term in terms:
        out.extend(term.terms if isinstance(term, kind) else (term,))
    return tuple(out)


def regex_problem(pattern: str, flags: str) -> str | None:
    """Why ``matches(x, pattern, flags)`` would raise FORX0001/FORX0002 in XQuery, or None.

    The XPath regular-expression syntax differs from Python's; elementpath's translator (the
    well-kept one) turns it into Python's and rejects what XPath rejects.
    """
    from feedrouter.lang.regex import compile_regex

    try:
        compile_regex(pattern, flags)
    except ValueError as err:
        return str(err)
    return None


def is_wildcard(name: QName) -> bool:
    """``*``, ``*:local`` or ``prefix:*`` as an attribute name test."""
    return name.uri == ANY or name.local == ANY


def _foreign(name: QName) -> bool:
    """An attribute name in a namespace other than ``xml``: copying it would need a declaration."""
    return bool(name.uri) and name.uri != XML_NS
