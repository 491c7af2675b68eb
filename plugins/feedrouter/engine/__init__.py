"""The engine: one pass over a document matches every subscription's navigation paths at once.

In: the navigation paths the planner registers (absolute element paths, ``/`` and ``//`` steps,
names or ``*``) and a document's bytes. Out: a :class:`~feedrouter.engine.runtime.Matches` per
document, what the plans (:mod:`feedrouter.plan`) post-process: the parsed elements by id in document
order with their tags, parents and subtree ranges, and per path id the path-tuple stream (one tuple
of element ids per way the path matched), built on demand and within a bound.

* :mod:`.document` parses untrusted XML safely (internal entities only, no file or network access,
  size and depth limits) into start/end element events;
* :mod:`.nfa` is the shared YFilter NFA over all registered paths: common prefixes share states;
* :mod:`.runtime` runs it over the events (a lazy DFA of interned state sets) and records matches.

The engine knows nothing of predicates, results or subscriptions: only paths and their ids.
"""
