"""Names from the catalog are printed with terminal control characters escaped (issue 18, item 13)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from feedrouter.cli import main

EVIL = "n\x1b[2Jw\u202e"


def test_catalog_commands_print_feed_names_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", "embedded")
    monkeypatch.setenv("FEEDROUTER_HOME", str(tmp_path))
    monkeypatch.delenv("FEEDROUTER_PLANS_URI", raising=False)
    runner = CliRunner()
    seeded = runner.invoke(main, ["catalog", "init-sample", "--subscriptions", "3", "--feed", EVIL])
    status = runner.invoke(main, ["catalog", "status"])
    for result in (seeded, status):
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\u202e" not in result.output
        assert "n\\x1b[2Jw\\u202e" in result.output
