"""The shared NFA over the navigation paths of all subscriptions (YFilter, papers 004 and 000 §2.3).

A navigation path is a tuple of :class:`NavStep` (axis and element name or ``*``). Paths with a common
prefix share the states of that prefix; a ``//`` step goes through an epsilon edge to a state with a
``*`` self-loop, and that state is shared by every path taking ``//`` from the same state; identical
paths share their accepting state and get one path id, so the runtime emits one stream per distinct
path. Paths are reference counted: adding and removing subscriptions changes the automaton in place,
and the result is the same automaton (up to state numbering) that a fresh build would give.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from feedrouter.lang.ast import Axis

WILDCARD = "*"
_EPSILON = "//"


#: ``Q{}*``: any element (or attribute) in no namespace.
NO_NAMESPACE = "{}*"


def is_namespace_wildcard(test: str) -> bool:
    """``{*}local`` (``*:local``: any namespace) or ``{uri}*`` (``p:*``: any name in ``uri``)."""
    return test.startswith("{*}") or (test.startswith("{") and test.endswith("}*"))


def tag_matches(test: str, tag: str) -> bool:
    """Whether an element named ``tag`` (lxml's Clark name) passes the name test ``test``."""
    if test in (WILDCARD, tag):
        return True
    if test.startswith("{*}"):
        return tag.rpartition("}")[2] == test[3:]
    if test == NO_NAMESPACE:
        return not tag.startswith("{")
    return test.endswith("}*") and tag.startswith(test[:-1])


def wildcard_labels(tag: str) -> tuple[str, ...]:
    """The namespace-wildcard name tests an element named ``tag`` passes, as NFA edge labels."""
    uri, brace, local = tag.rpartition("}")
    if not brace:
        return ("{*}" + tag, NO_NAMESPACE)
    return ("{*}" + local, uri + "}*")


@dataclass(frozen=True)
class NavStep:
    """One navigation step: ``axis`` and an element name in Clark notation, or ``*``."""

    axis: Axis
    tag: str

    def __str__(self) -> str:
        return f"{self.axis.value}{self.tag}"


NavPath = tuple[NavStep, ...]


def format_path(path: NavPath) -> str:
    return "".join(str(step) for step in path)


@dataclass
class _State:
    parent: int
    label: str  # the edge label from the parent: an element name, "*", or "//" for an epsilon edge
    edges: dict[str, int] = field(default_factory=dict)
    epsilon: int = -1  # the state reached by a '//' step from here, if any
    self_loop: bool = False  # a '//' state: stays active below itself
    accepts: int = -1  # the path id accepted here, if any


class Nfa:
    """A YFilter NFA with incremental insertion and removal of paths."""

    #: Whether some edge is a namespace wildcard (``{*}x``, ``{uri}*``); a class default, so that
    #: automata pickled before these existed read False. It is never reset: a stale True costs
    #: two dictionary look-ups per new (state set, name), which the lazy DFA caches anyway.
    namespace_wildcards = False

    def __init__(self) -> None:
        self._states: dict[int, _State] = {0: _State(parent=-1, label="")}
        self._next_state = 1
        self._path_ids: dict[NavPath, int] = {}
        self._paths: dict[int, NavPath] = {}
        self._path_state: dict[int, int] = {}
        self._refs: dict[int, int] = {}
        self._through: dict[int, int] = {}  # state -> distinct paths going through it
        self._next_path = 0
        self.version = 0  # bumped on every structural change; the runtime's cached DFA keys on it

    # -- building -------------------------------------------------------------------------------

    def add_path(self, path: NavPath) -> int:
        """Insert ``path`` (or take one more reference on it) and return its path id."""
        if not path:
            raise ValueError("a navigation path needs at least one step")
        pid = self._path_ids.get(path)
        if pid is None:
            pid = self._insert(path)
        self._refs[pid] += 1
        return pid

    def release_path(self, path: NavPath) -> None:
        """Drop one reference on ``path``; the last one removes it and prunes states nobody needs."""
        pid = self._path_ids[path]
        self._refs[pid] -= 1
        if self._refs[pid] == 0:
            self._delete(pid)

    def _insert(self, path: NavPath) -> int:
        state = 0
        for step in path:
            if step.axis is Axis.DESCENDANT:
                state = self._epsilon_state(state)
            state = self._edge_state(state, step.tag)
        pid = self._next_path
        self._next_path += 1
        self._states[state].accepts = pid
        self._path_ids[path] = pid
        self._paths[pid] = path
        self._path_state[pid] = state
        self._refs[pid] = 0
        for state in self.states_of(path):
            self._through[state] = self._through.get(state, 0) + 1
        self.version += 1
        return pid

    def _new_state(self, parent: int, label: str) -> int:
        state = self._next_state
        self._next_state += 1
        self._states[state] = _State(parent=parent, label=label)
        return state

    def _epsilon_state(self, state: int) -> int:
        node = self._states[state]
        if node.epsilon < 0:
            node.epsilon = self._new_state(state, _EPSILON)
            self._states[node.epsilon].self_loop = True
        return node.epsilon

    def _edge_state(self, state: int, tag: str) -> int:
        node = self._states[state]
        target = node.edges.get(tag)
        if target is None:
            target = node.edges[tag] = self._new_state(state, tag)
            if is_namespace_wildcard(tag):
                self.namespace_wildcards = True  # steps look those labels up too from now on
        return target

    def _delete(self, pid: int) -> None:
        for state in self.states_of(self._paths[pid]):
            self._through[state] -= 1
            if not self._through[state]:
                del self._through[state]
        path = self._paths.pop(pid)
        del self._path_ids[path], self._refs[pid]
        state = self._path_state.pop(pid)
        self._states[state].accepts = -1
        self._prune(state)
        self.version += 1

    def _prune(self, state: int) -> None:
        """Remove states that accept nothing and lead nowhere, walking up towards the root."""
        while state != 0:
            node = self._states[state]
            if node.accepts >= 0 or node.edges or node.epsilon >= 0:
                return
            parent = self._states[node.parent]
            if node.label == _EPSILON:
                parent.epsilon = -1
            else:
                del parent.edges[node.label]
            del self._states[state]
            state = node.parent

    # -- reading --------------------------------------------------------------------------------

    @property
    def state_count(self) -> int:
        return len(self._states)

    @property
    def path_count(self) -> int:
        return len(self._paths)

    def path_id(self, path: NavPath) -> int | None:
        return self._path_ids.get(path)

    def path(self, pid: int) -> NavPath:
        return self._paths[pid]

    def states_of(self, path: NavPath) -> list[int]:
        """The states a path goes through, epsilon states included (for ``explain``)."""
        states, state = [0], 0
        for step in path:
            if step.axis is Axis.DESCENDANT:
                state = self._states[state].epsilon
                states.append(state)
            state = self._states[state].edges[step.tag]
            states.append(state)
        return states

    def sharing_of(self, state: int) -> int:
        """How many distinct paths go through ``state``."""
        return self._through.get(state, 0)

    def closure(self, states: frozenset[int] | set[int]) -> frozenset[int]:
        """Add the '//' states reachable by epsilon edges."""
        out = set(states)
        todo = list(states)
        while todo:
            eps = self._states[todo.pop()].epsilon
            if eps >= 0 and eps not in out:
                out.add(eps)
                todo.append(eps)
        return frozenset(out)

    def step(self, states: frozenset[int], tag: str) -> frozenset[int]:
        """The active states after an element named ``tag`` starts below ``states``."""
        nxt: set[int] = set()
        labels = (tag, WILDCARD, *wildcard_labels(tag)) if self.namespace_wildcards else (tag, WILDCARD)
        for state in states:
            node = self._states[state]
            for label in labels:
                target = node.edges.get(label)
                if target is not None:
                    nxt.add(target)
            if node.self_loop:
                nxt.add(state)
        return self.closure(nxt)

    def accepted(self, states: frozenset[int]) -> tuple[int, ...]:
        """Path ids accepted by a set of active states, sorted for a stable emission order."""
        return tuple(sorted(a for a in (self._states[s].accepts for s in states) if a >= 0))

    def initial(self) -> frozenset[int]:
        return self.closure({0})

    def canonical(self) -> object:
        """A numbering-free picture of the automaton: equal for equal path sets, however built."""
        return self._canonical_from(0)

    def _canonical_from(self, state: int) -> object:
        node = self._states[state]
        accepts = format_path(self._paths[node.accepts]) if node.accepts >= 0 else None
        edges = tuple(sorted((label, self._canonical_from(t)) for label, t in node.edges.items()))
        eps = self._canonical_from(node.epsilon) if node.epsilon >= 0 else None
        return (accepts, node.self_loop, edges, eps)
