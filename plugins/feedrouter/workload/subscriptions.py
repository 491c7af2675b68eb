"""Random subscription texts that follow a DTD (the query generator of paper 000, section 6.1).

Paths are random walks down the DTD element graph, so they can select something; predicates compare
nodes only with values the document generator gives them (:mod:`feedrouter.workload.values`), so
they can hold. The workload parameters of the paper (Table 1):

* ``D1``: the most steps of a binding path (``for``) or of a filter path;
* ``PP``: how many ``where`` predicate paths (an int or an inclusive ``(low, high)`` range);
* ``RP``: how many return paths (int or range);
* ``D2``: the most element steps of a predicate or return path;
* ``DSProb``: the probability that a step is ``//`` instead of ``/``;
* ``max_value`` (MaxValue): numeric literals are 1..max_value;
* ``wildcard``: the probability that a name test is ``*``.

Texts are unique within one call when the DTD leaves room for it (the paper hashes sorted texts; we
compare texts).

What the texts use (all inside SUBSCRIPTIONS.md): absolute binding and filter paths with ``/``,
``//`` and ``*``; step predicates ``[@a op lit]``, ``[. op lit]``, ``[text() op lit]``,
``[a/b op lit]``, ``[a/@b op lit]``, ``[.//c]``, nested ``[a[@b = 2]]`` and ``and``; where conditions
``$v/a/b op lit``, ``$v//c op lit``, ``$v/@a op lit``, ``$v/text() op lit`` and existence ``$v/d``
joined by ``and``; returns ``{ $v }``, ``{ $v/a }``, ``{ $v//b }``, ``{ $v/a/text() }``, a leading
``{ $v/@a }``, nested ``<part>{ ... }</part>``, literal text (``r&amp;d`` included), bare
``return $v/a``; an optional ``<results>{ ... }</results>`` wrapper; ``declare namespace`` lines when
the DTD uses prefixes. String literals escape ``"`` as ``""`` and ``&`` as ``&amp;``. A numeric literal
is only compared with nodes that always hold numbers, so Saxon never raises FORG0001 on them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from feedrouter.schema import DtdGraph
from feedrouter.workload.values import (
    SPECIAL_WORDS,
    WORDS,
    Domain,
    attribute_domain,
    element_domain,
    is_namespace_attribute,
)

Form = Literal["flwr", "filter", "mixed"]
Range = int | tuple[int, int]
Context = frozenset[str] | None  # None: the document node

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class SubscriptionOptions:
    """The knobs of :func:`generate_subscriptions` (see its docstring)."""

    form: Form = "flwr"
    D1: int = 6
    PP: Range = (1, 3)
    RP: Range = (1, 4)
    D2: int = 2
    DSProb: float = 0.2
    wildcard: float = 0.1
    max_value: int = 20
    numeric_ratio: float = 0.7
    step_predicate_prob: float = 0.15
    filter_predicate_prob: float = 0.5
    exists_prob: float = 0.2
    special_prob: float = 0.1
    wrapper_prob: float = 0.3
    prefix: str | None = None
    # the language round (issue 14): how often a predicate or where condition uses or, not()/empty()/
    # exists(), a string function, count() or a literal sequence, and a step gets a position
    conditions: float = 0.0
    positions: float = 0.0
    unions: float = 0.0  # a filter is a union of two paths
    orders: float = 0.0  # a FLWR has an order by clause
    any_namespace: float = 0.0  # a name test is written *:name (any namespace, or none)
    # how often a FLWR's result uses the constructors of the language round (attributes, attribute
    # value templates, attribute copies, comments, namespace declarations, a sequence, a let alias)
    constructors: float = 0.0
    # how often a step, condition or filter is written in the language round's other spellings
    # (child::/descendant::, self::, descendant-or-self::, @*, a text() filter, the version line)
    spellings: float = 0.0
    # how often a step of a binding or filter path is followed by backward steps (parent::,
    # ancestor::, ancestor-or-self::, '..'), and a predicate or where condition starts with them
    backward: float = 0.0


def generate_subscriptions(
    graph: DtdGraph,
    count: int,
    *,
    seed: int,
    form: Form = "flwr",
    D1: int = 6,
    PP: Range = (1, 3),
    RP: Range = (1, 4),
    D2: int = 2,
    DSProb: float = 0.2,
    wildcard: float = 0.1,
    max_value: int = 20,
    numeric_ratio: float = 0.7,
    prefix: str | None = None,
    **options: float,
) -> list[str]:
    """Generate ``count`` subscription texts for documents of ``graph``'s DTD.

    Args:
        graph: the DTD the subscriptions are written against.
        count: how many subscriptions.
        seed: the seed; the same seed (and arguments) give the same texts.
        form: "flwr" (for/where/return, paper 000), "filter" (one absolute path with nested path
            predicates, paper 002) or "mixed" (each text picks one at random).
        D1, PP, RP, D2, DSProb, wildcard, max_value: the workload parameters (see the module doc).
        numeric_ratio: how often a comparison of a numeric node uses a numeric literal (the others
            compare its string with a string literal, which XQuery compares as strings).
        prefix: text put before every subscription, e.g. a comment ``(: bench :)`` or a prolog of
            ``declare namespace`` lines (namespace declarations the DTD fixes are added anyway).
        **options: further :class:`SubscriptionOptions` fields: ``step_predicate_prob`` (a predicate
            on a binding step), ``filter_predicate_prob`` (on a filter step), ``exists_prob``
            (existence tests among predicates), ``special_prob`` (string literals with escapes or
            non-ASCII text), ``wrapper_prob`` (a constant element around a FLWR), and for the
            language round ``conditions`` (a predicate or where condition is an ``or``, ``not()``,
            ``empty()``, ``exists()``, a string function, ``count()`` or a literal sequence) and
            ``positions`` (a step gets ``[1]``, ``[last()]``, ``[position() <= 2]``...).

    Example:
        >>> from feedrouter.workload import dtds
        >>> generate_subscriptions(dtds.load("bib"), 1, seed=3, form="filter", D1=2)[0].startswith("/")
        True
    """
    opts = SubscriptionOptions(
        form, D1, PP, RP, D2, DSProb, wildcard, max_value, numeric_ratio, prefix=prefix, **options
    )
    rng = random.Random(f"subs:{seed}")
    writer = SubscriptionWriter(graph, opts, rng)
    texts: list[str] = []
    seen: set[str] = set()
    for _ in range(count * 20):
        text = writer.subscription()
        if text not in seen:
            seen.add(text)
            texts.append(text)
        if len(texts) == count:
            return texts
    # The DTD is too small for this many distinct texts: repeat rather than return fewer.
    return (texts * (count // max(1, len(texts)) + 1))[:count]


def namespace_prolog(graph: DtdGraph) -> str:
    """``declare namespace`` lines for the prefixes the DTD's names use (its fixed URIs, else a URN)."""
    fixed = graph.namespaces()
    names = set(graph.element_names) | {a for e in graph.element_names for a in graph.attributes(e)}
    prefixes = sorted({n.split(":", 1)[0] for n in names if ":" in n and not is_namespace_attribute(n)})
    lines = [
        f'declare namespace {p} = "{fixed.get(p, "urn:feedrouter:" + p)}";' for p in prefixes if p != "xml"
    ]
    if "" in fixed:
        lines.append(f'declare default element namespace "{fixed[""]}";')
    return "\n".join(lines)


def xquery_string(value: str) -> str:
    """A string literal for ``value``: quotes doubled, ``&`` as ``&amp;`` (XQuery expands references)."""
    return '"' + value.replace("&", "&amp;").replace('"', '""') + '"'


@dataclass
class SubscriptionWriter:
    """Writes random subscription texts for one DTD; the building block of the public generators."""

    graph: DtdGraph
    opts: SubscriptionOptions
    rng: random.Random
    prolog: str = field(init=False)
    depth: int = field(init=False, default=0)  # the least depth of the step being written

    def __post_init__(self) -> None:
        parts = [self.opts.prefix or "", namespace_prolog(self.graph)]
        self.prolog = "".join(p + "\n" for p in parts if p)

    def subscription(self) -> str:
        form = self.opts.form
        if form == "mixed":
            form = self.rng.choice(("flwr", "filter"))
        body = self.filter() if form == "filter" else self.flwr()
        if self.opts.spellings and self.rng.random() < self.opts.spellings / 4:
            return f'xquery version "{self.rng.choice(("3.1", "1.0"))}";\n' + self.prolog + body
        return self.prolog + body

    # ------------------------------------------------------------------------------------ forms

    def filter(self) -> str:
        """``/a[b/c[@d = 1]]//e[.//f]``: an absolute path with nested path predicates."""
        text, selected = self.path(None, self._length(self.opts.D1), self.opts.filter_predicate_prob)
        if self.opts.unions and self.rng.random() < self.opts.unions:
            other, _ = self.path(None, self._length(self.opts.D1), self.opts.filter_predicate_prob)
            text += f" | {other}"
        elif (
            self.opts.spellings and self.rng.random() < self.opts.spellings / 2 and self._text_only(selected)
        ):
            text += "/text()"  # a text-node filter: the text of the selected elements
        return text

    def flwr(self) -> str:
        """``for $v in <path> where <PP conditions> return <RP paths in a constructor>``."""
        var = "$" + self.rng.choice(("v", "x", "s", "b", "item"))
        path, bound = self.path(None, self._length(self.opts.D1), self.opts.step_predicate_prob, inner=True)
        conditions = self.conditions(var, bound, self._count(self.opts.PP))
        where = f"\nwhere {' and '.join(conditions)}" if conditions else ""
        if self.opts.orders and self.rng.random() < self.opts.orders:
            where += self._order(var, bound)
        rich = bool(self.opts.constructors) and self.rng.random() < self.opts.constructors
        if rich:
            lets, result = self._rich_result(var, bound)
            text = f"for {var} in {path}{lets}{where}\nreturn {result}"
        else:
            text = f"for {var} in {path}{where}\nreturn {self.result(var, bound)}"
        if self.rng.random() < self.opts.wrapper_prob:
            # copied attributes bring their own prefixes: no prefixed wrapper around a wildcard copy
            start = self.rng.choice(_WRAPPERS[: 2 if "/@* }" in text else 3]) if rich else "<results>"
            text = f"{start}{{\n{text}\n}}</results>"
        return text

    # ------------------------------------------------------------------------------------ paths

    def path(
        self, context: Context, length: int, predicate_prob: float, inner: bool = False
    ) -> tuple[str, frozenset[str]]:
        """A path of up to ``length`` steps from ``context``; returns its text and end elements.
        ``self.depth`` follows the least depth of the current step's nodes (for backward steps)."""
        text, current = "", context
        self.depth = 0
        for _ in range(length):
            step = self.step(current, inner)
            if step is None:
                break
            axis, test, current = step
            preds = ""
            self.depth += 1  # the predicates' context: the step's nodes
            while self.rng.random() < predicate_prob and len(preds) < 200:
                found = self.predicate(current, 2)
                preds += f"[{found}]" if found else ""
            if self.opts.positions and self.rng.random() < self.opts.positions:
                preds += self._position()
            if self.opts.spellings and self.rng.random() < self.opts.spellings:
                axis, test, preds = self._spelled_step(axis, test, preds, current)
            text += f"{axis}{test}{preds}"
            if self.opts.backward and self.rng.random() < self.opts.backward:
                upward = self._backward_step(current, self.depth)
                if upward is not None:
                    text, current, self.depth = text + upward[0], upward[1], upward[2]
        assert current is not None, "the document node always has the root below it"
        return text, current

    def step(self, context: Context, inner: bool = False) -> tuple[str, str, frozenset[str]] | None:
        """One random step: axis, name test and the elements it may select (None: nowhere to go).

        With ``inner`` the step prefers elements with children, so that a binding variable usually
        has something below it for where and return paths.
        """
        descendant = self.rng.random() < self.opts.DSProb
        candidates = self._candidates(context, descendant)
        if not candidates:
            return None
        if inner and self.rng.random() < 0.7:
            candidates = [n for n in candidates if self.graph.children(n)] or candidates
        if self.rng.random() < self.opts.wildcard:
            return ("//" if descendant else "/"), "*", frozenset(candidates)
        name = self._pick(context, candidates, descendant)
        anywhere = self.opts.any_namespace and self.rng.random() < self.opts.any_namespace
        written = f"*:{name.split(':')[-1]}" if anywhere else name
        if written != name:  # any namespace: every element of that local name may be selected
            local = name.split(":")[-1]
            same = frozenset(n for n in candidates if n.split(":")[-1] == local)
            return ("//" if descendant else "/"), written, same
        return ("//" if descendant else "/"), name, frozenset({name})

    def _candidates(self, context: Context, descendant: bool) -> list[str]:
        if context is None:
            found = self.graph.descendants_from(None) if descendant else {self.graph.root}
        else:
            pick = self.graph.reachable if descendant else self.graph.children
            found = {n for e in context for n in pick(e)}
        return sorted(found)

    def _pick(self, context: Context, candidates: list[str], descendant: bool) -> str:
        # '//' should usually skip levels, as in the paper's workloads; a child is allowed too.
        if descendant and context is not None and self.rng.random() < 0.7:
            far = [n for n in candidates if all(n not in self.graph.children(e) for e in context)]
            if far:
                return self.rng.choice(far)
        return self.rng.choice(candidates)

    def relative(
        self, context: frozenset[str], length: int, *, leading: str = ""
    ) -> tuple[str, frozenset[str]]:
        """A relative element path of 1..length steps (``a/b``, ``.//c``, ``$v//*``) and its end elements.

        ``leading`` is the variable the path starts from; without it the path is written for a
        predicate (``a/b``, ``.//c``). The text is empty when nothing lies below ``context``.
        """
        text, current = "", context
        for index in range(length):
            step = self.step(current)
            if step is None:
                break
            axis, test, current = step
            if index == 0:
                # Inside a predicate a child path is bare (``a/b``) and a descendant one is ``.//a``.
                axis = leading + axis if leading else ("" if axis == "/" else ".//")
            text += f"{axis}{test}"
        return text, current

    # ------------------------------------------------------------------------------------ predicates

    def predicate(self, context: frozenset[str], depth: int) -> str | None:
        """One step predicate (comparison or existence test), sometimes two joined by ``and``.

        None when the context offers nothing to test (an EMPTY element without attributes).
        """
        first = self._predicate_part(context, depth)
        second = self._predicate_part(context, depth) if first and self.rng.random() < 0.15 else None
        return f"{_term(first)} and {_term(second)}" if first and second else first

    def _predicate_part(self, context: frozenset[str], depth: int) -> str | None:
        if self.opts.conditions and self.rng.random() < self.opts.conditions:
            found = self._language_condition(context, depth, "")
            if found:
                return found
        if self.opts.spellings and self.rng.random() < self.opts.spellings:
            found = self._spelled_condition(context, "")
            if found:
                return found
        if self.opts.backward and self.rng.random() < self.opts.backward:
            found = self._backward_condition(context, "", self.depth)
            if found:
                return found
        roll = self.rng.random()
        if roll < self.opts.exists_prob:
            found = self._exists(context, depth)
            if found:
                return found
        if roll < 0.5:
            found = self._attribute_comparison(context, "")
            if found:
                return found
        if roll < 0.65:
            found = self._self_comparison(context, ".")
            if found:
                return found
        return (
            self._path_comparison(context, "")
            or self._attribute_comparison(context, "")
            or self._self_comparison(context, ".")
        )

    # ------------------------------------------------------------------------------------ the language round

    def _language_condition(self, context: frozenset[str], depth: int, lead: str) -> str | None:
        """One of the conditions of the language round, on the context (``lead``: a where clause's
        variable and '/', or '' in a predicate)."""
        kind = self.rng.choice(("or", "not", "empty", "exists", "string", "string", "count", "sequence"))
        if kind == "or":
            first, second = (
                self._plain_condition(context, depth, lead),
                self._plain_condition(context, depth, lead),
            )
            return f"{first} or {second}" if first and second and first != second else first
        if kind == "not":
            inner = self._plain_condition(context, depth, lead)
            return f"not({inner})" if inner else None
        if kind in ("empty", "exists", "count"):
            text, _ = self.relative(context, self._length(self.opts.D2), leading=lead.rstrip("/"))
            if not text:
                return None
            if kind == "count":
                return f"count({text}) {self.rng.choice(COMPARISONS)} {self.rng.randint(0, 3)}"
            return f"{kind}({text})"
        if kind == "sequence":
            return self._sequence_comparison(context, lead)
        return self._string_test(context, lead)

    def _plain_condition(self, context: frozenset[str], depth: int, lead: str) -> str | None:
        if lead:
            return self._plain_where(lead.rstrip("/"), context)
        return (
            self._exists(context, depth)
            or self._attribute_comparison(context, "")
            or (self._self_comparison(context, "."))
        )

    def _plain_where(self, var: str, bound: frozenset[str]) -> str | None:
        found = self._attribute_comparison(bound, var + "/") or self._path_comparison(bound, var)
        return found or None

    def _string_subject(self, context: frozenset[str], lead: str) -> tuple[str, list[Domain]] | None:
        """A single-valued subject for a string function: the node itself or one of its attributes."""
        attrs = self._attributes(context)
        if attrs and self.rng.random() < 0.5:
            attr = self.rng.choice(attrs)
            domains = [
                attribute_domain(self.graph, e, attr) for e in context if attr in self.graph.attributes(e)
            ]
            return f"{lead}@{attr}", domains
        domains = [element_domain(self.graph, e) for e in context]
        return (lead.rstrip("/") or "."), domains

    def _string_test(self, context: frozenset[str], lead: str) -> str | None:
        subject = self._string_subject(context, lead)
        if subject is None:
            return None
        path, domains = subject
        value = self._string_value(self.rng.choice(domains)) if domains else "x"
        function = self.rng.choice(
            ("contains", "starts-with", "ends-with", "matches", "lower-case", "upper-case", "space", "length")
        )
        if function == "contains":
            cut = self.rng.randint(0, max(0, len(value) - 2))
            return f"contains({path}, {xquery_string(value[cut : cut + 3])})"
        if function == "starts-with":
            return f"starts-with({path}, {xquery_string(value[:2])})"
        if function == "ends-with":
            return f"ends-with({path}, {xquery_string(value[-2:])})"
        if function == "matches":
            flags = self.rng.choice(("", "i", "q", "s"))
            needle = value[:2] if flags == "q" else "^" + "".join(c for c in value[:2] if c.isalnum())
            return f"matches({path}, {xquery_string(needle)}, {xquery_string(flags)})"
        if function == "lower-case":
            return f"lower-case({path}) = {xquery_string(value.lower())}"
        if function == "upper-case":
            return f"upper-case({path}) = {xquery_string(value.upper())}"
        if function == "space":
            return f"normalize-space({path}) = {xquery_string(' '.join(value.split()))}"
        return f"string-length({path}) {self.rng.choice(COMPARISONS)} {self.rng.randint(1, 6)}"

    def _sequence_comparison(self, context: frozenset[str], lead: str) -> str | None:
        subject = self._string_subject(context, lead)
        if subject is None or not subject[1] or not all(d.comparable for d in subject[1]):
            return None
        path, domains = subject
        values = sorted({self._string_value(self.rng.choice(domains)) for _ in range(3)})
        literals = ", ".join(xquery_string(v) for v in values)
        return f"{path} {self.rng.choice(('=', '=', '!='))} ({literals})"

    def _order(self, var: str, bound: frozenset[str]) -> str:
        """``order by`` one or two keys: an attribute, a child's value or the node, sometimes as a
        number, descending, or with the empty key greatest."""
        keys = []
        for _ in range(self.rng.randint(1, 2)):
            attrs = self._attributes(bound)
            upward = self._upward_return(var, bound) if self.opts.backward else None
            if upward and self.rng.random() < self.opts.backward:
                key = upward
            elif attrs and self.rng.random() < 0.5:
                key = f"{var}/@{self.rng.choice(attrs)}"
            else:
                text, _ = self.relative(bound, 1, leading=var)
                key = text or var
            if self.rng.random() < 0.3:
                key = f"number({key})"
            key += " descending" if self.rng.random() < 0.4 else ""
            key += " empty greatest" if self.rng.random() < 0.3 else ""
            keys.append(key)
        return f"\norder by {', '.join(keys)}"

    # ------------------------------------------------------------------------------------ backward axes

    def _backward_step(self, current: frozenset[str], depth: int) -> tuple[str, frozenset[str], int] | None:
        """``/parent::a``, ``/ancestor::b[@c]``, ``/ancestor-or-self::*``, ``/..`` after a step whose
        elements are ``current`` (``..`` only where the node below is never the root element: the
        language refuses it where it could select the document node); the new current elements."""
        parents = self._parents_of(current)
        ancestors = self._ancestors_of(current)
        if not ancestors:
            return None
        kind = self.rng.choice(("parent", "parent", "ancestor", "ancestor", "ancestor-or-self", ".."))
        if kind == ".." and depth >= 2 and parents:
            return "/..", parents, depth - 1
        if kind in ("parent", "..") and parents:
            name = self.rng.choice([*sorted(parents), "*"])
            return f"/parent::{name}", parents if name == "*" else frozenset({name}), max(depth - 1, 1)
        pool = ancestors | current if kind == "ancestor-or-self" else ancestors
        name = self.rng.choice(sorted(pool))
        axis = "ancestor-or-self" if kind == "ancestor-or-self" else "ancestor"
        predicate = ""
        roll = self.rng.random()
        if roll < 0.3:
            found = self._attribute_comparison(frozenset({name}), "") or self._exists(frozenset({name}), 1)
            predicate = f"[{found}]" if found else ""
        elif roll < 0.45:
            predicate = self.rng.choice(("[1]", "[last()]"))  # the nearest, the farthest
        return f"/{axis}::{name}{predicate}", frozenset({name}), 1

    def _backward_condition(self, context: frozenset[str], lead: str, depth: int) -> str | None:
        """A condition starting with backward steps: ``../title = "x"``, ``ancestor::sec[@id]``,
        ``parent::*/@lang``, ``ancestor-or-self::story/h`` (``lead``: a where clause's variable)."""
        if self.rng.random() < 0.35:
            turned = self._turning_condition(context, lead)
            if turned:
                return turned
        parents = self._parents_of(context)
        ancestors = self._ancestors_of(context)
        if not ancestors:
            return None
        if parents and self.rng.random() < 0.5:
            step = "../" if depth >= 2 and self.rng.random() < 0.5 else "parent::*/"
            target = parents
        else:
            axis = self.rng.choice(("ancestor", "ancestor", "ancestor-or-self"))
            name = self.rng.choice(sorted(ancestors | context if axis == "ancestor-or-self" else ancestors))
            nearest = self.rng.choice(("", "", "", "[1]", "[last()]"))  # reverse axes count nearest first
            step, target = f"{axis}::{name}{nearest}/", frozenset({name})
        found = self._attribute_comparison(target, "") or self._path_comparison(target, "")
        if found is None or self.rng.random() < 0.3:
            return f"{lead}{step.rstrip('/')}"
        if found.startswith("."):  # './/x = 1' below the step: 'ancestor::a//x = 1'
            return f"{lead}{step.rstrip('/')}{found[1:]}"
        return f"{lead}{step}{found}"

    def _turning_condition(self, context: frozenset[str], lead: str) -> str | None:
        """A condition path that goes down, then up: ``.//p/ancestor::sec[@id]/title = "x"``,
        ``a//b/..``, ``b/c/parent::*/@d`` (no positions: the language refuses them there)."""
        down, reached = self.relative(context, self.rng.randint(1, 2), leading=lead.rstrip("/"))
        if not down:
            return None
        parents, ancestors = self._parents_of(reached), self._ancestors_of(reached)
        kind = self.rng.choice(("..", "parent", "ancestor", "ancestor", "ancestor-or-self"))
        if kind in ("..", "parent") and parents:
            name = self.rng.choice([*sorted(parents), "*"])
            step = "/.." if kind == ".." else f"/parent::{name}"
            target = parents if kind == ".." or name == "*" else frozenset({name})
        elif ancestors:
            pool = ancestors | reached if kind == "ancestor-or-self" else ancestors
            name = self.rng.choice(sorted(pool))
            axis = "ancestor-or-self" if kind == "ancestor-or-self" else "ancestor"
            found = self._attribute_comparison(frozenset({name}), "") if self.rng.random() < 0.3 else None
            step, target = f"/{axis}::{name}" + (f"[{found}]" if found else ""), frozenset({name})
        else:
            return None
        rest = self._attribute_comparison(target, "") or self._path_comparison(target, "")
        if rest is None or self.rng.random() < 0.35:
            return f"{down}{step}"
        return f"{down}{step}{rest[1:]}" if rest.startswith(".") else f"{down}{step}/{rest}"

    def _upward_return(self, var: str, bound: frozenset[str]) -> str | None:
        """``$v/..``, ``$v/parent::*/@a``, ``$v/ancestor::story/title``: a return path starting upward."""
        parents, ancestors = self._parents_of(bound), self._ancestors_of(bound)
        if not ancestors:
            return None
        if parents and self.rng.random() < 0.4:
            step, target = ("/.." if self.depth >= 2 else "/parent::*"), parents
        else:
            name = self.rng.choice(sorted(ancestors))
            step, target = f"/ancestor::{name}{self.rng.choice(('', '', '[1]'))}", frozenset({name})
        below, _ = self.relative(target, 1, leading="") if self.rng.random() < 0.6 else ("", target)
        if below.startswith(".//"):
            return f"{var}{step}{below[1:]}"
        return f"{var}{step}/{below}" if below else f"{var}{step}"

    def _parents_of(self, elements: frozenset[str]) -> frozenset[str]:
        return frozenset(p for p in self.graph.element_names if self.graph.children(p) & elements)

    def _ancestors_of(self, elements: frozenset[str]) -> frozenset[str]:
        return frozenset(p for p in self.graph.element_names if self.graph.reachable(p) & elements)

    # ------------------------------------------------------------------------------------ spellings

    def _text_only(self, elements: frozenset[str]) -> bool:
        return all(self.graph.text_only(e) for e in elements)

    def _spelled_step(
        self, axis: str, test: str, preds: str, selected: frozenset[str]
    ) -> tuple[str, str, str]:
        """The same step written another way: ``/child::a``, ``/descendant::a`` (no positions: they
        count differently there), ``//*[self::a or self::b]`` for a wildcard, ``/a/self::a``."""
        names = sorted(n for n in selected if ":" not in n)
        roll = self.rng.random()
        if test == "*" and roll < 0.15 and "" not in self.graph.namespaces():
            return axis, "Q{}*", preds  # any element in no namespace: all of this DTD's
        if test == "*" and names and roll < 0.5:
            picked = sorted(set(self.rng.sample(names, min(2, len(names)))))
            tests = " or ".join(f"self::{n}" for n in picked)
            return axis, test, f"[{tests}]{preds}"
        if roll < 0.6 and test != "*" and "[" not in preds:
            return axis, test, f"/self::{test}"
        if axis == "//" and "position()" not in preds and "last()" not in preds and not _numbered(preds):
            return "/descendant::", test, preds
        return axis + "child::" if axis == "/" else axis, test, preds

    def _spelled_condition(self, context: frozenset[str], lead: str) -> str | None:
        """A condition in the round's other spellings: ``@*`` tests, ``self::a``,
        ``descendant-or-self::a`` and ``.//self::a`` existence (``lead``: a where clause's variable)."""
        kind = self.rng.choice(("any attribute", "any attribute", "self", "descendant-or-self"))
        if kind == "any attribute":
            attrs = self._attributes(context)
            if not attrs:
                return None
            attr = self.rng.choice(attrs)
            domains = [
                attribute_domain(self.graph, e, attr) for e in context if attr in self.graph.attributes(e)
            ]
            if self.rng.random() < 0.3 or not all(d.comparable for d in domains):
                return f"{lead}@*"
            value = self._string_value(self.rng.choice(domains))
            return f"{lead}@* {self.rng.choice(('=', '=', '!='))} {xquery_string(value)}"
        if kind == "self":
            names = sorted(context)
            picked = self.rng.choice(names)
            if ":" in picked:
                return None
            other = self.rng.choice(sorted(self.graph.element_names))
            test = f"{lead}self::{picked}"
            return test if other == picked or ":" in other else f"{test} or {lead}self::{other}"
        text, _ = self.relative(context, 1)
        name = text.rsplit("/", 1)[-1]
        if not text or name == "*" or name.startswith("*:"):
            return None
        if self.rng.random() < 0.5:
            return f"{lead}descendant-or-self::{name}"
        return f"{lead.rstrip('/')}//self::{name}" if lead else f".//self::{name}"

    # ------------------------------------------------------------------------------------ constructors

    def _rich_result(self, var: str, bound: frozenset[str]) -> tuple[str, str]:
        """A ``let`` alias (or nothing) and a return clause with the round's constructors: attributes
        (constant, value templates, copies of the bound node's), comments, namespace declarations,
        or a sequence of items."""
        lets = ""
        path = self._return_path(var, bound)
        if path != var and "/text()" not in path and self.rng.random() < 0.3:
            lets, path = f"\nlet $t := {path}", "$t"
        attrs = self._attributes(bound)
        kind = self.rng.choice(("attributes", "copy", "comment", "namespace", "sequence"))
        if kind == "sequence":
            other = self._return_path(var, bound)
            return lets, f"({path}, <sep/>, {other})"
        if kind == "comment":
            return lets, f"<hit><!-- {self.rng.choice(WORDS)} -->{{ {path} }}</hit>"
        if kind == "namespace":
            return lets, f'<h:hit xmlns:h="urn:feedrouter:hit" h:src="wire">{{ {path} }}</h:hit>'
        if kind == "copy" and attrs:
            copied = "@*" if self.rng.random() < 0.4 else "@" + self.rng.choice(attrs)
            return lets, f"<hit>{{ {var}/{copied} }}{{ {path} }}</hit>"
        value = f"{var}/@{self.rng.choice(attrs)}" if attrs else self._return_path(var, bound)
        template = f"{{ {value} }}" if "/text()" not in value else "x"
        return lets, f'<hit src="feed &amp; wire" of="#{template}">{{ {path} }}</hit>'

    def _position(self) -> str:
        return self.rng.choice(("[1]", "[2]", "[last()]", "[position() <= 2]", "[position() > 1]"))

    def _exists(self, context: frozenset[str], depth: int) -> str | None:
        text, target = self.relative(context, self._length(self.opts.D2))
        if not text:
            return None
        nested = self.predicate(target, depth - 1) if depth > 1 and self.rng.random() < 0.4 else None
        return f"{text}[{nested}]" if nested else text

    def _self_comparison(self, context: frozenset[str], lead: str) -> str | None:
        """``. = "x"`` / ``text() >= 3`` in a predicate, ``$v/text() >= 3`` in where."""
        domains = [element_domain(self.graph, e) for e in context]
        if not all(d.comparable for d in domains):
            return None
        if lead != ".":  # where conditions are paths from the variable: ``$v/text()``, never ``$v``
            return f"{lead}/text() {self.comparison(domains)}"
        lhs = "text()" if self.rng.random() < 0.3 else "."
        return f"{lhs} {self.comparison(domains)}"

    def _attribute_comparison(self, context: frozenset[str], lead: str) -> str | None:
        attrs = self._attributes(context)
        if not attrs:
            return None
        attr = self.rng.choice(attrs)
        domains = [attribute_domain(self.graph, e, attr) for e in context if attr in self.graph.attributes(e)]
        if not all(d.comparable or d.kind == "id" for d in domains):
            return f"{lead}@{attr}"
        return f"{lead}@{attr} {self.comparison(domains)}"

    def _path_comparison(self, context: frozenset[str], lead: str) -> str | None:
        """``a/b = 3``, ``.//c/@d != "x"``, ``a/text() = "y"``: a relative path ending at a value."""
        for _ in range(6):
            text, target = self.relative(context, self._length(self.opts.D2), leading=lead)
            if not text:
                return None
            attrs = self._attributes(target)
            if attrs and self.rng.random() < 0.4:
                attr = self.rng.choice(attrs)
                domains = [
                    attribute_domain(self.graph, e, attr) for e in target if attr in self.graph.attributes(e)
                ]
                if all(d.comparable for d in domains):
                    return f"{text}/@{attr} {self.comparison(domains)}"
            domains = [element_domain(self.graph, e) for e in target]
            if all(d.comparable for d in domains):
                tail = "/text()" if self.rng.random() < 0.15 else ""
                return f"{text}{tail} {self.comparison(domains)}"
        return None

    def _attributes(self, context: frozenset[str]) -> list[str]:
        return sorted({a for e in context for a in self.graph.attributes(e) if not is_namespace_attribute(a)})

    # ------------------------------------------------------------------------------------ literals

    def comparison(self, domains: list[Domain]) -> str:
        """``op literal`` that the nodes of ``domains`` can satisfy (numeric only if all are numbers)."""
        if all(d.kind == "number" for d in domains) and self.rng.random() < self.opts.numeric_ratio:
            op = self.rng.choice(COMPARISONS)
            return f"{op} {self.rng.randint(1, self.opts.max_value)}"
        op = self.rng.choices(COMPARISONS, weights=(10, 6, 1, 0.5, 1, 0.5))[0]
        return f"{op} {xquery_string(self._string_value(self.rng.choice(domains)))}"

    def _string_value(self, domain: Domain) -> str:
        if domain.kind == "number":
            return str(self.rng.randint(1, self.opts.max_value))
        if domain.kind == "enum":
            return self.rng.choice(domain.values)
        if domain.kind == "id":
            return f"n{self.rng.randint(1, 10)}"
        special = domain.kind == "word" and self.rng.random() < self.opts.special_prob
        return self.rng.choice(SPECIAL_WORDS if special else WORDS)

    # ------------------------------------------------------------------------------------ where, return

    def conditions(self, var: str, bound: frozenset[str], count: int) -> list[str]:
        """``count`` where conditions, each on a different path (``$v/@a = 1 and $v/@a = 2`` is dead)."""
        found: dict[str, str] = {}
        for _ in range(count * 3):
            condition = self.condition(var, bound)
            lhs = condition.split(" ", 1)[0].removesuffix("/text()")
            if condition and lhs not in found:
                found[lhs] = condition
            if len(found) == count:
                break
        return list(found.values())

    def condition(self, var: str, bound: frozenset[str]) -> str:
        """One ``where`` condition on ``var``: a comparison of a relative path, or an existence test."""
        if self.opts.conditions and self.rng.random() < self.opts.conditions:
            found = self._language_condition(bound, 1, var + "/")
            if found:
                return f"({found})" if " or " in found else found
        if self.opts.spellings and self.rng.random() < self.opts.spellings:
            found = self._spelled_condition(bound, var + "/")
            if found:
                return f"({found})" if " or " in found else found
        if self.opts.backward and self.rng.random() < self.opts.backward:
            found = self._backward_condition(bound, var + "/", self.depth)
            if found:
                return found
        if self.rng.random() < self.opts.exists_prob:
            text, _ = self.relative(bound, self._length(self.opts.D2), leading=var)
            if text:
                return text
        roll = self.rng.random()
        found = self._attribute_comparison(bound, var + "/") if roll < 0.3 else None
        found = found or self._path_comparison(bound, var)
        found = found or self._attribute_comparison(bound, var + "/") or self._self_comparison(bound, var)
        return found or ""

    def result(self, var: str, bound: frozenset[str]) -> str:
        """The return clause: RP paths, bare or in (possibly nested) element constructors."""
        paths = [self._return_path(var, bound) for _ in range(self._count(self.opts.RP))]
        if len(paths) == 1 and paths[0] != var and self.rng.random() < 0.15:
            return paths[0]
        parts = [self._enclose(p) for p in paths]
        if self.rng.random() < 0.15:
            parts.insert(0, self.rng.choice(("match: ", "hit ", "r&amp;d ")))
        name = self.rng.choice(("r", "result", "match", "hit"))
        return f"<{name}>{''.join(parts)}</{name}>"

    def _enclose(self, path: str) -> str:
        if self.rng.random() < 0.2:
            return f"<part>{{ {path} }}</part>"
        return f"{{ {path} }}"

    def _return_path(self, var: str, bound: frozenset[str]) -> str:
        if self.opts.backward and self.rng.random() < self.opts.backward:
            found = self._upward_return(var, bound)
            if found:
                return found
        if self.rng.random() < 0.1:
            return var
        text, target = self.relative(bound, self._length(self.opts.D2), leading=var)
        if not text:
            return var
        if all(self.graph.text_only(e) for e in target) and self.rng.random() < 0.2:
            return text + "/text()"
        return text

    # ------------------------------------------------------------------------------------ counts

    def _length(self, bound: int) -> int:
        return self.rng.randint(1, max(1, bound))

    def _count(self, value: Range) -> int:
        low, high = (value, value) if isinstance(value, int) else value
        return self.rng.randint(low, high)


#: Start tags of the element around a FLWR when the language round's constructors are on.
_WRAPPERS = ("<results>", '<results feed="wire">', '<results xmlns:r="urn:feedrouter:results" r:n="1">')


def _numbered(predicates: str) -> bool:
    """Whether predicates written by the generator hold a numeric position such as ``[2]``."""
    return any(f"[{n}]" in predicates for n in range(1, 10))


def _term(condition: str) -> str:
    """A condition as a term of ``and``: an ``or`` in parentheses."""
    return f"({condition})" if " or " in condition else condition


def match_probe(text: str) -> str:
    """An XQuery boolean expression that holds when a text made here matches the context document.

    For a FLWR text it is ``exists(for ... where ... return 1)``; for a filter, ``exists(path)``. It
    relies on the layout this module writes (``for``, ``where`` and ``return`` clauses on their own
    lines), so it is for generated texts only, e.g. to check match rates with a real XQuery processor.
    """
    prolog, body = _split_prolog(text)
    if not body.startswith(("for ", "<results")):
        return f"{prolog}exists({body})"
    body = body[body.index("{\n") + 2 :] if body.startswith("<results") else body
    head = body[: body.index("\nreturn ")]
    return f"{prolog}exists({head}\nreturn 1)"


def _split_prolog(text: str) -> tuple[str, str]:
    lines = text.split("\n")
    cut = next(
        i for i, line in enumerate(lines) if not line.startswith(("declare ", "(:", "xquery ")) or not line
    )
    return "".join(line + "\n" for line in lines[:cut]), "\n".join(lines[cut:])
