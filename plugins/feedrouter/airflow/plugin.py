"""The Airflow plugin: the feedrouter page in the UI (a FastAPI app and its nav entry).

Registered through ``plugins/feedrouter_plugin.py`` (the plugins folder of a checkout) or the
``airflow.plugins`` entry point of the installed package, never both (see that file).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from airflow.plugins_manager import AirflowPlugin

#: Where the API server mounts the app; the page is ``{url_prefix}/``.
URL_PREFIX = "/feedrouter"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class LazyApp:
    """An ASGI app that builds the real FastAPI app on its first request.

    Every Airflow process loads plugins (scheduler, workers, triggerer); only the API server serves
    this app, so only it should import FastAPI routes and the API server's security module.
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._app: Any = None

    def app(self) -> Any:
        if self._app is None:
            self._app = self._factory()
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app()(scope, receive, send)


def _create_app() -> Any:
    from feedrouter.airflow.ui.app import create_app

    return create_app()


class FeedrouterPlugin(AirflowPlugin):
    """feedrouter in the Airflow UI: plan builds, subscription problems and batches per feed."""

    name = "feedrouter"
    fastapi_apps = [{"name": "feedrouter", "app": LazyApp(_create_app), "url_prefix": URL_PREFIX}]
    external_views = [
        {
            "name": "Feedrouter",
            # Relative (no leading slash): the UI resolves it against its base URL, so the page
            # also works when Airflow is served under a sub-path.
            "href": URL_PREFIX.lstrip("/") + "/",
            "url_route": "feedrouter",
            "destination": "nav",
            "category": "browse",
        }
    ]
