"""Headless Chromium (Debian's ``chromium`` package) driven over the DevTools protocol, for
rendering pages in tests: no Selenium or Playwright, only the ``websockets`` client.

>>> with Browser.launch() as browser:                                   # doctest: +SKIP
...     browser.set_cookie("http://127.0.0.1:8080/", "_token", token)
...     browser.open("http://127.0.0.1:8080/feedrouter/", ready="document.body.dataset.loaded")
...     browser.screenshot(Path("page.png"))
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The flags the project runs Chromium with: no sandbox (containers), no GPU, no background traffic.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)


def executable() -> str | None:
    """The Chromium binary on PATH (Debian: ``chromium``), or None."""
    return next(filter(None, (shutil.which(name) for name in ("chromium", "chromium-browser"))), None)


class Browser:
    """One page of a headless Chromium, driven synchronously over its DevTools websocket."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._ids = itertools.count(1)

    @classmethod
    @contextmanager
    def launch(cls, timeout: float = 30) -> Iterator[Browser]:
        """Start Chromium with a fresh profile, yield its first page, stop it afterwards."""
        from websockets.sync.client import connect

        binary = executable()
        if binary is None:
            raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
        profile = tempfile.mkdtemp(prefix="feedrouter-chromium-")
        args = [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"]
        # a session of its own: Chromium's helper processes are stopped with it, not left writing
        # into the profile while it is removed
        process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            port = _devtools_port(Path(profile), process, timeout)
            with connect(_page_socket_url(port, timeout), max_size=None) as socket:
                yield cls(socket)
        finally:
            _stop(process)
            _remove_profile(Path(profile))

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events in between are skipped)."""
        ident = next(self._ids)
        self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=30))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def set_cookie(self, url: str, name: str, value: str) -> None:
        self.call("Network.enable")
        self.call("Network.setCookie", url=url, name=name, value=value, httpOnly=True)

    def open(self, url: str, ready: str, timeout: float = 30) -> None:
        """Navigate to ``url`` and wait until the JavaScript expression ``ready`` is truthy."""
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"Boolean({ready})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: {ready} did not become true within {timeout}s")
            time.sleep(0.1)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def screenshot(self, path: Path) -> Path:
        """A full-page PNG of the current page."""
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop Chromium and every process of its session."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _remove_profile(profile: Path) -> None:
    """Remove the profile folder; a helper process may still be finishing a write into it."""
    for _ in range(20):
        try:
            shutil.rmtree(profile)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(profile: Path, process: subprocess.Popen[bytes], timeout: float) -> int:
    # Chromium writes the port it picked (we asked for any free one) into the profile folder.
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while not marker.is_file() or not marker.read_text().strip():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"chromium did not start (exit code {process.poll()})")
        time.sleep(0.05)
    return int(marker.read_text().split()[0])


def _page_socket_url(port: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
            pages = [t for t in json.load(response) if t.get("type") == "page"]
        if pages:
            return str(pages[0]["webSocketDebuggerUrl"])
        if time.monotonic() > deadline:
            raise RuntimeError("chromium opened no page")
        time.sleep(0.05)
