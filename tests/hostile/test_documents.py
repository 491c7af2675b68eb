"""The hostile documents and container files: each gives its outcome, in a process that stays well.

Every file is routed (documents) or cut into messages (containers) in one child process, several
times over, so that a crash (a segmentation fault once killed Spark workers on
``malformed_entity_records.xml``) fails these tests instead of killing pytest, and so that anything
lxml prints on stderr (``Tried to unregister unknown proxy``: element objects outliving their
libxml2 nodes) is seen. The child reports each outcome as JSON; the tests compare them with
``cases.json`` beside the files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PLUGINS = HERE.parent.parent / "plugins"
DOCUMENTS = json.loads((HERE / "documents" / "cases.json").read_text())
CONTAINERS = json.loads((HERE / "containers" / "cases.json").read_text())
ROUNDS = 3  # the same input again in the same process: freed memory touched once shows up later

CHILD = r"""
import io, json, sys
sys.path.insert(0, sys.argv[1])
from feedrouter import Router
from feedrouter.delivery import Splitter
from feedrouter.errors import DocumentError

here, rounds = sys.argv[2], int(sys.argv[3])
documents = json.load(open(f"{here}/documents/cases.json"))
containers = json.load(open(f"{here}/containers/cases.json"))
router = Router.compile([("all", "//*"), ("rec", "//rec")])
out = {"documents": {}, "containers": {}}
for _ in range(rounds):
    for case in documents:
        data = open(f"{here}/documents/{case['file']}", "rb").read()
        try:
            results = router.route(data, source=case["file"])
            found = [r.decode() for r in results.values()]
            out["documents"][case["file"]] = {"outcome": "ok", "results": found}
        except DocumentError as exc:
            out["documents"][case["file"]] = {"outcome": exc.code, "message": str(exc)}
        except Exception as exc:  # anything else is a failure the test names
            out["documents"][case["file"]] = {"outcome": f"raised {exc!r}", "message": ""}
    for case in containers:
        splitter = Splitter(case["record"], max_message_bytes=case.get("max_message_bytes", 1 << 20))
        with open(f"{here}/containers/{case['file']}", "rb") as stream:
            try:
                messages = list(splitter.messages(case["file"], stream))
            except Exception as exc:
                failure = {"outcome": f"raised {exc!r}", "data": "", "message": "", "index": 0}
                out["containers"][case["file"]] = [failure]
                continue
        out["containers"][case["file"]] = [
            {
                "outcome": "ok" if m.error is None else m.error.code + ("*" if m.whole_object else ""),
                "data": m.data.decode(),
                "message": "" if m.error is None else str(m.error),
                "index": m.index,
            }
            for m in messages
        ]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def child() -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(PLUGINS), str(HERE), str(ROUNDS)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def outcomes(child: subprocess.CompletedProcess[str]) -> dict:
    assert child.returncode == 0, f"the child died ({child.returncode}):\n{child.stderr[-3000:]}"
    return json.loads(child.stdout)


def test_the_child_exits_cleanly_and_lxml_prints_nothing(child: subprocess.CompletedProcess[str]) -> None:
    assert child.returncode == 0, child.stderr[-3000:]
    assert "unregister" not in child.stderr and "Traceback" not in child.stderr
    assert child.stderr.strip() == ""


@pytest.mark.parametrize("case", DOCUMENTS, ids=[c["file"] for c in DOCUMENTS])
def test_each_document_gives_its_outcome(case: dict, outcomes: dict) -> None:
    got = outcomes["documents"][case["file"]]
    assert got["outcome"] == case["expect"], (case["why"], got)
    if got["outcome"] == "ok":
        assert all("root:" not in result for result in got["results"])  # nothing of /etc/passwd
    else:
        assert case["file"] in got["message"]  # the error names the document


@pytest.mark.parametrize("case", CONTAINERS, ids=[c["file"] for c in CONTAINERS])
def test_each_container_gives_its_messages(case: dict, outcomes: dict) -> None:
    messages = outcomes["containers"][case["file"]]
    assert [m["outcome"] for m in messages] == case["expect"], (case["why"], messages)
    assert [m["index"] for m in messages] == list(range(len(messages)))
    for message in messages:
        if message["outcome"] == "ok":
            assert message["data"].startswith("<") and message["message"] == ""
        else:
            assert message["data"] == "" and case["file"] in message["message"]


def test_the_malformed_entity_container_keeps_the_record_before_the_entity(outcomes: dict) -> None:
    messages = outcomes["containers"]["malformed_entity_records.xml"]
    assert messages[0]["data"] == "<rec>ok</rec>"
    assert "after" not in "".join(m["data"] for m in messages)  # nothing past the fault
    assert "line 1" in messages[-1]["message"]


def test_the_corpus_covers_the_attacks_of_the_issue() -> None:
    files = {c["file"] for c in DOCUMENTS} | {c["file"] for c in CONTAINERS}
    assert {"malformed_entity_records.xml", "billion_laughs.xml", "xxe_local_file.xml"} <= files
    assert {"xinclude.xml", "depth_300.xml", "invalid_utf8.xml", "ebcdic_encoding.xml"} <= files
    assert {"truncated.xml.gz", "corrupt_deflate.xml.gz", "not_gzip.xml.gz"} <= files
    assert all((HERE / "documents" / c["file"]).is_file() for c in DOCUMENTS)
    assert all((HERE / "containers" / c["file"]).is_file() for c in CONTAINERS)
