"""StoreOpener: credentials carried to the tasks, never shown, applied to the S3 clients it makes."""

from __future__ import annotations

import pickle

import pytest

from feedrouter.errors import SettingsError
from feedrouter.spark.stores import StoreOpener
from feedrouter.storage.s3 import S3Settings

KEYS = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "very-secret-value"}


def test_credentials_are_hidden_from_repr_and_str() -> None:
    opener = StoreOpener(S3Settings(endpoint_url="http://127.0.0.1:9"), credentials=KEYS)
    for text in (repr(opener), str(opener), f"{opener}"):
        assert "very-secret-value" not in text and "AKIAEXAMPLE" not in text
        assert "<2 hidden>" in text and "127.0.0.1:9" in text
    assert "hidden" not in repr(StoreOpener())


def test_credentials_survive_pickling_and_sign_the_client() -> None:
    opener = pickle.loads(
        pickle.dumps(StoreOpener(S3Settings(endpoint_url="http://127.0.0.1:9"), credentials=KEYS))
    )
    assert opener == StoreOpener(S3Settings(endpoint_url="http://127.0.0.1:9"), credentials=dict(KEYS))
    assert hash(opener) != hash(StoreOpener(S3Settings(endpoint_url="http://127.0.0.1:9")))
    frozen = opener._client()._request_signer._credentials.get_frozen_credentials()
    assert (frozen.access_key, frozen.secret_key) == ("AKIAEXAMPLE", "very-secret-value")
    config = opener._client().meta.config
    assert config.s3 == {"addressing_style": "auto"} and config.read_timeout == S3Settings().read_timeout


@pytest.mark.parametrize(
    ("credentials", "named"),
    [({"AWS_ACCESS_KEY_ID": "a"}, "AWS_SECRET_ACCESS_KEY"), ({**KEYS, "PASSWORD": "x"}, "PASSWORD")],
)
def test_incomplete_or_unknown_credentials_are_refused_by_name(
    credentials: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingsError, match=named) as caught:
        StoreOpener(credentials=credentials)
    assert caught.value.code == "FR700" and "very-secret-value" not in str(caught.value)


def test_threads_opening_one_store_at_once_make_it_once(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The join stage's writer threads open subscribers' stores at once: each store (and its
    client) is made once, whoever asks first."""
    import threading
    import time

    from feedrouter.spark import stores

    made: list[str] = []
    original = StoreOpener._open

    def slow_open(self: StoreOpener, uri: str) -> object:
        made.append(uri)
        time.sleep(0.05)  # long enough for every thread to ask while it is being made
        return original(self, uri)

    monkeypatch.setattr(StoreOpener, "_open", slow_open)
    monkeypatch.setattr(stores, "_STORES", {})
    opener, uri = StoreOpener(), (tmp_path / "out").as_uri()
    found: list[object] = []
    threads = [threading.Thread(target=lambda: found.append(opener.open(uri))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [uri] and len(found) == 8 and all(store is found[0] for store in found)
