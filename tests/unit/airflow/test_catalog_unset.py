"""A component with no catalog configured fails loudly (FR401) naming both settings, instead of
creating anything in its working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("airflow")

from feedrouter.airflow.hooks import FeedrouterHook
from feedrouter.airflow.settings import Connections
from feedrouter.errors import CatalogError


@pytest.fixture
def nothing_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("FEEDROUTER_DATABASE_URL", "FEEDROUTER_HOME", "FEEDROUTER_CATALOG_CONN_ID"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_the_hook_names_the_connection_id_and_the_url_setting(nothing_configured: Path) -> None:
    with pytest.raises(CatalogError, match="FR401") as caught:
        FeedrouterHook(Connections()).catalog_engine()
    message = str(caught.value)
    assert "FEEDROUTER_CATALOG_CONN_ID" in message and "FEEDROUTER_DATABASE_URL" in message
    assert list(nothing_configured.iterdir()) == []


def test_the_ui_answers_503_with_the_reason(nothing_configured: Path) -> None:
    from fastapi import HTTPException

    from feedrouter.airflow.ui import app

    app.reset_engine()
    with pytest.raises(HTTPException) as caught:
        app.feeds()
    assert caught.value.status_code == 503 and "FR401" in str(caught.value.detail)
    assert list(nothing_configured.iterdir()) == []


def test_the_trigger_fails_instead_of_polling_an_empty_catalog(nothing_configured: Path) -> None:
    import asyncio

    from feedrouter.airflow.triggers import CatalogChangeTrigger

    async def first_event() -> object:
        return await CatalogChangeTrigger(poll_seconds=0.01).run().__anext__()

    with pytest.raises(CatalogError, match="FR401"):
        asyncio.run(first_event())
    assert list(nothing_configured.iterdir()) == []


def test_the_explicit_embedded_mode_uses_feedrouter_home(
    nothing_configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Which server the hook asks for; starting one is test_embedded.py's (it takes seconds).
    from feedrouter.catalog import embedded

    started: list[Path] = []
    monkeypatch.setattr(embedded, "ensure_started", lambda home: started.append(home) or "postgresql://x")
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", "embedded")
    monkeypatch.setenv("FEEDROUTER_HOME", str(nothing_configured / "state"))
    assert FeedrouterHook(Connections()).catalog_url() == "postgresql://x"
    assert started == [nothing_configured / "state"]
