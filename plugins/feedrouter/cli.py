"""The ``feedrouter`` command line: route local files, explain plans, generate sample data."""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import click

from feedrouter import heap
from feedrouter.errors import FeedrouterError
from feedrouter.paths import safe_component

_DOCUMENT_SUFFIXES = (".xml", ".xml.gz")


def load_subscriptions(path: Path) -> list[tuple[str, str]]:
    """Subscriptions from JSON ``{id: text}``, JSON Lines ``{"id":…, "text":…}`` or a folder of .xq files."""
    if path.is_dir():
        return [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(path.glob("*.xq"))]
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in raw.splitlines() if line.strip()]
        return [(str(row["id"]), row["text"]) for row in rows]
    data = json.loads(raw)
    if isinstance(data, dict):
        return [(str(k), v) for k, v in data.items()]
    return [(str(row["id"]), row["text"]) for row in data]


def iter_documents(inputs: tuple[Path, ...]) -> Iterator[Path]:
    """Every .xml and .xml.gz file named or found below the named folders, in sorted order."""
    for item in inputs:
        if item.is_dir():
            yield from sorted(
                p for p in item.rglob("*") if p.is_file() and p.name.endswith(_DOCUMENT_SUFFIXES)
            )
        else:
            yield item


def read_document(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def document_stem(path: Path) -> str:
    name = path.name
    for suffix in _DOCUMENT_SUFFIXES[::-1]:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


@click.group()
@click.version_option(package_name="feedrouter")
def main() -> None:
    """feedrouter: route XML documents to many XQuery subscriptions in one shared pass."""


@main.command()
@click.option(
    "--subscriptions",
    "subscriptions_path",
    required=True,
    type=click.Path(exists=True, path_type=Path),
    help="JSON {id: text}, JSON Lines, or a folder of .xq files.",
)
@click.option(
    "--input",
    "inputs",
    required=True,
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="A document (.xml, .xml.gz) or a folder of them; repeatable.",
)
@click.option(
    "--output",
    "output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for results: OUTPUT/<subscription>/<document>.xml",
)
@click.option(
    "--dtd",
    "dtd_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The feed's DTD: its entity declarations apply to the documents.",
)
@click.option("--strategy", default="auto", type=click.Choice(["auto", "F", "FW", "FWR"]), show_default=True)
def route(
    subscriptions_path: Path, inputs: tuple[Path, ...], output: Path, dtd_path: Path | None, strategy: str
) -> None:
    """Route documents through subscriptions and write each match to the output folder."""
    from feedrouter import Router

    subscriptions = load_subscriptions(subscriptions_path)
    dtd = dtd_path.read_text(encoding="utf-8") if dtd_path else None
    router = Router.compile(subscriptions, dtd=dtd, strategy=strategy, on_error="collect")
    for sid, error in router.errors.items():
        click.echo(f"skipped subscription {sid}: {error}", err=True)
    output.mkdir(parents=True, exist_ok=True)
    stats = {"documents": 0, "rejected": 0, "results": 0, "bytes": 0}
    started = time.perf_counter()
    with heap.settled():
        for path in iter_documents(inputs):
            _route_one(router, path, output, stats)
    elapsed = time.perf_counter() - started
    click.echo(
        f"routed {stats['documents']} documents through {len(router)} subscriptions in {elapsed:.2f}s: "
        f"{stats['results']} results ({stats['bytes']} bytes), {stats['rejected']} documents rejected, "
        f"{len(router.errors)} subscriptions skipped; results under {output}"
    )


def _route_one(router, path: Path, output: Path, stats: dict[str, int]) -> None:  # type: ignore[no-untyped-def]
    stats["documents"] += 1
    stem = safe_component(document_stem(path))
    try:
        results = router.route(read_document(path), source=str(path))
    except (FeedrouterError, OSError) as exc:
        stats["rejected"] += 1
        _write_rejection(output, stem, path, exc)
        click.echo(f"rejected {path}: {exc}", err=True)
        return
    for sid, data in results.items():
        folder = output / safe_component(sid)
        folder.mkdir(exist_ok=True)
        (folder / f"{stem}.xml").write_bytes(data)
        stats["results"] += 1
        stats["bytes"] += len(data)


def _write_rejection(output: Path, stem: str, path: Path, exc: Exception) -> None:
    folder = output / "_rejected"
    folder.mkdir(exist_ok=True)
    report = {
        "source": str(path),
        "error": str(exc),
        "code": getattr(exc, "code", None),
        "line": getattr(exc, "line", None),
        "column": getattr(exc, "column", None),
    }
    (folder / f"{stem}.error.json").write_text(json.dumps(report, indent=2), encoding="utf-8")


@main.command()
@click.option(
    "--subscriptions", "subscriptions_path", required=True, type=click.Path(exists=True, path_type=Path)
)
@click.option("--id", "subscription_id", required=True, help="The subscription to explain.")
@click.option("--strategy", default="auto", type=click.Choice(["auto", "F", "FW", "FWR"]), show_default=True)
def explain(subscriptions_path: Path, subscription_id: str, strategy: str) -> None:
    """Show a subscription's paths, the NFA states it shares and its operator plan."""
    from feedrouter import Router

    router = Router.compile(load_subscriptions(subscriptions_path), strategy=strategy, on_error="collect")
    if subscription_id in router.errors:
        raise click.ClickException(str(router.errors[subscription_id]))
    click.echo(router.explain(subscription_id))


@main.command()
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--dtd", "dtd_name", default="news", type=click.Choice(["news", "book", "bib"]), show_default=True
)
@click.option("--documents", default=50, show_default=True)
@click.option("--subscriptions", default=200, show_default=True)
@click.option("--seed", default=7, show_default=True)
def generate(output: Path, dtd_name: str, documents: int, subscriptions: int, seed: int) -> None:
    """Write sample documents, subscriptions and the DTD (for demos and benchmarks)."""
    from feedrouter.workload import dtds, generate_documents, generate_subscriptions

    graph = dtds.load(dtd_name)
    docs_dir = output / "documents"
    docs_dir.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(generate_documents(graph, documents, seed=seed)):
        (docs_dir / f"msg-{i:05d}.xml").write_bytes(data)
    texts = generate_subscriptions(graph, subscriptions, seed=seed, form="mixed")
    subs = {f"sub-{i:05d}": text for i, text in enumerate(texts)}
    (output / "subscriptions.json").write_text(json.dumps(subs, indent=1), encoding="utf-8")
    (output / f"{dtd_name}.dtd").write_text(graph.text, encoding="utf-8")
    click.echo(f"wrote {documents} documents, {len(subs)} subscriptions and {dtd_name}.dtd under {output}")


def _register_adapters() -> None:
    """Commands of the adapters; their modules import only click until a command runs."""
    from feedrouter.catalog.cli import register as register_catalog_commands
    from feedrouter.spark.cli import register as register_spark_commands

    register_catalog_commands(main)
    register_spark_commands(main)


_register_adapters()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
