"""The deployable stack in docker/: ``docker compose config`` validates it where Docker's compose
client is installed (it needs no engine); elsewhere the test is skipped, saying why."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration

DOCKER = ROOT / "docker"
SERVICES = {
    "postgres",
    "minio",
    "minio-init",
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "spark-master",
    "spark-worker",
}


def compose_client() -> list[str]:
    """``docker compose`` when the compose plugin answers; skip the test otherwise."""
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client on PATH")
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"the docker client has no compose plugin: {probe.stderr.strip().splitlines()[0]}")
    return [docker, "compose"]


def compose(*args: str) -> subprocess.CompletedProcess[str]:
    command = [
        *compose_client(),
        "--env-file",
        str(DOCKER / ".env.example"),
        "-f",
        str(DOCKER / "compose.yaml"),
    ]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=DOCKER, timeout=60)


def test_compose_config_validates_the_stack() -> None:
    result = compose("config", "--quiet")
    assert result.returncode == 0, result.stderr


def test_the_stack_has_every_service() -> None:
    result = compose("config", "--services")
    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) == SERVICES


def test_compose_refuses_to_start_without_the_secrets() -> None:
    command = [*compose_client(), "--env-file", os.devnull, "-f", str(DOCKER / "compose.yaml"), "config"]
    clean = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    result = subprocess.run(command, capture_output=True, text=True, env=clean, timeout=60)
    assert result.returncode != 0 and "set it in docker/.env" in result.stderr


def test_the_image_installs_what_the_dockerfile_copies() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text()
    for path in ("plugins/feedrouter", "migrations", "sql", "dags", "docker/spark.sh"):
        assert (ROOT / path).exists(), path
        assert path in dockerfile
