"""Random documents that follow a DTD (the document generator of paper 000, section 6.1).

Documents follow the content models (sequences, choices, ``?``, ``*``, ``+``) and are valid against
the DTD. The workload parameters of the paper:

* ``doc_depth`` (DocDepth) bounds element nesting: an optional part is only taken when it fits in the
  levels left, and once the bound is reached every required part is finished the shortest way (the
  DTD may force a document deeper than ``doc_depth``; then it is as shallow as the DTD allows);
* ``max_repeats`` (MaxRepeats) bounds ``*`` and ``+``; pass a mapping to set it per element (the paper
  varies it "on an individual element basis"), e.g. ``{"book": 20, "*": 3}``;
* ``max_value`` (MaxValue): numbers are integers 1..max_value (see :mod:`feedrouter.workload.values`).

Each document ``i`` of a call depends only on ``(seed, i)``, so a longer list extends a shorter one.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from feedrouter.schema import DtdGraph, Particle
from feedrouter.workload.values import (
    SPECIAL_WORDS,
    WORDS,
    Domain,
    attribute_domain,
    element_domain,
    is_namespace_attribute,
)

if TYPE_CHECKING:
    from typing import Unpack


class DocumentExtras(TypedDict, total=False):
    """The :class:`DocumentOptions` fields :func:`generate_documents` takes as keywords."""

    attribute_prob: float
    optional_prob: float
    comment_prob: float
    mixed_text_prob: float
    special_prob: float
    charref_prob: float
    entity_prob: float
    doctype: bool
    max_elements: int


@dataclass(frozen=True)
class DocumentOptions:
    """The knobs of :func:`generate_documents` (see its docstring)."""

    doc_depth: int = 6
    max_repeats: int | Mapping[str, int] = 3
    max_value: int = 20
    attribute_prob: float = 0.7
    optional_prob: float = 0.7
    comment_prob: float = 0.05
    mixed_text_prob: float = 0.6
    special_prob: float = 0.1
    charref_prob: float = 0.1
    entity_prob: float = 0.3
    doctype: bool = False
    max_elements: int = 2000

    def repeats_for(self, name: str | None) -> int:
        """The MaxRepeats bound of a particle naming ``name`` (None: a group)."""
        if isinstance(self.max_repeats, int):
            return self.max_repeats
        default = self.max_repeats.get("*", 3)
        return self.max_repeats.get(name, default) if name else default


def generate_documents(
    graph: DtdGraph,
    count: int,
    *,
    seed: int,
    doc_depth: int = 6,
    max_repeats: int | Mapping[str, int] = 3,
    max_value: int = 20,
    **options: Unpack[DocumentExtras],
) -> list[bytes]:
    """Generate ``count`` documents valid against ``graph``'s DTD, as UTF-8 bytes.

    Args:
        graph: the DTD; documents start with ``graph.root``.
        count: how many documents.
        seed: the seed; the same seed gives the same documents.
        doc_depth: DocDepth, the nesting bound (the root is level 1).
        max_repeats: MaxRepeats, an int or a per-element mapping (key "*" is the default).
        max_value: MaxValue, numbers are 1..max_value.
        **options: further :class:`DocumentOptions` fields: ``attribute_prob`` (optional attributes),
            ``optional_prob`` (taking a ``?`` or ``*`` part at all), ``comment_prob``,
            ``mixed_text_prob`` (text around children in mixed content),
            ``special_prob`` (words with ``& < > " '``, spaces or non-ASCII text), ``charref_prob``
            (non-ASCII written as ``&#NNN;``), ``doctype`` (emit ``<!DOCTYPE root [entities]>``),
            ``entity_prob`` (with ``doctype``: write characters as the DTD's entity references),
            ``max_elements`` (soft size cap: past it everything is finished the shortest way).

    Example:
        >>> from feedrouter.workload import dtds
        >>> doc = generate_documents(dtds.load("bib"), 1, seed=7, max_repeats=1)[0]
        >>> doc.startswith(b"<bib")
        True
    """
    opts = DocumentOptions(doc_depth, max_repeats, max_value, **options)
    heights = min_heights(graph)
    return [
        _DocumentWriter(graph, opts, heights, random.Random(f"doc:{seed}:{i}")).document()
        for i in range(count)
    ]


def min_heights(graph: DtdGraph) -> dict[str, float]:
    """The fewest levels a valid subtree rooted at each element needs (inf: no finite subtree)."""
    heights: dict[str, float] = {name: math.inf for name in graph.element_names}
    changed = True
    while changed:
        changed = False
        for name, decl in graph.declarations.items():
            need = 1 + particle_height(decl.model, heights) if decl.kind == "element" else 1
            if need < heights[name]:
                heights[name], changed = need, True
    return heights


def particle_height(particle: Particle | None, heights: dict[str, float]) -> float:
    """Levels needed below the parent to satisfy ``particle`` taken once."""
    if particle is None or particle.kind == "pcdata":
        return 0
    if particle.kind == "name":
        return heights.get(str(particle.name), math.inf)
    needs = [0 if p.occur in ("opt", "mult") else particle_height(p, heights) for p in particle.items]
    return max(needs) if particle.kind == "seq" else min(needs)


@dataclass
class _DocumentWriter:
    """Writes one document as text; ``budget`` is the number of levels still allowed below."""

    graph: DtdGraph
    opts: DocumentOptions
    heights: dict[str, float]
    rng: random.Random
    out: list[str] = field(default_factory=list)
    elements: int = 0
    ids: int = 0

    def document(self) -> bytes:
        if self.opts.doctype:
            self.out.append(self._doctype())
        self.element(self.graph.root, self.opts.doc_depth - 1)
        return self._resolve_references("".join(self.out)).encode("utf-8")

    def _resolve_references(self, text: str) -> str:
        """Point IDREF attributes at IDs of this document (they are only known at the end).

        Without any ID an #IMPLIED reference is dropped; a #REQUIRED one keeps a dangling value
        (the document is then invalid, which only a DTD requiring references without IDs can cause).
        """

        def target(match: re.Match[str]) -> str:
            if self.ids:
                return f' {match[1]}="n{self.rng.randint(1, self.ids)}"'
            return "" if match[2] == "implied" else f' {match[1]}="n0"'

        return _REFERENCE.sub(target, text)

    def _doctype(self) -> str:
        decls = self.graph.entity_declarations()
        return f"<!DOCTYPE {self.graph.root} [\n{decls}\n]>\n" if decls else f"<!DOCTYPE {self.graph.root}>\n"

    @property
    def finishing(self) -> bool:
        return self.elements >= self.opts.max_elements

    # ------------------------------------------------------------------------------------ elements

    def element(self, name: str, budget: int) -> None:
        self.elements += 1
        decl = self.graph.declaration(name)
        self.out.append(f"<{name}{self._attributes(name)}")
        if decl.kind == "empty":
            self.out.append("/>")
            return
        self.out.append(">")
        if decl.text_only:
            self._comment()
            self.out.append(self._value(element_domain(self.graph, name)))
            self._comment()
        elif decl.kind == "element":
            self._children(self.expand(decl.model, budget), budget, mixed=False)
        else:
            self._children(self._mixed_children(name, budget), budget, mixed=True)
        self.out.append(f"</{name}>")

    def _children(self, names: list[str], budget: int, *, mixed: bool) -> None:
        for child in names:
            self._comment()
            if mixed and self.rng.random() < self.opts.mixed_text_prob:
                self.out.append(self._text(self._word()) + " ")
            self.element(child, budget - 1)
        if mixed and (not names or self.rng.random() < self.opts.mixed_text_prob):
            self.out.append(self._text(self._word()))

    def _mixed_children(self, name: str, budget: int) -> list[str]:
        """Children of mixed content ``(#PCDATA | a | b)*`` or ANY: any number, any order."""
        fitting = [n for n in sorted(self.graph.children(name)) if self.heights[n] <= budget]
        if not fitting or self.finishing:
            return []
        count = self.rng.randint(0, self.opts.repeats_for(None))
        return [self.rng.choice(fitting) for _ in range(count)]

    # ------------------------------------------------------------------------------------ content models

    def expand(self, particle: Particle | None, budget: int) -> list[str]:
        """Child element names for ``particle`` with its occurrence indicator applied."""
        if particle is None:
            return []
        reps = self._repeats(particle, budget)
        return [name for _ in range(reps) for name in self._expand_once(particle, budget)]

    def _repeats(self, particle: Particle, budget: int) -> int:
        """How often to take ``particle``: at least what it requires, more only if it fits."""
        low = 1 if particle.occur in ("once", "plus") else 0
        fits = not self.finishing and particle_height(particle, self.heights) <= budget
        if not fits or particle.occur == "once":
            return low
        if low == 0 and self.rng.random() >= self.opts.optional_prob:
            return 0
        high = 1 if particle.occur == "opt" else self.opts.repeats_for(particle.name)
        return self.rng.randint(1, max(1, high))

    def _expand_once(self, particle: Particle, budget: int) -> list[str]:
        if particle.kind == "name":
            return [str(particle.name)]
        if particle.kind == "seq":
            return [name for item in particle.items for name in self.expand(item, budget)]
        if particle.kind == "or":
            return self.expand(self._choose(particle.items, budget), budget)
        return []

    def _choose(self, items: tuple[Particle, ...], budget: int) -> Particle:
        """A random alternative that fits the budget, else the one that finishes soonest."""
        cost = {i: self._once_height(item) for i, item in enumerate(items)}
        fitting = [i for i, c in cost.items() if c <= budget]
        if fitting and not self.finishing:
            return items[self.rng.choice(fitting)]
        return items[min(cost, key=cost.__getitem__)]

    def _once_height(self, item: Particle) -> float:
        return 0 if item.occur in ("opt", "mult") else particle_height(item, self.heights)

    # ------------------------------------------------------------------------------------ attributes, text

    def _attributes(self, name: str) -> str:
        parts = []
        for attr in self.graph.declaration(name).attributes:
            value = self._attribute_value(name, attr.name, attr.type, attr.default, attr.default_value)
            if value is not None and value.startswith(_MARK):
                parts.append(f" {_MARK}{attr.name}{value}")
            elif value is not None:
                parts.append(f' {attr.name}="{_escape_attribute(value)}"')
        return "".join(parts)

    def _attribute_value(
        self, element: str, attr: str, attr_type: str, default: str, fixed: str | None
    ) -> str | None:
        # Namespace declarations are always written: prefixed names need them to be well-formed.
        if is_namespace_attribute(attr):
            return fixed
        domain = attribute_domain(self.graph, element, attr)
        wanted = default in ("required", "fixed") or self.rng.random() < self.opts.attribute_prob
        if not wanted or (domain.kind == "ref" and not attr_type.startswith("idref")):
            return None  # ENTITY values would need unparsed entities; leave them out
        if domain.kind == "ref":
            return f"{_MARK}{default}{_MARK}"
        if domain.kind == "id":
            self.ids += 1
            return f"n{self.ids}"
        return self._value(domain, escape=False)

    def _value(self, domain: Domain, *, escape: bool = True) -> str:
        if domain.kind == "number":
            return str(self.rng.randint(1, self.opts.max_value))
        if domain.kind == "enum":
            return self.rng.choice(domain.values)
        word = self.rng.choice(WORDS) if domain.kind == "token" else self._word()
        return self._text(word) if escape else word

    def _word(self) -> str:
        special = self.rng.random() < self.opts.special_prob
        return self.rng.choice(SPECIAL_WORDS if special else WORDS)

    def _text(self, word: str) -> str:
        """Escape a word as character data, sometimes as character or entity references."""
        text = _escape_text(word)
        if self.opts.doctype and self.rng.random() < self.opts.entity_prob:
            for entity in self.graph.entities:
                if len(entity.content) == 1 and entity.content in text and entity.content not in "<&>":
                    text = text.replace(entity.content, f"&{entity.name};")
        if self.rng.random() < self.opts.charref_prob:
            text = "".join(f"&#{ord(c)};" if ord(c) > 127 else c for c in text)
        return text

    def _comment(self) -> None:
        if self.rng.random() < self.opts.comment_prob:
            self.out.append(f"<!-- {self.rng.choice(WORDS)} -->")


#: Marks an IDREF attribute until the document's IDs are known: `` \0name\0default\0``.
_MARK = "\x00"
_REFERENCE = re.compile(" \x00([^\x00]+)\x00([a-z]+)\x00")


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_attribute(text: str) -> str:
    return _escape_text(text).replace('"', "&quot;")
