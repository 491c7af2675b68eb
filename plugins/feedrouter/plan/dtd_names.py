"""Element names as the DTD knows them, for the rules and claims that consult the DTD element graph."""

from __future__ import annotations

from feedrouter.engine.nfa import WILDCARD
from feedrouter.schema import DtdGraph


def dtd_name(graph: DtdGraph, tag: str) -> str | None:
    """The DTD's name for an element tag; None for ``*``, namespaced or undeclared names."""
    if tag == WILDCARD or tag.startswith("{") or tag not in graph.element_names:
        return None
    return tag
