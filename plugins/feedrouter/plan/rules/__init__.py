"""Plan optimizations (paper 000 §4, §5.1; paper 003 §3), one rule per module, run in order.

Levels: ``none`` (every DupElim kept, hash joins), ``query`` (Claims 1, 3 and 4 from the query
alone) and ``dtd`` (also Claims 2 and 5 from the DTD element graph, rewriting of ``//`` and ``*``
steps the DTD fixes, and warnings for subscriptions that can never match). DTD-driven rules assume
documents valid against the feed's DTD, as the papers do; they apply to element names without a
namespace (a DTD knows names as written, not namespaces).
"""

from __future__ import annotations

from enum import Enum

from feedrouter.errors import CompileError


class Optimize(Enum):
    NONE = "none"
    QUERY = "query"
    DTD = "dtd"

    @classmethod
    def parse(cls, name: str, has_dtd: bool) -> Optimize:
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
