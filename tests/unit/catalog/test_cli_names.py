"""Names from the catalog are printed with terminal control characters escaped (issue 18, item 13).

The catalog's checks keep control characters out of feed and subscriber names, so the hostile
name here is a subscription's (only its length is checked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from feedrouter.cli import main

EVIL = "n\x1b[2Jw\u202e"


def test_catalog_commands_print_subscription_names_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog_db_url: str
) -> None:
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", catalog_db_url)
    monkeypatch.setenv("FEEDROUTER_HOME", str(tmp_path))
    monkeypatch.delenv("FEEDROUTER_PLANS_URI", raising=False)
    runner = CliRunner()
    seeded = runner.invoke(main, ["catalog", "init-sample", "--subscriptions", "3"])
    assert seeded.exit_code == 0, seeded.output
    engine = create_engine(catalog_db_url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO subscriptions (subscriber_id, feed_id, name, query)"
                " SELECT min(s.id), min(f.id), :n, '//a[b or c]' FROM subscribers s, feeds f"
                " WHERE f.name = 'news'"
            ),
            {"n": EVIL},
        )
    engine.dispose()
    built = runner.invoke(main, ["build-plan", "--feed", "news"])
    status = runner.invoke(main, ["catalog", "status"])
    for result in (built, status):
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\u202e" not in result.output
        assert "n\\x1b[2Jw\\u202e" in result.output
