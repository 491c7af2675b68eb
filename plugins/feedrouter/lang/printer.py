"""Print the AST back as text: canonical XQuery, an XPath 1.0 selection for lxml, an XQuery match probe.

>>> from feedrouter.lang.parser import parse
>>> sub = parse('declare namespace n = "urn:n"; for $s in //n:a where $s/b > 2 return $s')
>>> to_xpath(sub)
('//n:a[b > 2]', {'n': 'urn:n'})
>>> match_probe(parse("//a[@id]"))
'exists(//a[@id])'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal

from feedrouter.lang.ast import (
    ANY,
    STREAM_MODULE,
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
    Member,
    Not,
    Or,
    Position,
    QName,
    ReachedFrom,
    RelPath,
    SelfTest,
    Step,
    StreamBinding,
    Subscription,
    Temporal,
    TextContent,
    Union,
    UpwardTest,
    ValueJoin,
)
from feedrouter.lang.parser import PREDECLARED, XML_NS


def to_xquery(sub: Subscription) -> str:
    """A canonical XQuery text for ``sub``; ``parse(to_xquery(sub)) == sub``."""
    writer = _XQueryWriter(sub)
    return writer.prolog() + writer.body()


def to_xpath(sub: Subscription) -> tuple[str, dict[str, str]]:
    """An XPath 1.0 expression selecting what ``sub`` binds (filter nodes, or the FLWR's bound nodes).

    Where conditions become a predicate on the binding's last step. Returns the expression and the
    namespace map to give lxml (prefixes are invented for the default element namespace).

    XPath 1.0 compares a node with a number as ``number(node) op number`` (NaN for non-numbers, so
    ``!=`` holds where XQuery raises FORG0001, and ``1e3`` in a document is NaN in XPath 1.0); it has
    no codepoint ordering of strings, so ``<``, ``<=``, ``>``, ``>=`` with a string literal raise
    :class:`ValueError`.
    """
    writer = _XPathWriter(sub)
    body = sub.body
    if isinstance(body, Filter):
        return writer.filter_path(body.path), writer.prefixes
    if isinstance(body, JoinFlwr):
        raise ValueError("a join subscription reads two streams: it has no single-document XPath")
    text = writer.abs_path(body.binding)
    if body.where:
        # the predicate goes after the last step's own predicates: it filters the bound nodes
        text += "[" + " and ".join(writer.conjunct(c, writer.rel_path) for c in body.where) + "]"
    return text, writer.prefixes


def condition_text(condition: Condition) -> str:
    """A condition as XQuery predicate text (names with their written prefixes), for explain()."""
    writer = _XQueryWriter(Subscription(Filter(AbsPath(()))))
    return writer.condition(condition, writer.rel_path)


def match_probe(sub: Subscription) -> str:
    """An XQuery text (with ``sub``'s prolog) returning ``true``/``false``: does ``sub`` match?"""
    writer = _XQueryWriter(sub)
    body = sub.body
    if isinstance(body, Filter):
        return writer.prolog() + f"exists({writer.filter_path(body.path)})"
    if isinstance(body, JoinFlwr):
        raise ValueError("a join subscription reads two streams: it has no single-document probe")
    return writer.prolog() + f"exists({writer.for_where(body)} return 1)"


class _Writer:
    """What XQuery and XPath 1.0 spell the same: paths, predicates and comparisons."""

    def __init__(self, sub: Subscription) -> None:
        self.sub = sub
        self.default = sub.default_element_namespace
        self.namespaces = dict(PREDECLARED)
        for prefix, uri in sub.namespaces:
            if uri:
                self.namespaces[prefix] = uri
            else:
                self.namespaces.pop(prefix, None)

    def name(self, name: QName, element: bool) -> str:
        raise NotImplementedError

    def literal(self, literal: Literal, op: CompOp) -> str:
        raise NotImplementedError

    def abs_path(self, path: AbsPath) -> str:
        return "".join(self.step(step) for step in path.steps) + ("/text()" if path.tail else "")

    def filter_path(self, path: AbsPath | Union) -> str:
        if isinstance(path, Union):
            return " | ".join(self.abs_path(p) for p in path.paths)
        return self.abs_path(path)

    def step(self, step: Step) -> str:
        test = "*" if step.name is None else self.name(step.name, element=True)
        if step.axis is Axis.PARENT_NODE:
            test = ""
        return step.axis.value + test + "".join(self.predicate(c) for c in step.predicates)

    def predicate(self, condition: Condition) -> str:
        if isinstance(condition, Position) and condition.op is CompOp.EQ:
            return "[last()]" if condition.index is None else f"[{_number(condition.index)}]"
        return f"[{self.condition(condition, self.rel_path)}]"

    def condition(self, condition: Condition, path_writer: Callable[[RelPath], str]) -> str:
        if isinstance(condition, Comparison):
            path = path_writer(condition.path)
            return f"{path} {condition.op.value} {self.literal(condition.literal, condition.op)}"
        if isinstance(condition, Exists):
            return path_writer(condition.path)
        if isinstance(condition, Or):
            return " or ".join(self.condition(t, path_writer) for t in condition.terms)
        if isinstance(condition, And):
            return " and ".join(self.conjunct(t, path_writer) for t in condition.terms)
        if isinstance(condition, Not):
            return f"not({self.condition(condition.operand, path_writer)})"
        if isinstance(condition, BooleanCall):
            return self.call(condition.call, path_writer)
        if isinstance(condition, CallComparison):
            literal = self.literal(condition.literal, condition.op)
            return f"{self.call(condition.call, path_writer)} {condition.op.value} {literal}"
        if isinstance(condition, Member):
            return f"exists({path_writer(RelPath())} intersect {self.abs_path(condition.path)})"
        if isinstance(condition, UpwardTest):
            return self.upward_test(condition, path_writer)
        if isinstance(condition, ReachedFrom):
            walk = self.upward_test(UpwardTest(condition.steps), self.rel_path)
            return f"exists({path_writer(RelPath())} intersect {self.abs_path(condition.source.path)}/{walk})"
        if isinstance(condition, SelfTest):
            test = "*" if condition.name is None else self.name(condition.name, element=True)
            context = path_writer(RelPath())  # '.' in a predicate, '$v' in a where clause
            return f"self::{test}" if context == "." else f"{context}/self::{test}"
        if isinstance(condition, ValueJoin):
            return f"{path_writer(condition.left)} = {path_writer(condition.right)}"
        if isinstance(condition, Temporal):
            args = f"${condition.first}, ${condition.second}, {_string(condition.window)}"
            return f"fr:{condition.kind.value}({args})"
        return self.position(condition)

    def upward_test(self, test: UpwardTest, path_writer: Callable[[RelPath], str]) -> str:
        """For explain(): the walk as the backward steps it came from, the predicates as written."""
        steps = []
        for step in test.steps:
            shown = (
                ""
                if step.axis is Axis.PARENT_NODE
                else "*"
                if step.name is None
                else self.name(step.name, True)
            )
            filters = "".join(f"[{self.condition(f, self.rel_path)}]" for f in step.filters)
            steps.append(f"{step.axis.value.lstrip('/')}{shown}{filters}")
        text = "/".join(steps)
        lead = path_writer(RelPath())
        walk = text if lead == "." else f"{lead}/{text}"
        if test.below is None:
            return walk
        return f"exists(({walk}) intersect {self.abs_path(test.below.path)})"

    def conjunct(self, condition: Condition, path_writer: Callable[[RelPath], str]) -> str:
        """A term of ``and``: an ``or`` in parentheses (``and`` binds tighter)."""
        text = self.condition(condition, path_writer)
        return f"({text})" if isinstance(condition, Or) else text

    def position(self, position: Position) -> str:
        bound = "last()" if position.index is None else _number(position.index)
        return f"position() {position.op.value} {bound}"

    def call(self, call: Call, path_writer: Callable[[RelPath], str]) -> str:
        self.check_function(call.name)
        if isinstance(call.arg, Call):
            arg = self.call(call.arg, path_writer)
        elif isinstance(call.arg, AbsPath):
            arg = self.abs_path(call.arg)
        else:
            arg = path_writer(call.arg)
        literals = "".join(", " + self.literal(lit, CompOp.EQ) for lit in call.literals)
        return f"{call.name}({arg}{literals})"

    def check_function(self, name: str) -> None:
        """Raise ValueError where the target language lacks the function."""

    def rel_path(self, path: RelPath) -> str:
        """A path relative to a predicate's context node: ``.``, ``@a``, ``a/b``, ``.//c/text()``."""
        if not path.steps:
            return self.tail(path) if path.tail else "."
        first, *rest = path.steps
        lead = self.step(first)
        lead = "." + lead if first.axis is Axis.DESCENDANT else lead[1:]
        return lead + "".join(self.step(s) for s in rest) + ("/" + self.tail(path) if path.tail else "")

    def tail(self, path: RelPath) -> str:
        if isinstance(path.tail, AttributeTest):
            return "@" + self.name(path.tail.name, element=False)
        return "text()"


class _XQueryWriter(_Writer):
    def prolog(self) -> str:
        lines = [f"xquery version {_string(self.sub.version)};\n"] if self.sub.version else []
        if self.sub.stream_prefix:
            lines.append(f"import module namespace {self.sub.stream_prefix} = {_string(STREAM_MODULE)};\n")
        lines += [f"declare namespace {p} = {_string(uri)};\n" for p, uri in self.sub.namespaces]
        if self.default:
            lines.append(f"declare default element namespace {_string(self.default)};\n")
        return "".join(lines)

    def name(self, name: QName, element: bool, constructor: bool = False) -> str:
        if name.uri == ANY:
            return "*" if name.local == ANY else f"*:{name.local}"
        if name.local == ANY:
            prefix = next((p for p, u in self.namespaces.items() if u == name.uri and name.uri), None)
            return f"{prefix}:*" if prefix else f"Q{{{name.uri}}}*"
        if name.prefix and self.namespaces.get(name.prefix) == name.uri:
            return f"{name.prefix}:{name.local}"
        if name.uri == (self.default if element else ""):
            return name.local
        prefix = next((p for p, u in self.namespaces.items() if u == name.uri), None)
        if prefix is not None:
            return f"{prefix}:{name.local}"
        if constructor:
            raise ValueError(f"the constructor name {name.clark} cannot be written without a prefix for it")
        return f"Q{{{name.uri}}}{name.local}"

    def literal(self, literal: Literal, op: CompOp) -> str:
        return _number(literal.value) if isinstance(literal.value, float) else _string(literal.value)

    def body(self) -> str:
        body = self.sub.body
        if isinstance(body, Filter):
            return self.filter_path(body.path)
        if isinstance(body, JoinFlwr):
            return self.join(body)
        if body.wrapper is None:
            return f"{self.for_where(body)}{self.order(body)}\nreturn {self.ret(body)}"
        with self.scope(body.wrapper):
            text = f"{self.for_where(body)}{self.order(body)}\nreturn {self.ret(body)}"
            tag, attributes = self.start_tag(body.wrapper)
        return f"<{tag}{attributes}>{{\n{text}\n}}</{tag}>"

    @contextmanager
    def scope(self, ctor: Constructor) -> Iterator[None]:
        """A constructor's namespace declarations in scope while its name and content are written."""
        saved = self.namespaces, self.default
        self.namespaces = dict(self.namespaces)
        for prefix, uri in ctor.namespaces:
            if prefix:
                self.namespaces[prefix] = uri
            else:
                self.default = uri
        try:
            yield
        finally:
            self.namespaces, self.default = saved

    def start_tag(self, ctor: Constructor) -> tuple[str, str]:
        """A constructor's tag name and its attributes (declarations first), written in its scope."""
        tag = self.name(ctor.name, element=True, constructor=True)
        declarations = "".join(
            f' {"xmlns:" + prefix if prefix else "xmlns"}="{_attribute_text(uri)}"'
            for prefix, uri in ctor.namespaces
        )
        attributes = "".join(
            f' {self.name(a.name, element=False, constructor=True)}="{self.attribute_value(a)}"'
            for a in ctor.attributes
        )
        return tag, declarations + attributes

    def for_where(self, flwr: Flwr) -> str:
        text = f"for ${flwr.var} in {self.abs_path(flwr.binding)}"
        if flwr.where:
            text += "\nwhere " + " and ".join(self.where_term(c) for c in flwr.where)
        return text

    def join(self, join: JoinFlwr) -> str:
        """``for $a in fr:stream()//x, $b in fr:stream("f")//y where … return …``."""
        bindings = ",\n    ".join(self.stream_binding(b) for b in (join.left, join.right))
        terms = [self.where_term(c) for c in (*join.left.where, *join.right.where)]
        terms += [f"{self.var_path(j.left)} = {self.var_path(j.right)}" for j in join.joins]
        terms.append(self.temporal(join.temporal))
        ret = "(" + ", ".join(self.item(i) for i in join.ret.items) + ")" if isinstance(
            join.ret, Items
        ) else self.item(join.ret)
        return f"for {bindings}\nwhere {' and '.join(terms)}\nreturn {ret}"

    def stream_binding(self, binding: StreamBinding) -> str:
        feed = _string(binding.feed) if binding.feed else ""
        return f"${binding.var} in {self.sub.stream_prefix}:stream({feed}){self.abs_path(binding.path)}"

    def temporal(self, term: Temporal) -> str:
        args = f"${term.first}, ${term.second}, {_string(term.window)}"
        return f"{self.sub.stream_prefix}:{term.kind.value}({args})"

    def where_term(self, condition: Condition) -> str:
        return self.conjunct(condition, self.var_path)

    def var_path(self, path: RelPath) -> str:
        var = f"${path.var or self.flwr_var}"
        steps = "".join(self.step(s) for s in path.steps)
        return var + steps + ("/" + self.tail(path) if path.tail else "")

    @property
    def flwr_var(self) -> str:
        assert isinstance(self.sub.body, Flwr)
        return self.sub.body.var

    def order(self, flwr: Flwr) -> str:
        keys = []
        for spec in flwr.order:
            key = self.var_path(spec.path)
            key = f"number({key})" if spec.numeric else key
            key += " descending" if spec.descending else ""
            key += " empty greatest" if spec.empty_greatest else ""
            keys.append(key)
        return f"\norder by {', '.join(keys)}" if keys else ""

    def ret(self, flwr: Flwr) -> str:
        if isinstance(flwr.ret, Items):
            return "(" + ", ".join(self.item(i) for i in flwr.ret.items) + ")"
        return self.item(flwr.ret)

    def item(self, item: Constructor | RelPath) -> str:
        return self.var_path(item) if isinstance(item, RelPath) else self.constructor(item)

    def constructor(self, ctor: Constructor) -> str:
        with self.scope(ctor):
            tag, attributes = self.start_tag(ctor)
            if not ctor.content:
                return f"<{tag}{attributes}/>"
            return f"<{tag}{attributes}>{''.join(self.content(item) for item in ctor.content)}</{tag}>"

    def attribute_value(self, attribute: AttributeConstructor) -> str:
        return "".join(_attribute_text(p) if isinstance(p, str) else self.content(p) for p in attribute.parts)

    def content(self, item: Constructor | Enclosed | TextContent | CommentContent) -> str:
        if isinstance(item, Constructor):
            return self.constructor(item)
        if isinstance(item, CommentContent):
            return f"<!--{item.text}-->"
        if isinstance(item, Enclosed):
            return "{ " + ", ".join(self.var_path(p) for p in item.paths) + " }" if item.paths else "{}"
        return _text(item.text)


class _XPathWriter(_Writer):
    def __init__(self, sub: Subscription) -> None:
        super().__init__(sub)
        self.prefixes: dict[str, str] = {}

    def name(self, name: QName, element: bool) -> str:
        if name.uri == ANY and name.local == ANY:
            return "*"
        if name.uri == ANY:
            raise ValueError(f"XPath 1.0 has no '*:{name.local}' name test")
        if name.local == ANY and not name.uri:
            raise ValueError("XPath 1.0 has no 'Q{}*' name test")
        if not name.uri:
            return name.local
        return f"{self.prefix_for(name)}:{name.local}"

    def prefix_for(self, name: QName) -> str:
        if name.uri == XML_NS:
            return "xml"  # bound in every XPath context
        for prefix, uri in self.prefixes.items():
            if uri == name.uri:
                return prefix
        prefix = name.prefix
        if not prefix or prefix == "xml" or prefix in self.prefixes:
            prefix = next(f"ns{i}" for i in range(len(self.prefixes) + 1) if f"ns{i}" not in self.prefixes)
        self.prefixes[prefix] = name.uri
        return prefix

    def check_function(self, name: str) -> None:
        if name not in XPATH1_FUNCTIONS:
            raise ValueError(f"XPath 1.0 has no function {name}()")

    def literal(self, literal: Literal, op: CompOp) -> str:
        value = literal.value
        if isinstance(value, float):
            text = format(Decimal(repr(value)), "f")
            return text.rstrip("0").rstrip(".") if "." in text else text
        if op not in (CompOp.EQ, CompOp.NE):
            raise ValueError(f"XPath 1.0 cannot order strings: '{op.value}' with the string {value!r}")
        return _xpath_string(value)


#: The subset's functions that XPath 1.0 has too, with the same meaning on one node.
XPATH1_FUNCTIONS = ("contains", "starts-with", "normalize-space", "string-length", "string", "count")


def _string(value: str) -> str:
    """An XQuery string literal: ``"`` doubled, ``&``, CR and LF as references (CR would read as
    LF; LF as a reference keeps the text on one line, as texts are shown)."""
    escaped = value.replace("&", "&amp;").replace('"', '""').replace("\r", "&#13;").replace("\n", "&#10;")
    return '"' + escaped + '"'


def _number(value: float) -> str:
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _text(value: str) -> str:
    """Literal constructor content; whitespace-only text as references so it is not boundary space."""
    if value and all(ch in " \t\r\n" for ch in value):
        return "".join(f"&#{ord(ch)};" for ch in value)
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace("\r", "&#13;")
    return escaped.replace("{", "{{").replace("}", "}}")


def _attribute_text(value: str) -> str:
    """A constant attribute value as written in a start tag: read back to ``value`` exactly."""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    escaped = escaped.replace("\t", "&#9;").replace("\n", "&#10;").replace("\r", "&#13;")
    return escaped.replace("{", "{{").replace("}", "}}")


def _xpath_string(value: str) -> str:
    """An XPath 1.0 string literal (no escapes in XPath 1.0: concat() when both quotes occur)."""
    if '"' not in value:
        return f'"{value}"'
    if "'" not in value:
        return f"'{value}'"
    parts = value.split('"')
    return "concat(" + ", '\"', ".join(f'"{p}"' for p in parts) + ")"
