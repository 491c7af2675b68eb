"""Ship feedrouter to Spark executors the documented PySpark way: a wheel and a packed virtualenv.

``python -m feedrouter.spark.package --out dist`` (or ``feedrouter spark package``) writes

* ``feedrouter-<version>-<python>-<platform>.whl``: the project, built from its source tree by the
  environment's Python (with its compiled kernels, made for that Python version);
* ``feedrouter-env.tar.gz``: a fresh virtual environment holding that wheel, its runtime
  dependencies (lxml, boto3, SQLAlchemy, psycopg, …) and the executors' Arrow (pyarrow, pandas, at
  this environment's versions), packed with venv-pack;
* ``feedrouter_route.py``: the spark-submit application (a copy of :mod:`feedrouter.spark.app`).

A vanilla Spark image then runs the job with
``--archives feedrouter-env.tar.gz#environment --conf spark.pyspark.python=./environment/bin/python``
(see docs/deploy.md). pyspark itself is not packed: Spark puts its own on the workers' path, so the
archive matches whatever Spark the cluster runs.

venv-pack links the environment's ``python`` to the interpreter it was made from (it does not copy
Python): build with the cluster's Python version, and give ``--python-prefix`` when the nodes keep
that Python elsewhere (e.g. ``/usr`` for ``/usr/bin/python3.11``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from feedrouter.errors import error

ARCHIVE_NAME = "feedrouter-env.tar.gz"
APPLICATION_NAME = "feedrouter_route.py"
#: What pyspark's Arrow-based stages need on the executors (pyspark itself comes with Spark).
EXECUTOR_EXTRAS = ("pyarrow", "pandas")


@dataclass(frozen=True)
class Package:
    """What :func:`build_package` wrote."""

    wheel: Path
    archive: Path
    application: Path

    @property
    def archives_argument(self) -> str:
        """spark-submit's ``--archives`` value for :attr:`archive`."""
        return f"{self.archive}#environment"


def project_root(start: Path | None = None) -> Path:
    """The source tree feedrouter runs from (the folder whose pyproject.toml names it).

    Raises:
        SettingsError: [FR700] feedrouter is installed from a wheel, with no source tree to build.
    """
    here = (start or Path(__file__)).resolve()
    for folder in here.parents:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and 'name = "feedrouter"' in pyproject.read_text():
            return folder
    raise error("FR700", f"no feedrouter source tree above {here}: give the project folder (--source)")


def pinned_extras(names: Sequence[str] = EXECUTOR_EXTRAS) -> list[str]:
    """``name==version`` of each package as installed here (the versions the tests ran with)."""
    pins = []
    for name in names:
        try:
            pins.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pins.append(name)
    return pins


#: What the wheel is built from (the rest of a checkout is not part of the package); setup.py builds
#: the compiled kernels into it.
WHEEL_SOURCES = ("pyproject.toml", "setup.py", "README.md", "plugins/feedrouter")


def build_wheel(source: Path, out: Path, python: str = sys.executable) -> Path:
    """Build feedrouter's wheel from ``source`` into ``out`` with ``python`` (the interpreter that
    will run it: the wheel holds the compiled kernels, made for one Python version); its path.

    The build runs on a copy of the package's sources: setuptools writes its ``*.egg-info`` beside
    the package, and one left in a checkout's ``plugins/`` (on Airflow's plugin path) would make a
    second ``feedrouter`` distribution that registers the plugin twice.
    """
    before = set(out.glob("feedrouter-*.whl"))
    for stale in before:
        stale.unlink()
    with tempfile.TemporaryDirectory(prefix="feedrouter-wheel-") as scratch:
        copy = Path(scratch) / "feedrouter"
        for name in WHEEL_SOURCES:
            _copy_source(source / name, copy / name)
        pip_wheel = [python, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out)]
        _run([*pip_wheel, str(copy)])
    [wheel] = out.glob("feedrouter-*.whl")
    return wheel


def _copy_source(source: Path, target: Path) -> None:
    if source.is_dir():
        # an editable install's kernels built in place are this machine's: the wheel builds its own
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.so", "*.c")
        shutil.copytree(source, target, ignore=ignore)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def build_environment(folder: Path, source: Path, out: Path, extras: Sequence[str], python: str) -> Path:
    """A fresh virtual environment in ``folder`` made from ``python``, with feedrouter's wheel
    (built by that environment's interpreter into ``out``, so that its compiled kernels are made for
    the executors' Python, whatever runs this), its dependencies and ``extras``; the wheel's path."""
    _run([python, "-m", "venv", "--clear", str(folder)])
    interpreter = str(folder / "bin" / "python")
    wheel = build_wheel(source, out, interpreter)
    _run([interpreter, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel), *extras])
    return wheel


def pack_environment(
    folder: Path, archive: Path, python_prefix: str | None = None, compress_level: int = 4
) -> Path:
    """``folder`` packed with venv-pack into ``archive`` (replaced when it exists), readable as the
    umask allows (venv-pack writes it owner-only), so a cluster's services can fetch it."""
    import venv_pack

    venv_pack.pack(
        prefix=str(folder),
        output=str(archive),
        python_prefix=python_prefix,
        force=True,
        compress_level=compress_level,
    )
    umask = os.umask(0)
    os.umask(umask)
    archive.chmod(0o666 & ~umask)
    return archive


def build_package(
    out: Path,
    *,
    source: Path | None = None,
    python: str | None = None,
    python_prefix: str | None = None,
    extras: Sequence[str] | None = None,
    compress_level: int = 4,
) -> Package:
    """Build the wheel, the packed environment and the application file into ``out``.

    Args:
        out: the output folder (made when missing).
        source: feedrouter's source tree (default: the one this module runs from).
        python: the interpreter the environment is made from (default: this one's base Python).
        python_prefix: where the nodes keep that Python (venv-pack's ``python_prefix``).
        extras: more requirements for the executors (default: pyarrow and pandas, pinned).
        compress_level: gzip level of the archive (1 builds fastest, 9 ships smallest).
    """
    out.mkdir(parents=True, exist_ok=True)
    base = python or str(getattr(sys, "_base_executable", sys.executable))
    requirements = pinned_extras() if extras is None else list(extras)
    with tempfile.TemporaryDirectory(prefix="feedrouter-env-") as scratch:
        folder = Path(scratch) / "env"
        wheel = build_environment(folder, source or project_root(), out, requirements, base)
        archive = pack_environment(folder, out / ARCHIVE_NAME, python_prefix, compress_level)
    application = out / APPLICATION_NAME
    shutil.copyfile(Path(__file__).with_name("app.py"), application)
    return Package(wheel, archive, application)


def _run(command: list[str]) -> None:
    """Run a build step; its output is shown only when it fails."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise error(
            "FR700",
            f"packaging step failed (exit status {done.returncode}): {' '.join(command)}\n"
            f"{(done.stdout + done.stderr)[-4000:]}",
        )


def spark_submit_hint(package: Package) -> str:
    """How to submit with what :func:`build_package` wrote."""
    return (
        f"spark-submit --archives {package.archives_argument} "
        f"--conf spark.pyspark.python=./environment/bin/python {package.application} "
        "--feed FEED --hour YYYY-MM-DDTHH"
    )


def package_command() -> Any:
    """``feedrouter spark package``: the click command (registered by :mod:`feedrouter.spark.cli`)."""
    import click

    @click.command("package")
    @click.option("--out", type=click.Path(path_type=Path), default=Path("dist"), show_default=True)
    @click.option("--source", type=click.Path(path_type=Path), help="feedrouter's source tree.")
    @click.option("--python", help="Interpreter to make the environment from (the cluster's version).")
    @click.option("--python-prefix", help="Where the cluster's nodes keep that Python (e.g. /usr).")
    def command(out: Path, source: Path | None, python: str | None, python_prefix: str | None) -> None:
        """Build the wheel and the packed executor environment for spark-submit --archives."""
        from feedrouter.console import echo, reported

        with reported():
            package = build_package(out, source=source, python=python, python_prefix=python_prefix)
        echo(f"wheel:       {package.wheel}")
        echo(f"environment: {package.archive}")
        echo(f"application: {package.application}")
        echo(spark_submit_hint(package))

    return command


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m feedrouter.spark.package``: build into ``--out`` and print the spark-submit arguments."""
    parser = argparse.ArgumentParser(prog="feedrouter.spark.package", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("dist"), help="output folder (default: dist)")
    parser.add_argument("--source", type=Path, help="feedrouter's source tree (default: this one)")
    parser.add_argument("--python", help="interpreter to make the environment from (the cluster's version)")
    parser.add_argument("--python-prefix", help="where the nodes keep that Python (e.g. /usr)")
    args = parser.parse_args(argv)
    package = build_package(
        args.out, source=args.source, python=args.python, python_prefix=args.python_prefix
    )
    print(f"wheel:       {package.wheel}")
    print(f"environment: {package.archive}")
    print(f"application: {package.application}")
    print(spark_submit_hint(package))
    return 0


if __name__ == "__main__":
    sys.exit(main())
