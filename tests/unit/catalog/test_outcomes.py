"""Per-subscription outcomes of a compile."""

from __future__ import annotations

from feedrouter import Router
from feedrouter.catalog.outcomes import Outcome, classify, explain_all
from feedrouter.errors import CompileWarning


def test_valid_invalid_and_never_matching_subscriptions() -> None:
    router = Router.compile(
        [("ok", "//title"), ("bad", "for $s in //a\nreturn $t"), ("never", "//nothing")], on_error="collect"
    )
    warnings = [CompileWarning("never", "FR304", "no 'nothing' element in the DTD")]
    outcomes = classify(["ok", "bad", "never"], router.errors, warnings, explain_all(router, ["ok", "bad"]))
    assert outcomes["ok"].status == "valid" and "//title" in (outcomes["ok"].plan_text or "")
    bad = outcomes["bad"]
    assert (bad.status, bad.error_code, bad.error_line, bad.error_column) == ("invalid", "FR106", 2, 8)
    assert bad.error_message is not None and bad.error_message.startswith("line 2, column 8: [FR106]")
    assert outcomes["never"] == Outcome("never-matches", "FR304", "no 'nothing' element in the DTD")


def test_every_problem_of_a_text_is_kept() -> None:
    router = Router.compile([("two", "//a[b || c]\n  and")], on_error="collect")
    message = classify(["two"], router.errors, [])["two"].error_message or ""
    assert message.count("[FR104]") == 2 and "line 2" in message
