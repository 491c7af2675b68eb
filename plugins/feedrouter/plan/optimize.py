"""How far the planner optimizes, and what a rewrite rule reads and reports (paper 000 §4; 003 §3).

Levels: ``none`` (every DupElim kept, hash joins), ``query`` (Claims 1, 3 and 4 from the query
alone) and ``dtd`` (also Claims 2 and 5 from the DTD element graph, the rewrite rules of
:mod:`feedrouter.plan.rules` for the ``//`` and ``*`` steps the DTD fixes, and warnings for
subscriptions that can never match). DTD-driven optimizations assume documents valid against the
feed's DTD, as the papers do; they apply to element names without a namespace (a DTD knows names as
written, not namespaces).

Example:
    >>> context = RuleContext(Optimize.parse("auto", has_dtd=False))
    >>> context.level.value, context.graph is None
    ('query', True)
    >>> context.note((0,), "b"); context.note((), "a"); context.note((1,), "a")
    >>> context.applied()
    ['a', 'b']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from feedrouter.errors import CompileError
from feedrouter.schema import DtdGraph


class Optimize(Enum):
    """The optimization level of a router (its ``optimize`` option)."""

    NONE = "none"
    QUERY = "query"
    DTD = "dtd"

    @classmethod
    def parse(cls, name: str, has_dtd: bool) -> Optimize:
        """The level named by an ``optimize`` option; ``"auto"`` is ``dtd`` when the feed has a DTD."""
        if name == "auto":
            return cls.DTD if has_dtd else cls.QUERY
        try:
            level = cls(name)
        except ValueError:
            raise CompileError(
                f"unknown optimization level {name!r}; use 'auto', 'none', 'query' or 'dtd'", code="FR302"
            ) from None
        if level is cls.DTD and not has_dtd:
            raise CompileError("optimize='dtd' needs the feed's DTD (pass dtd=...)", code="FR308")
        return level

    @property
    def claims(self) -> bool:
        return self is not Optimize.NONE

    @property
    def uses_dtd(self) -> bool:
        return self is Optimize.DTD


@dataclass(frozen=True)
class Note:
    """One rewrite a rule applied, and where: ``at`` is the branch path from the pattern (``()``: the
    pattern itself, ``(0, 1)``: branch 1 of its branch 0)."""

    at: tuple[int, ...]
    text: str


@dataclass
class RuleContext:
    """What a rewrite rule reads (the level; the DTD graph, None unless the level uses it) and where it
    reports the rewrites it applied (:meth:`note`), for :meth:`~feedrouter.router.Router.explain`."""

    level: Optimize
    graph: DtdGraph | None = None
    notes: list[Note] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.level.uses_dtd:
            self.graph = None  # the DTD-driven rules check this alone

    def note(self, at: tuple[int, ...], text: str) -> None:
        """Report one rewrite applied in the branch ``at`` of the pattern."""
        self.notes.append(Note(at, text))

    def applied(self) -> list[str]:
        """The rewrites applied, each once: the pattern's first, then each branch's, depth first, and
        within one pattern in the order of the rules."""
        texts: list[str] = []
        for note in sorted(self.notes, key=lambda n: n.at):  # stable: the rules' order within a branch
            if note.text not in texts:
                texts.append(note.text)
        return texts
