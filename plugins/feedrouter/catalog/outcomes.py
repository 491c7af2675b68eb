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


@dataclass(frozen=True)
class Outcome:
    """The status columns of one subscription after a build."""

    status: str
    error_code: str | None = None
    error_message: str | None = None
    error_line: int | None = None
    error_column: int | None = None
    plan_text: str | None = None


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


def explain_all(router: Router, ids: Iterable[str]) -> dict[str, str]:
    """``router.explain`` of every compiled id (the plan text shown next to a subscription)."""
    return {sid: router.explain(sid) for sid in ids if sid in router}
