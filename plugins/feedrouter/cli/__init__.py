"""The ``feedrouter`` command line: route local files, explain plans, generate sample data.

``feedrouter route`` runs the routing loop of the hourly batches (:func:`~feedrouter.delivery.
routing.route_objects`: gunzipped within the message limit, containers cut into records), so a
corrupt ``.gz``, a gzip bomb or a malformed document is reported and the run goes on, and a result
refused to one subscription (a result limit, an internal error of its plan) is reported beside the
results as it is in the batch's quarantine. Results are named after the input's path relative to
the ``--input`` it was found under (:mod:`.outputs`), so two inputs never write the same file; the
subscriptions file is read strictly (:mod:`.subscriptions`), and ``explain`` speaks the user's
language first (:mod:`.explaining`). Every command ends in one message with a code, never a
traceback (:func:`feedrouter.console.reported`), and names are printed escaped.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from feedrouter import heap, logs
from feedrouter.cli.outputs import (
    MAX_NAME,
    REJECTED,
    InputDocument,
    OutputNames,
    RouteRun,
    RouteStats,
    document_stem,
    iter_documents,
    output_component,
    subscription_folder,
)
from feedrouter.cli.subscriptions import SubscriptionsFileError, load_subscriptions, read_text
from feedrouter.console import echo, escape_name, escape_text, reported
from feedrouter.limits import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_DOCUMENT_RESULT_BYTES,
    DEFAULT_MAX_RESULT_BYTES,
)
from feedrouter.progress import task_bar, wanted

__all__ = [
    "MAX_NAME",
    "REJECTED",
    "InputDocument",
    "OutputNames",
    "RouteStats",
    "SubscriptionsFileError",
    "document_stem",
    "iter_documents",
    "load_subscriptions",
    "main",
    "output_component",
    "subscription_folder",
]


@click.group()
@click.version_option(package_name="feedrouter")
@click.option(
    "--log-format",
    metavar="[text|json]",
    callback=lambda ctx, param, value: _log_format(value),
    help="How log records go to stderr: text (default), or json (one object per line, the batch's "
    "fields as keys). Default: the FEEDROUTER_LOG_FORMAT setting.",
)
@click.pass_context
def main(ctx: click.Context, log_format: str) -> None:
    """feedrouter: route XML documents to many XQuery subscriptions in one shared pass."""
    ctx.with_resource(logs.configured(log_format))


def _log_format(value: str | None) -> str:
    """The log format from the option, else from feedrouter's settings (FEEDROUTER_LOG_FORMAT);
    the settings are validated here, so a bad one stops every command with its name (FR700)."""
    from feedrouter.errors import SettingsError
    from feedrouter.settings import load_settings

    origins = {"log_format": "--log-format"} if value is not None else None
    try:
        return load_settings(origins=origins, log_format=value).log_format
    except SettingsError as exc:
        raise click.UsageError(escape_text(exc)) from None


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
    help="Folder for results: OUTPUT/<subscription>/<input path>.xml",
)
@click.option(
    "--dtd",
    "dtd_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The feed's DTD: its entity declarations apply to the documents.",
)
@click.option("--strategy", default="auto", type=click.Choice(["auto", "F", "FW", "FWR"]), show_default=True)
@click.option(
    "--record-element",
    help="Inputs are containers: every outermost element of this name is one document.",
)
@click.option(
    "--max-document-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_DOCUMENT_BYTES,
    show_default=True,
    help="Larger documents (after gunzip) are rejected without being read further.",
)
@click.option(
    "--max-result-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_RESULT_BYTES,
    show_default=True,
    help="A larger result of one subscription for one document is refused (FR310) and reported.",
)
@click.option(
    "--max-document-result-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_DOCUMENT_RESULT_BYTES,
    show_default=True,
    help="Results of one document past this total are refused (FR311) and reported.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="A progress bar over the inputs on stderr (default: when stderr is a terminal).",
)
def route(
    subscriptions_path: Path,
    inputs: tuple[Path, ...],
    output: Path,
    dtd_path: Path | None,
    strategy: str,
    record_element: str | None,
    max_document_bytes: int,
    max_result_bytes: int,
    max_document_result_bytes: int,
    progress: bool | None,
) -> None:
    """Route documents through subscriptions and write each match to the output folder."""
    from feedrouter import Router
    from feedrouter.delivery.messages import Splitter
    from feedrouter.engine.document import DocumentLimits
    from feedrouter.limits import ResultLimits

    with reported():
        subscriptions = load_subscriptions(subscriptions_path)
        dtd = read_text(dtd_path) if dtd_path else None
        limits = DocumentLimits(max_bytes=max_document_bytes)
        result_limits = ResultLimits(max_result_bytes, max_document_result_bytes)
        router = Router.compile(
            subscriptions,
            dtd=dtd,
            strategy=strategy,
            on_error="collect",
            limits=limits,
            result_limits=result_limits,
        )
        for sid, error in router.errors.items():
            echo(f"skipped subscription {escape_name(sid)}: {error}", err=True)
        splitter = Splitter(record_element, dtd, max_document_bytes)
        output.mkdir(parents=True, exist_ok=True)
        run = RouteRun(router, splitter, output, record_element is not None)
        documents = list(iter_documents(inputs))  # listed first: the bar needs the total
        if not documents:  # most often the wrong folder: say where it looked
            listed = ", ".join(escape_name(item) for item in inputs)
            click.echo(f"no .xml or .xml.gz documents under {listed}", err=True)
        started = time.perf_counter()
        with heap.settled(), task_bar("routing", wanted(progress)) as bar:
            for done, document in enumerate(documents, 1):
                run.route_file(document)
                bar(done, len(documents))
        elapsed = time.perf_counter() - started
    stats = run.stats
    refused = f", {stats.refused} results refused (.error.json beside them)" if stats.refused else ""
    click.echo(
        f"routed {stats.documents} documents through {len(router)} subscriptions in {elapsed:.2f}s: "
        f"{stats.results} results ({stats.bytes} bytes){refused}, {stats.rejected} documents rejected, "
        f"{len(router.errors)} subscriptions skipped; results under {escape_name(output)}"
    )


@main.command()
@click.option(
    "--subscriptions", "subscriptions_path", required=True, type=click.Path(exists=True, path_type=Path)
)
@click.option("--id", "subscription_id", required=True, help="The subscription to explain.")
@click.option(
    "--dtd",
    "dtd_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The feed's DTD: shows which searches it lets the plan skip.",
)
@click.option("--strategy", default="auto", type=click.Choice(["auto", "F", "FW", "FWR"]), show_default=True)
def explain(subscriptions_path: Path, subscription_id: str, dtd_path: Path | None, strategy: str) -> None:
    """Say what a subscription shares with the others and why it is fast, then its plan in the
    paper's terms (paths in the shared NFA, operators, claims)."""
    from feedrouter import Router
    from feedrouter.cli.explaining import check_known, plain_explanation

    with reported():
        subscriptions = load_subscriptions(subscriptions_path)
        check_known(subscriptions_path, [sid for sid, _text in subscriptions], subscription_id)
        dtd = read_text(dtd_path) if dtd_path else None
        router = Router.compile(subscriptions, dtd=dtd, strategy=strategy, on_error="collect")
        if subscription_id in router.errors:
            raise router.errors[subscription_id]
        echo("\n".join(plain_explanation(router, subscription_id, with_dtd=dtd is not None)))
        echo("\nin the paper's terms:")
        echo(router.explain(subscription_id))


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

    with reported():
        graph = dtds.load(dtd_name)
        docs_dir = output / "documents"
        docs_dir.mkdir(parents=True, exist_ok=True)
        for i, data in enumerate(generate_documents(graph, documents, seed=seed)):
            (docs_dir / f"msg-{i:05d}.xml").write_bytes(data)
        texts = generate_subscriptions(graph, subscriptions, seed=seed, form="mixed")
        subs = {f"sub-{i:05d}": text for i, text in enumerate(texts)}
        (output / "subscriptions.json").write_text(json.dumps(subs, indent=1), encoding="utf-8")
        (output / f"{dtd_name}.dtd").write_text(graph.text, encoding="utf-8")
    shown = escape_name(output)
    click.echo(f"wrote {documents} documents, {len(subs)} subscriptions and {dtd_name}.dtd under {shown}")


def _register_adapters() -> None:
    """Commands of the adapters; their modules import only click until a command runs."""
    from feedrouter.catalog.cli import register as register_catalog_commands
    from feedrouter.spark.cli import register as register_spark_commands

    register_catalog_commands(main)
    register_spark_commands(main)


_register_adapters()


_register_adapters()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
