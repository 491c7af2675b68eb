"""XPath regular expressions (``matches(x, pattern, flags)``) as compiled Python patterns.

XPath's regex syntax and flags differ from Python's ``re`` (character class subtraction, ``\\i``/``\\c``
escapes, ``$`` only at the very end, the ``q`` flag). elementpath's translator, the well-kept one,
turns an XPath pattern into Python's and rejects what XPath rejects; this module only maps the
flags and caches the compiled patterns.

Patterns come from subscribers, and a backtracking matcher can take exponential time on a short
value (``(a|aa)+$``). Matching runs on the ``regex`` module, which takes a timeout: a search past
:data:`MATCH_TIMEOUT_S` raises :class:`RegexTimeout`, which the evaluator charges to the document's
work budget.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import regex
from elementpath.regex import RegexError, translate_pattern

_FLAGS = {"s": re.S, "m": re.M, "i": re.I, "x": re.X}
_REGEX_FLAGS = {re.S: regex.S, re.M: regex.M, re.I: regex.I, re.X: regex.X}
#: The longest one search may run (seconds) before it is abandoned.
MATCH_TIMEOUT_S = 0.05


class RegexTimeout(Exception):
    """A ``matches()`` search ran past :data:`MATCH_TIMEOUT_S`."""


def search(pattern: Any, value: str) -> bool:
    """Whether ``pattern`` (from :func:`compile_regex`) occurs in ``value``, within the time bound."""
    try:
        return pattern.search(value, timeout=MATCH_TIMEOUT_S) is not None
    except TimeoutError:
        raise RegexTimeout(pattern.pattern) from None


@lru_cache(maxsize=4096)
def compile_regex(pattern: str, flags: str = "") -> Any:
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
        translated = translate_pattern(pattern, bits)
        re.compile(translated, bits)  # Python's own syntax check first: the errors users know
        return regex.compile(translated, sum(_REGEX_FLAGS[b] for b in _FLAGS.values() if bits & b))
    except (re.error, regex.error, RegexError, OverflowError) as err:
        raise ValueError(f"{err} [FORX0002]") from None
