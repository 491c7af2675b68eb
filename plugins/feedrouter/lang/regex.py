"""XPath regular expressions (``matches(x, pattern, flags)``) as compiled Python patterns.

XPath's regex syntax and flags differ from Python's ``re`` (character class subtraction, ``\\i``/``\\c``
escapes, ``$`` only at the very end, the ``q`` flag). elementpath's translator, the well-kept one,
turns an XPath pattern into Python's and rejects what XPath rejects; this module only maps the
flags and caches the compiled patterns.
"""

from __future__ import annotations

import re
from functools import lru_cache

from elementpath.regex import RegexError, translate_pattern

_FLAGS = {"s": re.S, "m": re.M, "i": re.I, "x": re.X}


@lru_cache(maxsize=4096)
def compile_regex(pattern: str, flags: str = "") -> re.Pattern[str]:
    """The compiled form of an XPath pattern with XPath flags; ``ValueError`` naming the problem
    where XQuery raises FORX0001 (a bad flag) or FORX0002 (a bad pattern)."""
    bits = 0
    for flag in flags:
        if flag in _FLAGS:
            bits |= _FLAGS[flag]
        elif flag != "q":
            raise ValueError(f"unknown flag {flag!r} (XPath knows s, m, i, x, q) [FORX0001]")
    if "q" in flags:
        pattern = re.escape(pattern)
    try:
        return re.compile(translate_pattern(pattern, bits), bits)
    except (re.error, RegexError, OverflowError) as err:
        raise ValueError(f"{err} [FORX0002]") from None
