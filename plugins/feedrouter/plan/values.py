"""Node values and general comparisons with XQuery's semantics for untyped data.

A node's value is untyped: compared with a string literal it is a string (codepoint order, which is
Python's ``str`` order); compared with a numeric literal it is cast to ``xs:double``. Where XQuery
would raise FORG0001 (the value is not a number), the node does not satisfy the comparison: our one
documented difference.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from typing import Any

from feedrouter.lang.ast import CompOp, Literal

_XML_WHITESPACE = " \t\r\n"
# The xs:double lexical space (XSD 1.1), after whitespace collapsing.
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = {"INF": math.inf, "+INF": math.inf, "-INF": -math.inf, "NaN": math.nan}

OPERATORS: dict[CompOp, Callable[[Any, Any], bool]] = {
    CompOp.EQ: operator.eq,
    CompOp.NE: operator.ne,
    CompOp.LT: operator.lt,
    CompOp.LE: operator.le,
    CompOp.GT: operator.gt,
    CompOp.GE: operator.ge,
}


def to_double(text: str) -> float | None:
    """Cast an untyped value to xs:double as XQuery does; ``None`` where XQuery raises FORG0001."""
    token = text.strip(_XML_WHITESPACE)
    special = _SPECIAL.get(token)
    if special is not None:
        return special
    if _DOUBLE.fullmatch(token) is None:
        return None
    return float(token)


def compare(value: str, op: CompOp, literal: Literal) -> bool:
    """One value against one literal: one step of an existential general comparison."""
    if isinstance(literal.value, float):
        number = to_double(value)
        return number is not None and OPERATORS[op](number, literal.value)
    return OPERATORS[op](value, literal.value)


def comparator(op: CompOp, literal: Literal) -> Callable[[str], bool]:
    """A one-argument test for ``value op literal``, built once per predicate."""
    fn = OPERATORS[op]
    target = literal.value
    if isinstance(target, float):

        def numeric(value: str) -> bool:
            number = to_double(value)
            return number is not None and fn(number, target)

        return numeric
    return lambda value: fn(value, target)
