"""The subset's string functions, with XPath's meaning where Python's differs (values from Saxon)."""

from __future__ import annotations

import pytest

from feedrouter.lang.regex import compile_regex
from feedrouter.plan.functions import STRING_FUNCTIONS, lower_case, matches_literal, normalize_space


def test_normalize_space_strips_xml_whitespace_only() -> None:
    assert normalize_space(" \t a \r\n b  ") == "a b"
    assert normalize_space("\u00a0x\u00a0") == "\u00a0x\u00a0"  # a no-break space is not XML whitespace


def test_lower_case_has_no_final_sigma_rule() -> None:
    capital, small, final = "\u03a3", "\u03c3", "\u03c2"
    assert lower_case(f"A{capital} O{capital}") == f"a{small} o{small}"
    assert f"A{capital}".lower().endswith(final)  # Python's own rule, which XPath does not have
    assert STRING_FUNCTIONS["upper-case"]("straße") == "STRASSE"


def test_string_length_counts_codepoints() -> None:
    assert STRING_FUNCTIONS["string-length"]("a😀b") == 3.0


@pytest.mark.parametrize(
    ("name", "value", "literals", "expected"),
    [
        ("contains", "Merger talks", ("",), True),  # the empty needle is always found
        ("starts-with", "", ("",), True),
        ("ends-with", "abc", ("bc",), True),
        ("matches", "Hello", ("^h", "i"), True),
        ("matches", "a\nb", ("a.b",), False),
        ("matches", "a\nb", ("a.b", "s"), True),
        ("matches", "a\nb", ("^b$",), False),
        ("matches", "a\nb", ("^b$", "m"), True),
        ("matches", "a.b", (".", "q"), True),
        ("matches", "ab", ("a b", "x"), True),
        ("matches", "abc", ("[a-z-[b]]+",), True),  # XPath character class subtraction
    ],
)
def test_match_functions(name: str, value: str, literals: tuple[str, ...], expected: bool) -> None:
    assert matches_literal(name, value, literals) is expected


@pytest.mark.parametrize(("pattern", "flags"), [("(", ""), ("a", "g"), ("[b-a]", "")])
def test_bad_patterns_and_flags_are_refused(pattern: str, flags: str) -> None:
    with pytest.raises(ValueError, match="FORX000"):
        compile_regex(pattern, flags)


def test_a_search_past_the_time_bound_raises() -> None:
    from feedrouter.lang.regex import RegexTimeout, compile_regex, search

    with pytest.raises(RegexTimeout):
        search(compile_regex("(a|aa)+$"), "a" * 40 + "!")
    assert search(compile_regex("(a|aa)+$"), "aaa")
