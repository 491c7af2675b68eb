"""Join windows: positive ``xs:dayTimeDuration`` values, read as the stream module reads them.

The parser checks a join subscription's window with this (a positioned error for a bad one), and the
join stage turns it into a :class:`~datetime.timedelta`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal, localcontext

#: A longer window is refused: the text is a subscriber's, and reading it stays bounded work.
MAX_LENGTH = 64

_XML_SPACE = " \t\r\n"
_MICROSECOND = Decimal("0.000001")
# The xs:dayTimeDuration lexical form without a sign, as Saxon casts it: seconds "1.5" but not ".5"
# or "1.".
_WINDOW = re.compile(
    r"P(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?",
    re.ASCII,
)


def parse_window(text: str) -> timedelta:
    """Reads a join window, a positive xs:dayTimeDuration such as ``PT6H`` or ``P1DT0.5S``.

    Fractional seconds finer than a microsecond are dropped: event times have microseconds, so their
    differences are whole microseconds and compare with the window the same either way.

    Args:
        text: The lexical form, ``PnDTnHnMnS`` with any of the parts.

    Returns:
        The window.

    Raises:
        ValueError: ``text`` is not that form, is longer than :data:`MAX_LENGTH`, is too large or is
            not positive.
    """
    match = _WINDOW.fullmatch(text.strip(_XML_SPACE)) if len(text) <= MAX_LENGTH else None
    if match is None or not any(match.groups()):
        raise ValueError(f"the window {text!r} is not an xs:dayTimeDuration such as PT6H or P1DT12H")
    with localcontext() as context:
        # every digit kept (the default 28 would round 59.999...9 seconds up to a minute, and a
        # pair a minute apart would be in the window): the text's digits, times at most 86,400
        context.prec = 2 * MAX_LENGTH
        days, hours, minutes, seconds = (Decimal(part or 0) for part in match.groups())
        total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
        micro = int(total / _MICROSECOND)  # truncated: a window holds whole microseconds
    if total <= 0:
        raise ValueError(f"the window {text!r} is not positive")
    try:
        return timedelta(microseconds=micro)
    except OverflowError:
        raise ValueError(f"the window {text!r} is too large") from None
