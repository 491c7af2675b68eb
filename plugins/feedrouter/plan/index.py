"""Shared selection: find the subscriptions a document may match by probing indexed constants.

Most of a large population shares a few paths and differs in the constants of equality predicates
(``//story[@id = 17]``, ``where $v/price = 40``). Evaluating every subscription whose path matched
would cost O(subscriptions) per document. Instead each subscription with an equality test on a path
in the NFA is filed under that test's (path, field, value kind) and its constant; per document, each
distinct node of such a field is looked up once and yields every subscription whose constant it
equals (paper 000 §5, shared selections). The equality is a necessary condition of a match, so only
those candidates run their full plan; subscriptions without an indexable test are always candidates
when their binding path matched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from feedrouter.engine.document import iter_text_nodes
from feedrouter.lang.ast import CompOp
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.patterns import LocalTest, PathPattern, TestKind
from feedrouter.plan.values import to_double

Key = str | float


@dataclass(frozen=True)
class ProbeSite:
    """Where the value of an indexed test is read: a path's stream, one field, one kind of value."""

    pid: int
    field: int
    kind: TestKind
    attribute: str
    numeric: bool
    last: bool  # the field is the path's last step


@dataclass(frozen=True)
class Probe:
    site: ProbeSite
    key: Key


def find_probe(main: PathPattern, pid_of, branches_in_nfa: bool) -> Probe | None:  # type: ignore[no-untyped-def]
    """The first equality test of the pattern tree whose path is in the NFA, as a probe."""
    for pattern in _indexable_patterns(main, branches_in_nfa):
        for i, tests in enumerate(pattern.tests):
            for test in tests:
                probe = _probe_for(test, pid_of(pattern.nav), i, i == pattern.last)
                if probe is not None:
                    return probe
    return None


def _indexable_patterns(main: PathPattern, branches_in_nfa: bool) -> Iterator[PathPattern]:
    yield main
    if branches_in_nfa:
        for branch in main.branches:
            yield from branch.pattern.walk()


def _probe_for(test: LocalTest, pid: int | None, field: int, last: bool) -> Probe | None:
    if pid is None or test.op is not CompOp.EQ or test.literal is None:
        return None
    if test.kind not in (TestKind.SELF_CMP, TestKind.ATTR_CMP, TestKind.TEXT_CMP):
        return None
    value = test.literal.value
    if isinstance(value, float) and value != value:  # NaN equals nothing: no key to file it under
        return None
    site = ProbeSite(pid, field, test.kind, test.attribute, isinstance(value, float), last)
    return Probe(site, value)


class SelectionIndex:
    """Subscriptions filed by probe (or by binding path when they have none), with per-document lookup."""

    def __init__(self) -> None:
        self._sites: dict[int, dict[ProbeSite, dict[Key, list[object]]]] = {}
        self._unindexed: dict[int, list[object]] = {}

    def add(self, item: object, main_pid: int, probe: Probe | None) -> None:
        if probe is None:
            self._unindexed.setdefault(main_pid, []).append(item)
            return
        buckets = self._sites.setdefault(probe.site.pid, {}).setdefault(probe.site, {})
        buckets.setdefault(probe.key, []).append(item)

    def remove(self, item: object, main_pid: int, probe: Probe | None) -> None:
        if probe is None:
            _remove_from(self._unindexed, main_pid, item)
            return
        sites = self._sites[probe.site.pid]
        _remove_from(sites[probe.site], probe.key, item)
        if not sites[probe.site]:
            del sites[probe.site]
            if not sites:
                del self._sites[probe.site.pid]

    def candidates(self, ctx: DocumentContext) -> list[object]:
        """Every subscription the document may match: one look-up per distinct probed node value."""
        found: list[object] = []
        for pid in ctx.matches.matched():
            found.extend(self._unindexed.get(pid, ()))
            for site, buckets in self._sites.get(pid, {}).items():
                for key in _keys(ctx, _site_nodes(ctx, site), site):
                    found.extend(buckets.get(key, ()))
        return found


def _remove_from(mapping: dict, key: object, item: object) -> None:  # type: ignore[type-arg]
    items = mapping[key]
    items.remove(item)
    if not items:
        del mapping[key]


def _site_nodes(ctx: DocumentContext, site: ProbeSite) -> set[int]:
    """The distinct nodes of the site's field; a test on the last step needs no path-tuples."""
    if site.last:
        return set(ctx.matches.last_nodes(site.pid))
    return {t[site.field] for t in ctx.matches.stream(site.pid)}


def _keys(ctx: DocumentContext, nodes: set[int], site: ProbeSite) -> set[Key]:
    """The distinct values found at the site's field, as index keys."""
    keys: set[Key] = set()
    for nid in nodes:
        for value in _values(ctx, nid, site):
            key = to_double(value) if site.numeric else value
            if key is not None:
                keys.add(key)
    return keys


def _values(ctx: DocumentContext, nid: int, site: ProbeSite) -> Iterator[str]:
    if site.kind is TestKind.ATTR_CMP:
        value = ctx.nodes[nid].get(site.attribute)
        if value is not None:
            yield value
    elif site.kind is TestKind.TEXT_CMP:
        for _, text in iter_text_nodes(ctx.nodes[nid]):
            yield text
    else:
        yield ctx.string_value(nid)
