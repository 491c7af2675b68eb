"""Shared selection: find the subscriptions a document may match by probing indexed constants.

Most of a large population shares a few paths and differs in the constants of its predicates
(``//story[@id = 17]``, ``where $v/price > 40``). Evaluating every subscription whose path matched
would cost O(subscriptions) per document. Instead each subscription with a comparison on a path in
the NFA is filed under that test's site (path, field, value kind) and its constant (paper 000 §5,
shared selections):

* **equality** constants are hashed: each distinct value found at the site is looked up once;
* **range** constants (``<``, ``<=``, ``>``, ``>=``) are kept sorted per operator: ``value > c``
  holds for some value found iff ``c`` is below the largest one, so one bisection on the document's
  largest (or smallest) value yields every satisfied constant as a slice;
* **keywords** of ``contains``/``starts-with``/``ends-with`` are matched all at once: one
  Aho-Corasick automaton (pyahocorasick) per site finds every needle in each value found there;
  prefixes and suffixes are looked up by the needle lengths filed; ``lower-case(x) = "v"`` and the
  other string functions compared for equality are hashed by the function's value.

The comparison is a necessary condition of a match, so only those candidates run their full plan;
subscriptions without an indexable test are always candidates when their binding path matched.
Equality is preferred when a subscription has both: it is the more selective.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from feedrouter.engine.document import attribute_values, iter_text_nodes
from feedrouter.engine.nfa import NavPath
from feedrouter.lang import ast
from feedrouter.lang.ast import MATCH_FUNCTIONS, CompOp
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.evaluate import CardinalityError, string_argument
from feedrouter.plan.functions import STRING_FUNCTIONS
from feedrouter.plan.nodesets import plain_field_nodes
from feedrouter.plan.patterns import LocalTest, PathPattern, TestKind
from feedrouter.plan.values import to_double

Key = str | float
_K = TypeVar("_K")
_T = TypeVar("_T")
#: A navigation path's NFA path id, or None when the path is not in the NFA (the planner's look-up).
PidOf = Callable[[NavPath], int | None]


@dataclass(frozen=True)
class ProbeSite:
    """Where the value of an indexed test is read: a path's stream, one field, one kind of value."""

    pid: int
    field: int
    kind: TestKind
    attribute: str
    numeric: bool
    last: bool  # the field is the path's last step
    call: ast.Call | None = None  # a function of the node's value (its literals left out)


_RANGES = (CompOp.LT, CompOp.LE, CompOp.GT, CompOp.GE)
_INDEXED = (CompOp.EQ, *_RANGES)


@dataclass(frozen=True)
class Probe:
    """A subscription's entry in the index: ``value op key`` must hold at ``site``."""

    site: ProbeSite
    key: Key
    op: CompOp = CompOp.EQ


def find_probes(main: PathPattern, pid_of: PidOf, branches_in_nfa: bool) -> list[Probe]:
    """Every indexable test of the pattern tree (each a necessary condition of a match), in order."""
    return [
        probe
        for pattern in _indexable_patterns(main, branches_in_nfa)
        for i, tests in enumerate(pattern.tests)
        for test in tests
        if (probe := probe_for(test, pid_of(pattern.nav), i, i == pattern.last)) is not None
    ]


def choose_probe(probes: list[Probe], spread: Callable[[ProbeSite], int]) -> Probe | None:
    """The probe to file a subscription under: of its equality tests, the one whose site has the
    largest ``spread`` (the first on a tie), else its first range test.

    Any one necessary test is a correct filing; the point is to pick a selective one. With no
    statistics of the documents, the population's own constants are the estimate: a site where the
    subscriptions name 2,000 distinct authors likely sees one of them in few documents, a site where
    they name 3 languages likely sees each in a third of them (selectivity about 1 / distinct).
    """
    equalities = [probe for probe in probes if probe.op is CompOp.EQ]
    if equalities:
        return max(equalities, key=lambda probe: spread(probe.site))  # max keeps the first of ties
    return probes[0] if probes else None


def _indexable_patterns(main: PathPattern, branches_in_nfa: bool) -> Iterator[PathPattern]:
    """The patterns whose tests every match must pass: not those under a negation."""
    yield main
    if branches_in_nfa:
        for branch in main.branches:
            if not branch.negated:
                yield from _indexable_patterns(branch.pattern, branches_in_nfa)


def probe_for(test: LocalTest, pid: int | None, field: int, last: bool) -> Probe | None:
    if pid is not None and test.kind is TestKind.RESIDUAL:
        return _keyword_probe(test.condition, pid, field, last)
    if pid is None or test.op not in _INDEXED or test.literal is None:
        return None
    if test.kind not in (TestKind.SELF_CMP, TestKind.ATTR_CMP, TestKind.TEXT_CMP):
        return None
    value = test.literal.value
    if isinstance(value, float) and value != value:  # NaN compares true with nothing: no key for it
        return None
    site = ProbeSite(pid, field, test.kind, test.attribute, isinstance(value, float), last)
    return Probe(site, value, test.op)


def _keyword_probe(condition: ast.Condition | None, pid: int, field: int, last: bool) -> Probe | None:
    """The index entry of ``contains(p, "k")`` (and starts-with, ends-with) or ``f(p) = "v"``."""
    if isinstance(condition, ast.BooleanCall) and condition.call.name != "matches":
        call, key = condition.call, condition.call.literals[0].value
    elif (
        isinstance(condition, ast.CallComparison)
        and condition.op is CompOp.EQ
        and condition.call.name in STRING_FUNCTIONS
        and not condition.literal.numeric
    ):
        call, key = condition.call, condition.literal.value
    else:
        return None
    site = ProbeSite(pid, field, TestKind.RESIDUAL, "", False, last, ast.Call(call.name, call.arg))
    return Probe(site, key)


class Keywords:
    """Needles of one of ``contains``/``starts-with``/``ends-with``, matched all at once (the needles
    filed at an index site; a join base's blocks filed by needle, :mod:`feedrouter.join.selections`):
    built on first use after a change, and never pickled (plain data goes into plan artifacts)."""

    def __init__(self, name: str, needles: Collection[Key]) -> None:
        self.name = name
        words = [str(n) for n in needles]
        self.empty = "" in words  # every value contains (starts, ends with) the empty string
        self.lengths = sorted({len(w) for w in words if w})
        self.automaton = _automaton(words) if name == "contains" else None

    def hits(self, values: Collection[str], filed: Collection[Key]) -> set[str]:
        found = {""} if self.empty else set()
        for value in values:
            if self.automaton is not None:
                found.update(word for _, word in self.automaton.iter(value))
            elif self.name == "starts-with":
                found.update(p for n in self.lengths if n <= len(value) and (p := value[:n]) in filed)
            else:
                found.update(s for n in self.lengths if n <= len(value) and (s := value[-n:]) in filed)
        return found


def _automaton(words: list[str]) -> Any:
    import ahocorasick  # the C extension loads only where a population has contains() keywords

    automaton = ahocorasick.Automaton()
    for word in words:
        if word:
            automaton.add_word(word, word)
    if len(automaton):
        automaton.make_automaton()
        return automaton
    return _NoWords()


class _NoWords:
    def iter(self, value: str) -> Iterator[tuple[int, str]]:
        return iter(())


@dataclass
class _SortedConstants(Generic[_T]):
    """The constants of one range operator at one site, sorted, with their subscriptions."""

    keys: list[Key] = field(default_factory=list)  # distinct, ascending
    items: dict[Key, list[_T]] = field(default_factory=dict)

    def add(self, key: Key, item: _T) -> None:
        bucket = self.items.get(key)
        if bucket is None:
            insort(self.keys, key)
            bucket = self.items[key] = []
        bucket.append(item)

    def remove(self, key: Key, item: _T) -> None:
        _remove_from(self.items, key, item)
        if key not in self.items:
            del self.keys[bisect_left(self.keys, key)]

    def satisfied(self, op: CompOp, values: Collection[Key]) -> Iterator[_T]:
        """Subscriptions with ``value op key`` true for some value: a slice of the sorted keys."""
        if op in (CompOp.GT, CompOp.GE):  # some value above the constant: the largest decides
            top = max(values)
            end = bisect_left(self.keys, top) if op is CompOp.GT else bisect_right(self.keys, top)
            chosen = self.keys[:end]
        else:  # some value below the constant: the smallest decides
            low = min(values)
            start = bisect_right(self.keys, low) if op is CompOp.LT else bisect_left(self.keys, low)
            chosen = self.keys[start:]
        for key in chosen:
            yield from self.items[key]

    def __bool__(self) -> bool:
        return bool(self.keys)


@dataclass
class _Site(Generic[_T]):
    """Everything filed at one probe site: equality buckets and one sorted list per range operator."""

    equal: dict[Key, list[_T]] = field(default_factory=dict)
    ranges: dict[CompOp, _SortedConstants[_T]] = field(default_factory=dict)
    _keywords: Keywords | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {"equal": self.equal, "ranges": self.ranges}  # the matcher is rebuilt on first use

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _keywords=None)

    def keyword_hits(self, name: str, values: Collection[str]) -> Iterator[_T]:
        """The items whose needle ``name`` finds in some value (contains, starts-with, ends-with)."""
        keywords = self._keywords
        if keywords is None:
            keywords = self._keywords = Keywords(name, self.equal)
        for needle in keywords.hits(values, self.equal):
            yield from self.equal.get(needle, ())

    def add(self, probe: Probe, item: _T) -> None:
        self._keywords = None
        if probe.op is CompOp.EQ:
            self.equal.setdefault(probe.key, []).append(item)
        else:
            self.ranges.setdefault(probe.op, _SortedConstants()).add(probe.key, item)

    def remove(self, probe: Probe, item: _T) -> None:
        self._keywords = None
        if probe.op is CompOp.EQ:
            _remove_from(self.equal, probe.key, item)
        else:
            constants = self.ranges[probe.op]
            constants.remove(probe.key, item)
            if not constants:
                del self.ranges[probe.op]

    def __bool__(self) -> bool:
        return bool(self.equal or self.ranges)


class SelectionIndex(Generic[_T]):
    """Subscriptions filed by probe (or by binding path when they have none), with per-document lookup.

    ``_T`` is what is filed: the router files its shared plan groups.
    """

    def __init__(self) -> None:
        self._sites: dict[int, dict[ProbeSite, _Site[_T]]] = {}
        self._unindexed: dict[int, list[_T]] = {}
        # every indexable constant the filed subscriptions have at each site, chosen or not, with
        # how many have it: the population's statistics that choose_probe's spread reads
        self._offered: dict[ProbeSite, dict[Key, int]] = {}
        self._canonical: dict[ProbeSite, ProbeSite] = {}

    def offer(self, probes: Collection[Probe]) -> list[Probe]:
        """Count a new subscription's indexable tests in the site statistics; the probes returned
        share one site object per site (documents cache what they find at a site by its identity)."""
        offered = self.__dict__.setdefault("_offered", {})  # indexes pickled before it had none
        canonical = self.__dict__.setdefault("_canonical", {})
        found = []
        for probe in probes:
            site = canonical.setdefault(probe.site, probe.site)
            if site is not probe.site:
                probe = replace(probe, site=site)
            counts = offered.setdefault(site, {})
            counts[probe.key] = counts.get(probe.key, 0) + 1
            found.append(probe)
        return found

    def withdraw(self, probes: Collection[Probe]) -> None:
        """Take a leaving subscription's tests out of the site statistics."""
        offered = self.__dict__.setdefault("_offered", {})
        for probe in probes:
            counts = offered.get(probe.site)
            if counts is None or probe.key not in counts:
                continue
            counts[probe.key] -= 1
            if not counts[probe.key]:
                del counts[probe.key]
                if not counts:  # no group compares anything there: the site is forgotten
                    del offered[probe.site]
                    self.__dict__.get("_canonical", {}).pop(probe.site, None)

    def spread(self, site: ProbeSite) -> int:
        """How many distinct constants the filed subscriptions compare at ``site``."""
        return len(self.__dict__.get("_offered", {}).get(site, ()))

    def add(self, item: _T, main_pid: int, probe: Probe | None) -> None:
        if probe is None:
            self._unindexed.setdefault(main_pid, []).append(item)
            return
        self._sites.setdefault(probe.site.pid, {}).setdefault(probe.site, _Site()).add(probe, item)

    def remove(self, item: _T, main_pid: int, probe: Probe | None) -> None:
        if probe is None:
            _remove_from(self._unindexed, main_pid, item)
            return
        sites = self._sites[probe.site.pid]
        sites[probe.site].remove(probe, item)
        if not sites[probe.site]:
            del sites[probe.site]
            if not sites:
                del self._sites[probe.site.pid]

    #: True once an item is filed under several entries (a union's alternatives): candidates are
    #: then given once each. A class default, so that indexes pickled before it read False.
    repeats = False

    def candidates(self, ctx: DocumentContext) -> list[_T]:
        """Every subscription the document may match: one look-up per distinct probed value, and one
        bisection per range operator."""
        found = self._found(ctx)
        if not self.repeats or len(found) < 2:
            return found
        seen: set[int] = set()
        unique: list[_T] = []
        for item in found:
            if id(item) not in seen:
                seen.add(id(item))
                unique.append(item)
        return unique

    def _found(self, ctx: DocumentContext) -> list[_T]:
        found: list[_T] = []
        for pid in ctx.matches.matched():
            found.extend(self._unindexed.get(pid, ()))
            for site, filed in self._sites.get(pid, {}).items():
                keys = keys_at(ctx, site)
                if not keys:
                    continue
                if site.call is not None and site.call.name in MATCH_FUNCTIONS:
                    found.extend(filed.keyword_hits(site.call.name, keys))  # type: ignore[arg-type]
                    continue
                equal = filed.equal
                for key in keys:
                    found.extend(equal.get(key, ()))
                for op, constants in filed.ranges.items():
                    found.extend(constants.satisfied(op, keys))
        return found


def _remove_from(mapping: dict[_K, list[_T]], key: _K, item: _T) -> None:
    items = mapping[key]
    items.remove(item)
    if not items:
        del mapping[key]


def keys_at(ctx: DocumentContext, site: ProbeSite) -> set[Key]:
    """The distinct values found at a site in this document, as index keys (once per document)."""
    known = ctx.caches.probe_keys
    keys = known.get(id(site))  # by identity: a site's hash is costly, and sites are shared
    if keys is None:
        keys = known[id(site)] = _keys(ctx, _site_nodes(ctx, site), site)
    return keys


def probe_holds(ctx: DocumentContext, probe: Probe) -> bool:
    """Whether the document can pass ``probe``'s test: what the index checks for the test it files a
    subscription under, for another of its tests (all are necessary: a candidate that fails one
    cannot match, and is not evaluated)."""
    keys = keys_at(ctx, probe.site)
    if not keys:
        return False
    call = probe.site.call
    if call is not None and call.name in MATCH_FUNCTIONS:
        needle = str(probe.key)
        if call.name == "contains":
            return any(needle in value for value in keys)  # type: ignore[operator]
        if call.name == "starts-with":
            return any(str(value).startswith(needle) for value in keys)
        return any(str(value).endswith(needle) for value in keys)
    op, key = probe.op, probe.key
    if op is CompOp.EQ:
        return key in keys
    if op is CompOp.GT:
        return max(keys) > key  # type: ignore[operator]
    if op is CompOp.GE:
        return max(keys) >= key  # type: ignore[operator]
    if op is CompOp.LT:
        return min(keys) < key  # type: ignore[operator]
    return min(keys) <= key  # type: ignore[operator]


def _site_nodes(ctx: DocumentContext, site: ProbeSite) -> set[int]:
    """The distinct nodes of the site's field; a test on the last step needs no path-tuples."""
    if site.last:
        return set(ctx.matches.last_nodes(site.pid))
    tuples = ctx.small_stream(site.pid)
    if tuples is None:  # the path has many tuples per node here: the field's node set instead
        return set(plain_field_nodes(ctx, ctx.matches.steps(site.pid), site.field))
    return {t[site.field] for t in tuples}


def _keys(ctx: DocumentContext, nodes: set[int], site: ProbeSite) -> set[Key]:
    """The distinct values found at the site's field, as index keys."""
    keys: set[Key] = set()
    ctx.charge(len(nodes))
    for nid in nodes:
        keys.update(site_keys(ctx, nid, site))
    return keys


def site_keys(ctx: DocumentContext, nid: int, site: ProbeSite) -> Iterator[Key]:
    """A node's values at a site as keys: cast to xs:double for a numeric literal, NaN and values
    that do not cast left out (they satisfy no comparison)."""
    for value in _values(ctx, nid, site):
        key = to_double(value) if site.numeric else value
        if key is not None and key == key:
            yield key


def _values(ctx: DocumentContext, nid: int, site: ProbeSite) -> Iterator[str]:
    if site.call is not None:
        yield from _call_values(ctx, nid, site.call)
    elif site.kind is TestKind.ATTR_CMP:
        yield from attribute_values(ctx.nodes[nid], site.attribute)
    elif site.kind is TestKind.TEXT_CMP:
        for _, text in iter_text_nodes(ctx.nodes[nid]):
            yield text
    else:
        yield ctx.string_value(nid)


def _call_values(ctx: DocumentContext, nid: int, call: ast.Call) -> Iterator[str]:
    """A keyword site's value at a node: the function's argument (match functions) or its result."""
    try:
        value = string_argument(ctx, ctx.nodes[nid], call)
    except CardinalityError:
        return  # XPTY0004 in XQuery: the test holds for no needle
    if call.name in MATCH_FUNCTIONS:
        yield value
        return
    result = STRING_FUNCTIONS[call.name](value)
    if isinstance(result, str):
        yield result
