"""The feedrouter page in the Airflow UI: its data answers authenticated requests only, it only
reads the catalog, and it renders in headless Chromium (a screenshot is kept as an artifact)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from feedrouter.catalog import build_plan
from tests.conftest import ROOT
from tests.integration import chromium
from tests.integration.airflow_support import *  # noqa: F403 (fixtures; configures Airflow)
from tests.integration.rows import add_dtd, add_feed, add_subscriber, add_subscription

pytestmark = pytest.mark.integration

#: Screenshots and other test artifacts (under var/, which git ignores; CI may upload the folder).
ARTIFACTS = ROOT / "var" / "artifacts"
BROKEN = "for $s in //story\nwhere $s/title = 'x'\nreturn $t"


@pytest.fixture(scope="module")
def api_app(airflow_db: Path) -> Any:
    """Airflow's real API server app (UI, core API, auth manager, plugins), as ``airflow
    api-server`` builds it."""
    from airflow.api_fastapi.app import create_app

    return create_app()


def token(role: str | None, username: str = "operator") -> str:
    """A JWT signed by the API server's auth manager (the simple auth manager here)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return get_auth_manager().generate_jwt(SimpleAuthManagerUser(username=username, role=role))


@pytest.fixture
def history(catalog: Engine, feedrouter_conns: dict[str, str]) -> Engine:
    """Feed news with a plan build, an invalid subscription and two batches in the ledger."""
    from feedrouter.airflow.hooks import FeedrouterHook
    from feedrouter.airflow.ui.app import reset_engine

    with catalog.begin() as conn:
        add_dtd(conn, "news")
        add_feed(conn, "news", dtd="news")
        add_subscriber(conn, "acme")
        add_subscription(conn, "acme", "news", "titles", "//head/title")
        add_subscription(conn, "acme", "news", "broken", BROKEN)
    build = build_plan(catalog, "news", FeedrouterHook().plans_store())
    with catalog.begin() as conn:
        add_batch(conn, build.id, "2026-11-22 15:00:00+00", "empty", documents=0)
        batch = add_batch(conn, build.id, "2026-11-22 16:00:00+00", "succeeded", documents=120)
        conn.execute(
            text(
                "INSERT INTO feedrouter.deliveries (batch_id, subscriber_name, subscription_name,"
                " object_keys, result_count, bytes) VALUES (:b, 'acme', 'titles', :k, 37, 4096)"
            ),
            {"b": batch, "k": json.dumps(["s3://out/acme/titles/news/dt=2026-11-22/hour=16/part-00000.xml"])},
        )
    reset_engine()  # the app caches its engine: point it at this test's connections
    yield catalog
    reset_engine()


def add_batch(conn: Any, build_id: int, hour: str, status: str, documents: int) -> int:
    return conn.scalar(
        text(
            "INSERT INTO feedrouter.batches (feed_id, hour, plan_build_id, status, documents, bytes,"
            " quarantined, untimed, finished_at) SELECT id, :h, :p, :s, :d, :d * 900, 1, :d / 40, now()"
            " FROM feedrouter.feeds WHERE name = 'news' RETURNING id"
        ),
        {"h": hour, "p": build_id, "s": status, "d": documents},
    )


def test_the_endpoint_answers_an_authenticated_request(api_app: Any, history: Engine) -> None:
    from fastapi.testclient import TestClient

    response = TestClient(api_app).get(
        "/feedrouter/api/feeds", headers={"Authorization": f"Bearer {token('viewer')}"}
    )

    assert response.status_code == 200
    (feed,) = response.json()["feeds"]
    assert (feed["feed"], feed["up_to_date"]) == ("news", True)
    assert [(b["valid"], b["invalid"]) for b in feed["plan_builds"]] == [(1, 1)]
    (problem,) = feed["problems"]
    assert (problem["subscription"], problem["status"], problem["error_line"]) == ("broken", "invalid", 3)
    assert "[FR106]" in problem["error_message"]
    columns = ("status", "documents", "untimed", "deliveries", "results")
    batches = [(b["hour"][:13], *(b[c] for c in columns)) for b in feed["batches"]]
    assert batches == [("2026-11-22T16", "succeeded", 120, 3, 1, 37), ("2026-11-22T15", "empty", 0, 0, 0, 0)]


@pytest.mark.parametrize(
    ("credentials", "statuses"),
    [
        ({}, {401}),  # no token at all
        ({"headers": {"Authorization": "Bearer not-a-jwt"}}, {403}),  # a token the server did not sign
        # A bad cookie: 403 from the page's check, or 401 when Airflow's token-refresh middleware
        # has already thrown it away.
        ({"cookies": {"_token": "forged"}}, {401, 403}),
        ("no-role", {403}),  # authenticated, but not allowed to see the page
    ],
)
@pytest.mark.parametrize("path", ["/feedrouter/api/feeds", "/feedrouter/"])
def test_requests_without_a_valid_token_are_refused(
    api_app: Any, history: Engine, credentials: Any, statuses: set[int], path: str
) -> None:
    from fastapi.testclient import TestClient

    if credentials == "no-role":
        credentials = {"headers": {"Authorization": f"Bearer {token(None)}"}}
    client = TestClient(api_app, cookies=credentials.pop("cookies", None))
    response = client.get(path, **credentials)

    assert response.status_code in statuses
    assert "news" not in response.text


def test_the_page_reads_the_catalog_read_only(history: Engine) -> None:
    from sqlalchemy.exc import DBAPIError

    from feedrouter.airflow.ui.app import catalog_engine

    with catalog_engine().connect() as conn, pytest.raises(DBAPIError, match="read-only"):
        conn.execute(text("DELETE FROM feedrouter.batches"))


@pytest.fixture
def api_server(api_app: Any) -> Iterator[str]:
    """The API app served by uvicorn on a free loopback port, for a real browser."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(api_app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.mark.skipif(chromium.executable() is None, reason="no chromium (apt-get install -y chromium)")
def test_the_page_renders_in_headless_chromium(api_server: str, history: Engine) -> None:
    with chromium.Browser.launch() as browser:
        # The UI's login leaves the JWT in the _token cookie; the embedded page sends it along.
        browser.set_cookie(api_server + "/", "_token", token("viewer"))
        browser.open(api_server + "/feedrouter/", ready="document.body.dataset.loaded")
        shot = browser.screenshot(ARTIFACTS / "feedrouter-ui-page.png")
        feeds = browser.evaluate("[...document.querySelectorAll('section')].map(s => s.dataset.feed)")
        page_text = browser.evaluate("document.body.innerText")

    assert feeds == ["news"]
    assert "[FR106] unknown variable '$t'" in page_text
    assert "succeeded" in page_text and "plan up to date" in page_text
    assert "no event time" in page_text  # the messages joins left out, per batch
    assert shot.stat().st_size > 10_000


@pytest.mark.skipif(chromium.executable() is None, reason="no chromium (apt-get install -y chromium)")
def test_the_page_is_embedded_in_the_airflow_ui(api_server: str, history: Engine) -> None:
    """The external view: Airflow's own React UI lists the page and frames it at /plugin/feedrouter."""
    frame = "document.querySelector('iframe')"
    with chromium.Browser.launch() as browser:
        browser.set_cookie(api_server + "/", "_token", token("viewer"))
        loaded = f"{frame}?.contentDocument?.body?.dataset?.loaded"
        browser.open(api_server + "/plugin/feedrouter", ready=loaded)
        browser.screenshot(ARTIFACTS / "feedrouter-ui-in-airflow.png")
        source = browser.evaluate(f"{frame}.src")
        framed_text = browser.evaluate(f"{frame}.contentDocument.body.innerText")

    assert source == api_server + "/feedrouter/"
    assert "[FR106]" in framed_text
