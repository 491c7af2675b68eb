"""The subset's functions with XPath 3.1's meaning, on values already atomized to strings.

Every function here takes one string (the empty sequence is passed as ``""``, as XPath does for
``xs:string?`` arguments) and gives one value. Strings compare by Unicode codepoint, with no collation;
case mapping is Unicode's full mapping (``upper-case("ß")`` is ``"SS"``), as Saxon's is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from feedrouter.lang.regex import compile_regex, search

_XML_SPACE = re.compile(r"[ \t\r\n]+")


def normalize_space(value: str) -> str:
    """XML whitespace (space, tab, CR, LF) stripped and collapsed; other spaces (NBSP) stay."""
    return _XML_SPACE.sub(" ", value).strip(" ")


def lower_case(value: str) -> str:
    """Unicode's lower-case mapping without its context-sensitive rules, as XPath defines it: Python
    applies the final-sigma rule (U+03A3 at a word's end to U+03C2), XPath maps every capital sigma
    to U+03C3."""
    return value.replace("\u03a3", "\u03c3").lower()


STRING_FUNCTIONS: dict[str, Callable[[str], str | float]] = {
    "lower-case": lower_case,
    "upper-case": str.upper,
    "normalize-space": normalize_space,
    "string-length": lambda value: float(len(value)),  # codepoints, which is what len() counts
    "string": lambda value: value,
}


def matches_literal(name: str, value: str, literals: tuple[str, ...]) -> bool:
    """``contains``/``starts-with``/``ends-with``/``matches`` of ``value`` with the literal arguments."""
    needle = literals[0]
    if name == "contains":
        return needle in value
    if name == "starts-with":
        return value.startswith(needle)
    if name == "ends-with":
        return value.endswith(needle)
    flags = literals[1] if len(literals) > 1 else ""
    return search(compile_regex(needle, flags), value)  # RegexTimeout past the time bound
