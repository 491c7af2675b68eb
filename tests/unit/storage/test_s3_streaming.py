"""S3 bodies cut short or stalled while streaming, and the bounded timeouts (no server needed)."""

from __future__ import annotations

import http.client
import io

import pytest

pytest.importorskip("botocore")

from botocore import exceptions as bce
from botocore.response import StreamingBody
from urllib3 import exceptions as u3

from feedrouter.errors import SettingsError, TransientStorageError
from feedrouter.storage.s3 import DEFAULT_READ_TIMEOUT, S3Body, S3Settings, S3Store, classify

CUT_SHORT = [
    bce.IncompleteReadError(actual_bytes=10, expected_bytes=100),
    bce.ResponseStreamingError(error=u3.ProtocolError("Connection broken")),
    bce.ReadTimeoutError(endpoint_url="http://x"),
    u3.ProtocolError("Connection broken: IncompleteRead(10 bytes read, 90 more expected)"),
    u3.ReadTimeoutError(None, "http://x", "Read timed out."),  # type: ignore[arg-type]
    http.client.IncompleteRead(b"abc", 90),
]


@pytest.mark.parametrize("error", CUT_SHORT, ids=lambda e: type(e).__name__)
def test_a_body_cut_short_is_a_transient_storage_error(error: Exception) -> None:
    translated = classify(error, "s3://b/in/m.xml")
    assert type(translated) is TransientStorageError
    assert translated.code == "FR502" and "s3://b/in/m.xml" in str(translated)


def _truncated() -> io.BytesIO:
    """A socket that delivers 10 bytes of the 100 the response announced, then ends."""
    return io.BytesIO(b"<m>" + b"x" * 7)


class _Client:
    def __init__(self, body: object) -> None:
        self.body = body

    def get_object(self, **_: object) -> dict[str, object]:
        return {"Body": self.body}


def test_reading_a_truncated_body_raises_fr502_not_a_botocore_error() -> None:
    store = S3Store("b", "in", client=_Client(StreamingBody(_truncated(), 100)))
    body = store.open("m.xml")
    assert isinstance(body, S3Body)
    with pytest.raises(TransientStorageError, match=r"s3://b/in/m.xml was cut short") as caught:
        while body.read(4):
            pass
    assert caught.value.transient
    with pytest.raises(TransientStorageError):  # the whole-object read path too
        S3Store("b", "in", client=_Client(StreamingBody(_truncated(), 100))).get("m.xml")


def test_timeouts_are_bounded_and_configurable() -> None:
    assert S3Settings().read_timeout == DEFAULT_READ_TIMEOUT <= 30
    env = {"FEEDROUTER_S3_READ_TIMEOUT": "2.5", "FEEDROUTER_S3_CONNECT_TIMEOUT": "1"}
    settings = S3Settings.from_env(env)
    assert (settings.read_timeout, settings.connect_timeout) == (2.5, 1.0)
    config = settings.client().meta.config
    assert (config.read_timeout, config.connect_timeout) == (2.5, 1.0)


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_a_bad_timeout_setting_is_named(value: str) -> None:
    with pytest.raises(SettingsError, match=f"FR700.*FEEDROUTER_S3_READ_TIMEOUT='{value}': input should be"):
        S3Settings.from_env({"FEEDROUTER_S3_READ_TIMEOUT": value})


def test_a_missing_s3_object_is_fr501() -> None:
    error = bce.ClientError({"Error": {"Code": "NoSuchKey", "Message": "gone"}}, "GetObject")
    translated = classify(error, "s3://b/in/m.xml")
    assert type(translated).__name__ == "ObjectNotFoundError" and translated.code == "FR501"
