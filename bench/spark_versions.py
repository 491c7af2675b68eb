"""The Spark job before and after it moved to DataFrames: the RDD job of an earlier commit against
the DataFrame job of a later one, on the same hour, two populations, in one run.

Both jobs are measured by their own ``bench/spark_bench.py``, each from a temporary git worktree
(``--commit`` for the RDD job, ``--new`` for the DataFrame one, with its own ``plugins/`` first on
the path, so that edits to this checkout cannot reach a run), alternating per population so that
both see the same machine: the plain loop, then ``local[1]`` and ``local[2]``, each a first
and a second (warm) batch. Populations (both 10,000 subscriptions over one hour of the NEWS feed):

* ``selective``: match rate 0.0005, about 140,000 results to 150 subscriptions: the routing
  dominates;
* ``broad``: match rate 0.004, about 1.25 million results to 1,400 subscriptions: the shuffle and
  the delivery of results dominate.

The table compares the jobs' seconds directly and as a multiple of the plain loop measured in the
same run (which cancels most of the machine's drift). The reports of the four runs follow the table
in ``bench/results/spark_versions.md``; the DataFrame job's selective run is also ``spark.md``.

Usage: ``.venv/bin/python bench/spark_versions.py [--commit 32e3294] [--messages 50000]``
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
POPULATIONS = {"selective": 0.0005, "broad": 0.004}
RUNS = (
    "plain loop: route + write every delivery",
    "Spark local[1], second batch (warm workers)",
    "Spark local[2], first batch of the session",
    "Spark local[2], second batch (warm workers)",
)


def run_bench(tree: Path, args: argparse.Namespace, rate: float, output: Path) -> str:
    """One spark_bench.py run from ``tree`` (its own feedrouter first on the path); its report."""
    env = dict(os.environ, PYTHONPATH=str(tree / "plugins"))
    command = [
        sys.executable,
        str(tree / "bench" / "spark_bench.py"),
        f"--messages={args.messages}",
        f"--subscriptions={args.subscriptions}",
        f"--match-rate={rate}",
        f"--output={output}",
    ]
    subprocess.run(command, cwd=tree, env=env, check=True)
    return output.read_text()


def seconds(report: str, run: str) -> float:
    """The seconds of one run (a row of the report's first table)."""
    found = re.search(rf"^\| {re.escape(run)} \| ([0-9.]+) \|", report, re.M)
    if found is None:
        raise ValueError(f"no row {run!r} in the report")
    return float(found.group(1))


def results_line(report: str) -> str:
    found = re.search(r"([0-9,]+ results to [0-9,]+ subscriptions)", report)
    return found.group(1) if found else "?"


def table(reports: dict[tuple[str, str], str]) -> list[str]:
    lines = [
        "| population | run | RDD job s | DataFrame job s | DataFrame / RDD | RDD / loop "
        "| DataFrame / loop |",
        "|---|---|---|---|---|---|---|",
    ]
    for population in POPULATIONS:
        old, new = reports[population, "rdd"], reports[population, "dataframe"]
        old_loop, new_loop = seconds(old, RUNS[0]), seconds(new, RUNS[0])
        for run in RUNS:
            a, b = seconds(old, run), seconds(new, run)
            lines.append(
                f"| {population} | {run} | {a:.2f} | {b:.2f} | {b / a:.2f}x | {a / old_loop:.2f}x | "
                f"{b / new_loop:.2f}x |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", default="32e3294", help="the last commit of the RDD job")
    parser.add_argument("--new", default="HEAD", help="the commit of the DataFrame job (a worktree too)")
    parser.add_argument("--messages", type=int, default=50000)
    parser.add_argument("--subscriptions", type=int, default=10000)
    parser.add_argument("--output", type=Path, default=RESULTS / "spark_versions.md")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spark-versions-"))
    # both jobs run from worktrees of commits, so that edits to this checkout cannot reach a run
    trees = {"rdd": work / "rdd", "dataframe": work / "dataframe"}
    for job, commit in (("rdd", args.commit), ("dataframe", args.new)):
        subprocess.run(["git", "worktree", "add", "--detach", str(trees[job]), commit], cwd=ROOT, check=True)
    reports: dict[tuple[str, str], str] = {}
    try:
        for population, rate in POPULATIONS.items():
            for job, tree in trees.items():
                reports[population, job] = run_bench(tree, args, rate, work / f"{job}-{population}.md")
    finally:
        for tree in trees.values():
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    text = [
        "# The Spark job: RDD (before) against DataFrame (now)",
        "",
        f"`bench/spark_versions.py --commit {args.commit} --new {args.new} --messages {args.messages} "
        f"--subscriptions {args.subscriptions}`: the RDD job of commit `{args.commit}` and the "
        f"DataFrame job of `{args.new}`, each measured by its own `bench/spark_bench.py` on the same "
        "hour, alternating. Seconds of `route_batch` end to end; `/ loop` divides by the plain "
        "single-process loop (route and write every delivery) of the same run.",
        "",
        *(f"* {p}: {results_line(reports[p, 'dataframe'])}" for p in POPULATIONS),
        "",
        *table(reports),
        "",
    ]
    for (population, job), report in reports.items():
        text += [f"## {job}, {population}", "", report.replace("# Spark batch benchmark\n", "").strip(), ""]
    args.output.write_text("\n".join(text))
    shutil.copy(work / "dataframe-selective.md", RESULTS / "spark.md")
    shutil.rmtree(work, ignore_errors=True)
    print("\n".join(text[: 8 + 2 * len(RUNS) + 2]))


if __name__ == "__main__":
    main()
