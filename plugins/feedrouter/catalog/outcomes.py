"""What a compile says about each subscription: valid, invalid (why and where) or never-matches.

Pure functions over a compiled :class:`~feedrouter.Router`; the builder writes the result back to
``subscriptions``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from feedrouter.errors import CompileWarning, FeedrouterError
from feedrouter.router import Router

#: The warning code of a subscription the DTD rules out (accepted, but it can never match).
NEVER_MATCHES = "FR304"
#: Characters of explain text stored per subscription (``plan_text``): a 64 KiB text can explain
#: into far more, and a build writes one per subscription.
MAX_PLAN_TEXT_CHARS = 16 * 1024
#: Characters of error text stored per subscription (``error_message``): the parser reports every
#: problem of a text, which for a long broken text is a long list.
MAX_ERROR_MESSAGE_CHARS = 16 * 1024


@dataclass(frozen=True)
class Outcome:
    """The status columns of one subscription after a build."""

    status: str
    error_code: str | None = None
    error_message: str | None = None
    error_line: int | None = None
    error_column: int | None = None
    plan_text: str | None = None

    def __post_init__(self) -> None:
        # Bounded here, so no path to the catalog (classify, validation, tests) stores more.
        object.__setattr__(self, "error_message", bounded(self.error_message, MAX_ERROR_MESSAGE_CHARS))
        object.__setattr__(self, "plan_text", bounded(self.plan_text, MAX_PLAN_TEXT_CHARS))


def classify(
    ids: Iterable[str],
    errors: dict[str, FeedrouterError],
    warnings: Iterable[CompileWarning],
    explain: dict[str, str] | None = None,
) -> dict[str, Outcome]:
    """One outcome per id: errors make it invalid, an FR304 warning never-matches, else valid."""
    never = {w.subscription_id: w for w in warnings if w.code == NEVER_MATCHES}
    plans = explain or {}
    result: dict[str, Outcome] = {}
    for sid in ids:
        if sid in errors:
            result[sid] = invalid(errors[sid])
        elif sid in never:
            warning = never[sid]
            result[sid] = Outcome("never-matches", warning.code, warning.message, plan_text=plans.get(sid))
        else:
            result[sid] = Outcome("valid", plan_text=plans.get(sid))
    return result


def invalid(error: FeedrouterError) -> Outcome:
    """The outcome of a rejected text: every problem the parser found, the first one's position."""
    message = "\n".join(detail.render() for detail in error.details) or error.message
    return Outcome("invalid", error.code, message, error.line, error.column)


def bounded(text: str | None, limit: int) -> str | None:
    """``text`` cut to at most ``limit`` characters, saying how much was left out.

    >>> bounded("x" * 100, 60)[-30:]
    '… (72 more characters omitted)'
    >>> len(bounded("x" * 100, 60)) <= 60
    True
    """
    if text is None or len(text) <= limit:
        return text
    # The count has at most as many digits as len(text): size the cut for that, then say it exactly.
    kept = limit - len(f"\n… ({len(text)} more characters omitted)")
    return text[:kept] + f"\n… ({len(text) - kept} more characters omitted)"


def explain_all(router: Router, ids: Iterable[str]) -> dict[str, str]:
    """``router.explain`` of every compiled id (the plan text shown next to a subscription)."""
    return {sid: router.explain(sid) for sid in ids if sid in router}
