"""Run the shared NFA over a document's start/end element events and emit path-tuple streams.

The runtime keeps a stack of active state sets, one per open element (YFilter). Sets are interned,
and the transition from a set on an element name is memoized: after warm-up, an element costs one
dictionary look-up however many subscriptions there are (a lazily built DFA over the NFA). The
memo is dropped whenever the NFA changes.

For every distinct path accepted at an element, the runtime emits path-tuples: one node id (pre-order
position) per location step. Tuples of a stream come out ordered by their last field. The run only
records each element's DFA state; a stream's tuples are built when a plan first asks for them.
Value predicates are not looked at here: the plan evaluates them afterwards (paper 000 §2.3).

Memory per element is kept small (issue 18, item 3): parents and the members of each DFA state
are machine ints (``array``), names are shared strings, and an lxml element object is kept only
for the elements a path ends on (the ones plans ask for); the others are made again from the tree
when a plan first needs them (:class:`Nodes`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice

from lxml import etree

from feedrouter.engine.nfa import WILDCARD, NavPath, Nfa, tag_matches
from feedrouter.errors import DocumentError
from feedrouter.lang.ast import Axis

PathTuple = tuple[int, ...]

# A memo larger than this is dropped and rebuilt: hostile documents may use endless distinct names.
_MAX_MEMO = 200_000
# Chains of open elements are memoized per element while they hold at most this many elements per
# element of the document (plus the slack): a deep document would need depth x elements.
_CHAIN_MEMO_PER_NODE = 16
# A node at most this deep binds at most 2^16 path-tuples however many '//' a path has: a bounded
# stream takes them whole and checks its limit after the node.
_SHALLOW = 16
_CHAIN_MEMO_SLACK = 4096


class _PathShape:
    """Precomputed facts about one path that make tuple enumeration cheap."""

    __slots__ = ("all_child", "axes", "length", "single_descendant", "tags")

    def __init__(self, path: NavPath) -> None:
        self.length = len(path)
        self.axes = tuple(step.axis is Axis.CHILD for step in path)
        self.tags = tuple(step.tag for step in path)
        self.all_child = all(self.axes)
        descendants = [i for i, child in enumerate(self.axes) if not child]
        # Claim 1: with one '//' the steps before it hang from the root and those after it from the
        # last node, so an accepted element has exactly one tuple.
        self.single_descendant = descendants[0] if len(descendants) == 1 else -1


class LazyDfa:
    """Interned NFA state sets with memoized transitions; rebuilt when the NFA's version moves."""

    def __init__(self, nfa: Nfa, memoize: bool = True) -> None:
        self._nfa = nfa
        self.memoize = memoize  # False: recompute every transition from the NFA (the plain YFilter run)
        self._reset()

    def __getstate__(self) -> dict[str, object]:
        # the interned sets and the memo are rebuilt on the first document: not shipped
        return {"_nfa": self._nfa, "memoize": self.memoize}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._reset()

    def _reset(self) -> None:
        self._version = self._nfa.version
        self._ids: dict[frozenset[int], int] = {}
        self._sets: list[frozenset[int]] = []
        self._accepts: list[tuple[int, ...]] = []
        self.accepting: list[bool] = []  # per state: whether it accepts some path
        self._memo: dict[tuple[int, str], int] = {}
        self._shapes: dict[int, _PathShape] = {}
        self.initial = self._intern(self._nfa.initial())

    def _intern(self, states: frozenset[int]) -> int:
        did = self._ids.get(states)
        if did is None:
            did = self._ids[states] = len(self._sets)
            self._sets.append(states)
            self._accepts.append(self._nfa.accepted(states))
            self.accepting.append(bool(self._accepts[-1]))
        return did

    def check(self) -> None:
        if self._version != self._nfa.version or len(self._memo) > _MAX_MEMO:
            self._reset()

    def step(self, did: int, tag: str) -> int:
        key = (did, tag)
        nxt = self._memo.get(key)
        if nxt is None:
            nxt = self._intern(self._nfa.step(self._sets[did], tag))
            if self.memoize:
                self._memo[key] = nxt
        return nxt

    def accepts(self, did: int) -> tuple[int, ...]:
        return self._accepts[did]

    def path_id(self, path: NavPath) -> int | None:
        return self._nfa.path_id(path)

    def shape(self, pid: int) -> _PathShape:
        shape = self._shapes.get(pid)
        if shape is None:
            shape = self._shapes[pid] = _PathShape(self._nfa.path(pid))
        return shape

    @property
    def size(self) -> int:
        return len(self._sets)


class Nodes:
    """The document's elements by id (pre-order position): ``nodes[nid]`` is the lxml element.

    The run keeps the element objects of the elements some path ends on; another element is made
    on first need from its nearest kept ancestor, whose element children are all made (and kept)
    at once, so that asking for every element of a document costs each element once. An element
    object costs about 80 bytes: keeping one per element would double the tree's memory.
    """

    # It holds the run's parents, not the run (:class:`Matches` holds it): no reference cycle,
    # so a routed document's tree is freed as soon as routing drops it, not at the collector's
    # next pass (a worker keeps no tree of a document it is done with).
    __slots__ = ("_elements", "_ends", "_parents")

    def __init__(self, parents: array[int]) -> None:
        self._parents = parents
        self._elements: list[etree._Element | None] = []
        self._ends: array[int] | None = None

    def __len__(self) -> int:
        return len(self._elements)

    def __getitem__(self, nid: int) -> etree._Element:
        element = self._elements[nid]
        if element is None:
            element = self._make(nid if nid >= 0 else nid + len(self._elements))
        return element

    def __iter__(self) -> Iterator[etree._Element]:
        """Every element in document order (made one at a time, not kept)."""
        if self._elements:
            yield from self[0].iter(etree.Element)

    def subtree_ends(self) -> array[int]:
        """Per element, the id of the last element in its subtree (:meth:`Matches.subtree_ends`),
        worked out once the run has recorded every element."""
        if self._ends is None:
            parents = self._parents
            ends = array("i", range(len(parents)))
            for nid in range(len(parents) - 1, 0, -1):
                parent = parents[nid]
                if parent >= 0 and ends[nid] > ends[parent]:
                    ends[parent] = ends[nid]
            self._ends = ends
        return self._ends

    def _make(self, nid: int) -> etree._Element:
        elements, parents = self._elements, self._parents
        missing = []
        node = nid
        while elements[node] is None:  # the root element is always kept
            missing.append(node)
            node = parents[node]
        for child in reversed(missing):
            self._make_children(parents[child])
        made = elements[nid]
        assert made is not None  # made with its parent's children just now
        return made

    def _make_children(self, parent: int) -> None:
        elements, ends = self._elements, self.subtree_ends()
        nid = parent + 1  # a child's next sibling is the element after its subtree
        parent_element = elements[parent]
        assert parent_element is not None  # made first: ancestors are made top down
        for element in parent_element.iterchildren(etree.Element):
            if elements[nid] is None:
                elements[nid] = element
            nid = ends[nid] + 1


def enumerate_tuples(shape: _PathShape, ids: list[int], tags: list[str]) -> Iterator[PathTuple]:
    """All bindings of the path's steps to the open elements whose last step is the deepest one.

    ``ids`` and ``tags`` describe the chain of open elements from the root element down.
    """
    depth = len(ids)
    if shape.all_child:
        yield tuple(ids)
        return
    k = shape.single_descendant
    if k >= 0:
        yield (*ids[:k], *ids[depth - (shape.length - k) :])
        return
    fields = [0] * shape.length
    yield from _bind(shape, ids, tags, shape.length - 1, depth - 1, fields)


def _bind(
    shape: _PathShape, ids: list[int], tags: list[str], step: int, pos: int, fields: list[int]
) -> Iterator[PathTuple]:
    tag = shape.tags[step]
    if tag != WILDCARD and tags[pos] != tag and not (tag[0] == "{" and tag_matches(tag, tags[pos])):
        return
    fields[step] = ids[pos]
    if step == 0:
        if pos == 0 or not shape.axes[0]:
            yield tuple(fields)
        return
    if shape.axes[step]:
        if pos > 0:
            yield from _bind(shape, ids, tags, step - 1, pos - 1, fields)
        return
    # a '//' step: the previous step may bind any strictly higher open element
    for prev in range(pos - 1, step - 2, -1):
        yield from _bind(shape, ids, tags, step - 1, prev, fields)


class Matches:
    """What the engine found in one document, with streams built only for the paths asked for.

    The run itself records, per element, its parent, its name and its DFA state; a path's stream
    (its path-tuples, ordered by the last field) is built the first time a plan asks for it, so
    paths that no candidate subscription consumes cost nothing beyond the state transition.
    """

    __slots__ = (
        "_chained",
        "_chains",
        "_dfa",
        "_last",
        "_pids",
        "_tuples",
        "by_state",
        "child_counts",
        "element_ordinals",
        "nodes",
        "ordinals",
        "parents",
        "tags",
    )

    def __init__(self, dfa: LazyDfa) -> None:
        self._dfa = dfa
        self.parents = array("i")  # -1 for the root element
        self.nodes = Nodes(self.parents)
        self.tags: list[str] = []  # one string object per distinct name
        self.by_state: dict[int, array[int]] = {}
        self._pids: dict[int, list[int]] | None = None
        self._last: dict[int, Sequence[int]] = {}
        self._tuples: dict[int, list[PathTuple]] = {}
        self._chains: dict[int, tuple[list[int], list[str]]] = {}
        self._chained = 0  # elements held by the chains in the memo
        # sibling positions, recorded while streaming when some plan has positional predicates
        # (run(..., positions=True)): per element its position among its parent's children of its
        # name and among all its element siblings; per parent (-1: the document node) how many
        # children of each name it has ("" counts them all)
        self.ordinals: array[int] | None = None
        self.element_ordinals: array[int] | None = None
        self.child_counts: dict[int, dict[str, int]] = {}

    def subtree_ends(self) -> array[int]:
        """Per element, the id of the last element in its subtree: ids are in document order, so
        the descendants of ``nid`` are exactly the ids ``nid + 1 .. ends[nid]``."""
        return self.nodes.subtree_ends()

    def matched(self) -> dict[int, list[int]]:
        """Path id -> the DFA states (seen in this document) that accept it."""
        if self._pids is None:
            pids: dict[int, list[int]] = {}
            for did in self.by_state:
                for pid in self._dfa.accepts(did):
                    pids.setdefault(pid, []).append(did)
            self._pids = pids
        return self._pids

    def path_id(self, path: NavPath) -> int | None:
        """The id of a path in the NFA this document ran on (None when it is not there)."""
        return self._dfa.path_id(path)

    def last_nodes(self, pid: int) -> Sequence[int]:
        """The nodes a path ends on, in document order (read only)."""
        nodes = self._last.get(pid)
        if nodes is None:
            dids = self.matched().get(pid, ())
            lists = [self.by_state[did] for did in dids]
            # machine ints: a path ending in several DFA states may hold most of the document
            nodes = lists[0] if len(lists) == 1 else array("i", sorted(chain.from_iterable(lists)))
            self._last[pid] = nodes
        return nodes

    def stream(self, pid: int) -> list[PathTuple]:
        """The path-tuples of a path, ordered by their last field."""
        tuples = self.stream_within(pid, None)
        assert tuples is not None
        return tuples

    def stream_within(self, pid: int, limit: int | None) -> list[PathTuple] | None:
        """:meth:`stream`, or None once it would hold more than ``limit`` tuples.

        A path with two ``//`` steps or more has up to depth^k tuples per node on a recursive
        document: the limit stops building them before they fill the memory. Plans evaluate such
        paths by node sets (:mod:`feedrouter.plan.nodesets`) and do not ask for their tuples.
        """
        tuples = self._tuples.get(pid)
        if tuples is None:
            shape = self._dfa.shape(pid)
            tuples = []
            walker: _Chain | None = None
            memo_limit = _CHAIN_MEMO_PER_NODE * len(self.nodes) + _CHAIN_MEMO_SLACK
            for nid in self.last_nodes(pid):
                if walker is None and self._chained <= memo_limit:
                    ids, tags = self._chain(nid)
                else:  # a deep document: no chain per node in memory, one walked along instead
                    walker = walker or _Chain(self)
                    walker.reach(nid)
                    ids, tags = walker.ids, walker.tags
                found = enumerate_tuples(shape, ids, tags)
                if limit is not None and len(ids) > _SHALLOW:  # a deep node may bind depth^k ways
                    found = islice(found, limit - len(tuples) + 1)
                tuples.extend(found)
                if limit is not None and len(tuples) > limit:
                    return None
            self._tuples[pid] = tuples
        return tuples

    def _chain(self, nid: int) -> tuple[list[int], list[str]]:
        """The open elements from the root element down to ``nid``: their ids and names, memoized
        (streams of many paths end on the same elements)."""
        chain = self._chains.get(nid)
        if chain is None:
            ids = []
            node = nid
            while node >= 0:
                ids.append(node)
                node = self.parents[node]
            ids.reverse()
            chain = self._chains[nid] = (ids, [self.tags[i] for i in ids])
            self._chained += len(ids)
        return chain

    def steps(self, pid: int) -> tuple[tuple[bool, str], ...]:
        """A path's steps as ``(child, tag)`` pairs (``child`` False for ``//``)."""
        shape = self._dfa.shape(pid)
        return tuple(zip(shape.axes, shape.tags, strict=True))


class _Chain:
    """The open elements from the root element down to a node, moved from node to node in document
    order: the ancestors shared with the previous node stay, so a stream costs its tuples plus each
    element once, not the depth of every node it ends on (and no memory per node)."""

    __slots__ = ("_at", "_names", "_parents", "ids", "tags")

    def __init__(self, matches: Matches) -> None:
        self._parents, self._names = matches.parents, matches.tags
        self._at: dict[int, int] = {}  # element in the chain -> its position
        self.ids: list[int] = []
        self.tags: list[str] = []

    def reach(self, nid: int) -> None:
        """Make the chain end on ``nid``, which comes after the chain's last node."""
        at, ids = self._at, self.ids
        below = []
        node = nid
        while node >= 0 and node not in at:
            below.append(node)
            node = self._parents[node]
        keep = at[node] + 1 if node >= 0 else 0
        for gone in ids[keep:]:
            del at[gone]
        del ids[keep:]
        del self.tags[keep:]
        for node in reversed(below):
            at[node] = len(ids)
            ids.append(node)
            self.tags.append(self._names[node])


def run(
    dfa: LazyDfa, events: Iterable[tuple[str, etree._Element]], max_depth: int, positions: bool = False
) -> Matches:
    """Drive the automaton with ``(event, element)`` pairs, ``event`` being ``start`` or ``end``.

    Comments and processing instructions may appear among the events; they are skipped. With
    ``positions`` the run also records sibling positions per name (:attr:`Matches.ordinals`).
    """
    if positions:
        return _run_with_positions(dfa, events, max_depth)
    dfa.check()
    matches = Matches(dfa)
    elements, parents, tags, by_state = (
        matches.nodes._elements,
        matches.parents,
        matches.tags,
        matches.by_state,
    )
    names: dict[str, str] = {}  # lxml makes a new string per .tag: keep one per name
    accepting = dfa.accepting
    stack = [dfa.initial]
    open_ids = [-1]
    step = dfa.step
    for event, element in events:
        tag = element.tag
        if not isinstance(tag, str):
            continue
        if event == "end":
            stack.pop()
            open_ids.pop()
            continue
        nid = len(elements)
        parents.append(open_ids[-1])
        tags.append(names.setdefault(tag, tag))
        if len(open_ids) > max_depth:
            raise DocumentError(f"the document nests elements deeper than {max_depth} levels", code="FR202")
        did = step(stack[-1], tag)
        # an element object costs ~80 bytes (~130 once its name was read: lxml keeps it); plans ask
        # for the elements paths end on (made again from the tree, they would cost routing time),
        # and the root is where the others are found again
        elements.append(element if accepting[did] or nid == 0 else None)
        stack.append(did)
        open_ids.append(nid)
        members = by_state.get(did)
        if members is None:
            by_state[did] = array("i", (nid,))
        else:
            members.append(nid)
    return matches


def _run_with_positions(
    dfa: LazyDfa, events: Iterable[tuple[str, etree._Element]], max_depth: int
) -> Matches:
    """:func:`run` that also counts, per open element, its children by name as they stream past:
    a positional predicate then reads an element's position (and its parent's count, for
    ``last()``) instead of walking the siblings in the tree."""
    ordinals, element_ordinals = array("i"), array("i")
    counters: list[dict[str, int]] = [{}]  # the document node's, then one per open element
    child_counts: dict[int, dict[str, int]] = {}
    open_ids = [-1]

    def counted(pairs: Iterable[tuple[str, etree._Element]]) -> Iterator[tuple[str, etree._Element]]:
        for event, element in pairs:
            tag = element.tag
            if isinstance(tag, str):
                if event == "end":
                    done = counters.pop()
                    nid = open_ids.pop()
                    if done:
                        child_counts[nid] = done
                else:
                    counter = counters[-1]
                    same = counter[tag] = counter.get(tag, 0) + 1
                    total = counter[""] = counter.get("", 0) + 1
                    ordinals.append(same)
                    element_ordinals.append(total)
                    open_ids.append(len(ordinals) - 1)
                    counters.append({})
            yield event, element

    matches = run(dfa, counted(events), max_depth)
    child_counts[-1] = counters[0]
    matches.child_counts = child_counts
    matches.ordinals, matches.element_ordinals = ordinals, element_ordinals
    return matches
