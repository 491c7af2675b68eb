"""The route step's S3 settings: the aws connection's endpoint and region, this environment's
timeouts and attempts (issue 18, item 13: a hung endpoint costs the configured timeout in Airflow)."""

from __future__ import annotations

import pytest

pytest.importorskip("airflow")

from feedrouter.airflow.hooks import with_env_limits
from feedrouter.storage.s3 import S3Settings


def test_the_connection_keeps_its_endpoint_and_gets_the_environment_timeouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FEEDROUTER_S3_READ_TIMEOUT", "2.5")
    monkeypatch.setenv("FEEDROUTER_S3_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("FEEDROUTER_S3_MAX_ATTEMPTS", "2")
    connection = S3Settings(endpoint_url="http://minio:9000", region="eu-west-1", addressing_style="path")
    settings = with_env_limits(connection)
    assert (settings.endpoint_url, settings.region, settings.addressing_style) == (
        "http://minio:9000",
        "eu-west-1",
        "path",
    )
    assert (settings.read_timeout, settings.connect_timeout, settings.max_attempts) == (2.5, 1.0, 2)
