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


def through_run(target: str, budget: float, jobs: int, out: Path, extra: list[str]) -> tuple[float, int, int, set[int]]:
    """cases/s of ``layoutfuzz run`` over ``budget`` seconds; its cases, crashes, and the indices that crashed or hung."""
    command = [sys.executable, "-m", "harness.cli", "run", "--targets", target, "--budget", f"{budget}s", "--jobs", str(jobs),
               "-q", "--out", str(out), *extra]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    match = re.search(r"(\d+) cases in ([\d.]+) s", done.stderr)
    if done.returncode not in (0, 1) or not match:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    rows = sqlite3.connect(out / "layoutfuzz.sqlite").execute("SELECT idx, outcome FROM outcomes").fetchall()
    bad = {i for i, o in rows if o in ("crash", "timeout")}
    return int(match[1]) / float(match[2]), int(match[1]), len(bad), bad


def in_process(target_name: str, skip: set[int], seconds: float) -> float:
    """cases/s of generating and evaluating the target's cases (seed 0) one by one in this process."""
    spec = registry.resolve(target_name)
    target = registry.load(spec)
    evaluate(target, make_case(target, 0, next(i for i in range(10**6) if i not in skip)))  # warm: imports, caches
    started, count, index = time.perf_counter(), 0, 0
    while time.perf_counter() - started < seconds:
        if index not in skip:
            evaluate(target, make_case(target, 0, index))
            count += 1
        index += 1
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default=DEFAULT_TARGETS)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per run (20)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", help="also write the table (Markdown) here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.targets.split(","):
            batched, cases, crashes, bad = through_run(name, args.budget, args.jobs, Path(tmp, name, "batched"), [])
            single, _, _, bad_single = through_run(name, args.budget, args.jobs, Path(tmp, name, "single"), ["--batch", "1"])
            alone = in_process(name, bad | bad_single, min(args.budget, 10.0))
            rows.append({
                "target": name, "in-process cases/s (1 core)": round(alone, 1), "run cases/s": round(batched, 1),
                "run --batch 1 cases/s": round(single, 1), "run / in-process": round(batched / alone, 2),
                "run / --batch 1": round(batched / single, 2), "crashes in run": f"{crashes} of {cases}",
            })
            print(f"{name}: done", file=sys.stderr)
    table = pd.DataFrame(rows).to_markdown(index=False)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
