"""Issue 16's CPU figures: per target, cases/s in-process, through ``layoutfuzz run`` (batched, the default),
and through ``layoutfuzz run --batch 1`` (one case per worker call), with ratios to in-process in the same run.

In-process means the target's cases evaluated one after another in this process, with nothing around them:
the rate a harness could reach on one core if it never isolated anything. Cases that crash or hang cannot run
in-process; they are left out of that rate (and counted in the runs, where a crash costs a worker).

    python benchmarks/campaign_throughput.py [--targets A,B] [--budget 20] [--jobs 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import registry  # noqa: E402
from harness.campaign import DEFAULT_TARGETS  # noqa: E402
from harness.runner import evaluate, make_case  # noqa: E402


def through_run(target: str, budget: float, jobs: int, out: Path, extra: list[str], tree: Path = ROOT,
                timeout: str = "30s") -> tuple[float, int, int, set[int]]:
    """cases/s of ``layoutfuzz run`` (of the source ``tree``) over ``budget`` seconds; its cases, crashes, and the
    indices that neither crashed nor hung."""
    command = [sys.executable, "-m", "harness.cli", "run", "--targets", target, "--budget", f"{budget}s", "--jobs", str(jobs),
               "--timeout", timeout, "-q", "--out", str(out), *extra]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH", "")])),
               TRITON_CACHE_DIR=str(out) + "-triton-cache")  # each run compiles its kernels: no run finds another's
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, env=env)
    match = re.search(r"(\d+) cases in ([\d.]+) s", done.stderr)
    if done.returncode not in (0, 1) or not match:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    rows = sqlite3.connect(out / "layoutfuzz.sqlite").execute("SELECT idx, outcome FROM outcomes").fetchall()
    good = {i for i, o in rows if o not in ("crash", "timeout")}
    return int(match[1]) / float(match[2]), int(match[1]), len(rows) - len(good), good


def in_process(target_name: str, indices: list[int], seconds: float) -> float:
    """cases/s of generating and evaluating the target's cases ``indices`` (seed 0) one by one in this process
    (with a Triton cache of its own: the runs before it compiled the same kernels)."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="in-process-triton-cache-")
    spec = registry.resolve(target_name)
    target = registry.load(spec)
    evaluate(target, make_case(target, 0, indices[0]))  # warm: imports, caches
    started, count = time.perf_counter(), 0
    for index in indices:
        evaluate(target, make_case(target, 0, index))
        count += 1
        if time.perf_counter() - started >= seconds:
            break
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default=DEFAULT_TARGETS)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per run (20)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", default="30s", help="per-case limit of the runs (30s)")
    parser.add_argument("--baseline", metavar="TREE", help="also run `layoutfuzz run` of another source tree (an earlier "
                        "commit, e.g. from `git archive`) in the same way, for a ratio against it")
    parser.add_argument("--out", help="also write the table (Markdown) here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.targets.split(","):
            runs = (args.budget, args.jobs)
            batched, cases, crashes, good = through_run(name, *runs, Path(tmp, name, "batched"), [], timeout=args.timeout)
            single, _, _, good_single = through_run(name, *runs, Path(tmp, name, "single"), ["--batch", "1"], timeout=args.timeout)
            row = {"target": name}
            if args.baseline:
                before, *_ = through_run(name, *runs, Path(tmp, name, "baseline"), [], Path(args.baseline), args.timeout)
                row.update({"baseline run cases/s": round(before, 1)})
            alone = in_process(name, sorted(good & good_single), min(args.budget, 10.0))
            row.update({
                "in-process cases/s (1 core)": round(alone, 1), "run cases/s": round(batched, 1),
                "run --batch 1 cases/s": round(single, 1), "run / in-process": round(batched / alone, 2),
                "run / --batch 1": round(batched / single, 2), "crashes in run": f"{crashes} of {cases}",
            })
            if args.baseline:
                row["run / baseline"] = round(batched / before, 2)
            rows.append(row)
            print(f"{name}: done", file=sys.stderr)
    table = pd.DataFrame(rows).to_markdown(index=False)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
