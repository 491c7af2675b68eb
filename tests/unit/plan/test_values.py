"""Casting untyped values to xs:double and general comparisons, as XQuery does them."""

from __future__ import annotations

import math

import pytest

from feedrouter.lang.ast import CompOp, Literal
from feedrouter.plan.values import compare, to_double


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12", 12.0),
        (" 12 ", 12.0),
        ("\n-3.5\t", -3.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("+7", 7.0),
        ("-INF", -math.inf),
        ("INF", math.inf),
        ("+INF", math.inf),
    ],
)
def test_valid_doubles(text: str, expected: float) -> None:
    assert to_double(text) == expected


@pytest.mark.parametrize(
    "text", ["", "abc", "1_000", "inf", "Infinity", "nan", "1e", "0x10", "١٢", "1,5", "--1"]
)
def test_values_xquery_cannot_cast_are_not_numbers(text: str) -> None:
    assert to_double(text) is None


def test_nan_is_unequal_to_everything() -> None:
    assert to_double("NaN") != to_double("NaN")
    assert compare("NaN", CompOp.NE, Literal(1.0)) and not compare("NaN", CompOp.EQ, Literal(1.0))


def test_numeric_comparison_casts_the_node_value() -> None:
    assert compare("10", CompOp.GT, Literal(9.0))  # as numbers, not as strings ("10" < "9")
    assert not compare("ten", CompOp.GT, Literal(9.0))  # FORG0001 in XQuery: not satisfied here


def test_string_comparison_is_codepoint_order() -> None:
    assert compare("10", CompOp.LT, Literal("9"))
    assert compare("Z", CompOp.LT, Literal("a"))
    assert compare("\u00e9", CompOp.GT, Literal("z"))
