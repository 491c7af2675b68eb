"""The FastAPI app behind the feedrouter UI page.

Plugin endpoints are not protected by Airflow on their own: every route here depends on
:func:`authorized_user`, which validates the request's JWT with the API server's own dependency
(``get_user``: the ``Authorization: Bearer`` header, else the UI's ``_token`` cookie, which the
embedded page sends) and asks the auth manager whether the user may ``GET`` the custom view
``Feedrouter``. No token: 401; a bad token or no permission: 403.

The catalog is read through a read-only engine (``SET TRANSACTION READ ONLY``), ideally over a
connection whose role can only SELECT
(``FEEDROUTER_UI_CATALOG_CONN_ID``).
"""

from __future__ import annotations

import threading
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, status
from fastapi.responses import HTMLResponse, JSONResponse

if TYPE_CHECKING:
    from sqlalchemy import Engine

#: The auth manager's resource name for this page (grant ``GET`` on it to let a role see it).
RESOURCE_NAME = "Feedrouter"
_engine_lock = threading.Lock()
_engine: Engine | None = None


def authorized_user() -> Any:
    """The dependency every route needs: an authenticated user allowed to see the page."""
    # Imported here: the API server's security module pulls in Airflow's models, which only the
    # API server (the one process that serves this app) should pay for.
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.core_api.security import get_user

    def check(user: Any = Depends(get_user)) -> Any:  # noqa: B008 (FastAPI resolves it per request)
        allowed = get_auth_manager().is_authorized_custom_view(
            method="GET", resource_name=RESOURCE_NAME, user=user
        )
        if not allowed:
            raise HTTPException(status.HTTP_403_FORBIDDEN, "Forbidden")
        return user

    return check


def create_app() -> FastAPI:
    """The app: the page and its JSON, both behind :func:`authorized_user`."""
    app = FastAPI(
        title="feedrouter",
        dependencies=[Depends(authorized_user())],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.add_api_route("/", page, methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/api/feeds", feeds, methods=["GET"])
    return app


def page() -> HTMLResponse:
    """The page; it fetches ``api/feeds`` (a relative URL, so it works under any base path)."""
    html = resources.files("feedrouter.airflow.ui").joinpath("page.html").read_text(encoding="utf-8")
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})


def feeds(
    builds: Annotated[int, Query(ge=1, le=50)] = 5, batches: Annotated[int, Query(ge=1, le=500)] = 24
) -> JSONResponse:
    """Per feed: catalog version, recent plan builds, invalid subscriptions, recent batches."""
    from sqlalchemy.exc import SQLAlchemyError

    from feedrouter.catalog.status import feed_overview
    from feedrouter.errors import CatalogError

    try:
        with catalog_engine().connect() as conn:
            data = feed_overview(conn, builds=builds, batches=batches)
    except SQLAlchemyError as exc:
        # The message names the failing statement, never the URL's password.
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"catalog unavailable: {getattr(exc, 'orig', exc)}"
        ) from exc
    except CatalogError as exc:  # e.g. [FR401] no catalog configured: say which setting
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from exc
    return JSONResponse({"feeds": data}, headers={"Cache-Control": "no-store"})


def catalog_engine() -> Engine:
    """The API server's one read-only catalog engine, created on first use."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = read_only_engine()
        return _engine


def read_only_engine(url: str | None = None) -> Engine:
    """A read-only engine on the UI's catalog connection (or ``url``); see
    :func:`feedrouter.catalog.database.create_read_only_engine`."""
    from feedrouter.airflow.hooks import FeedrouterHook
    from feedrouter.catalog.database import create_read_only_engine

    hook = FeedrouterHook()
    return create_read_only_engine(url or hook.catalog_url(hook.connections.ui_catalog))


def reset_engine() -> None:
    """Forget the cached engine (tests, or after the connection changed)."""
    global _engine
    with _engine_lock:
        if _engine is not None:
            _engine.dispose()
        _engine = None
