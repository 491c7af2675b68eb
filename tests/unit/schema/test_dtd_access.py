"""Feed DTDs are read with no file or network access at all (issue 18, item 11).

A DTD in the catalog is written by whoever edits a feed; an external parameter entity in it must
neither read a local file into the DTD nor fetch a URL, nor answer differently for a file that
exists and one that does not.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from feedrouter import CompileError, Router
from feedrouter.schema import DtdGraph
from feedrouter.schema.dtd import general_entity_declarations, load_dtd

MARKER = "<!ELEMENT secretmarker EMPTY> <!ENTITY leaked 'secret-marker-text'>"


def referring_to(url: str) -> str:
    return f'<!ENTITY % ext SYSTEM "{url}"> %ext; <!ELEMENT r (#PCDATA)> <!ENTITY nbsp "&#160;">'


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.dtd"
    path.write_text(MARKER)
    return path


@pytest.fixture
def http_hits() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []

    class Recording(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = MARKER.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", hits
    finally:
        server.shutdown()
        server.server_close()


def _refusal(text: str) -> CompileError:
    with pytest.raises(CompileError) as caught:
        DtdGraph.from_text(text, source="feed.dtd")
    assert caught.value.code == "FR303"
    assert "secretmarker" not in str(caught.value) and "secret-marker-text" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("spelling", ["path", "file-uri"])
def test_an_external_parameter_entity_naming_a_local_file_is_refused_unread(
    secret: Path, spelling: str
) -> None:
    url = str(secret) if spelling == "path" else secret.as_uri()
    error = _refusal(referring_to(url))
    assert "external entities" in error.message and url in error.message
    for call in (load_dtd, general_entity_declarations):
        with pytest.raises(CompileError, match="self-contained"):
            call(referring_to(url).encode())


def test_a_file_that_exists_and_one_that_does_not_are_refused_alike(secret: Path) -> None:
    missing = secret.with_name("missing.dtd")
    existing = _refusal(referring_to(str(secret))).message.replace(str(secret), "<url>")
    absent = _refusal(referring_to(str(missing))).message.replace(str(missing), "<url>")
    assert existing == absent


def test_an_external_parameter_entity_naming_a_url_is_never_fetched(http_hits: tuple[str, list[str]]) -> None:
    base, hits = http_hits
    _refusal(referring_to(f"{base}/feed.dtd"))
    with pytest.raises(CompileError, match="FR303"):
        Router.compile([("s", "//r")], dtd=referring_to(f"{base}/router.dtd"))
    with pytest.raises(CompileError, match="FR303"):
        Router.compile([("s", "//r")], dtd=referring_to(f"{base}/entities.dtd"), optimize="none")
    assert hits == []


def test_a_router_refuses_a_feed_dtd_reading_a_file(secret: Path) -> None:
    for optimize in ("dtd", "auto", "none"):
        with pytest.raises(CompileError, match="self-contained"):
            Router.compile([("s", "//r")], dtd=referring_to(secret.as_uri()), optimize=optimize)


def test_self_contained_dtds_with_internal_parameter_entities_still_load() -> None:
    text = (
        '<!ENTITY % inline "em | b"> <!ELEMENT r (#PCDATA | %inline;)*>'
        + "<!ELEMENT em EMPTY> <!ELEMENT b EMPTY>"
    )
    graph = DtdGraph.from_text(text)
    assert graph.root == "r" and graph.children("r") == {"em", "b"}
