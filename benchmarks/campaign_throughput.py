"""Campaign throughput (CPU targets here, GPU targets on the device machine): per target, cases/s in-process, through ``layoutfuzz run`` (batched, the default),
and through ``layoutfuzz run --batch 1`` (one case per worker call), with ratios to in-process in the same run.

In-process means the target's cases evaluated one after another in this process, with nothing around them:
the rate a harness could reach on one core if it never isolated anything. Cases that crash or hang cannot run
in-process; they are left out of that rate (and counted in the runs, where a crash costs a worker).

For the Triton kernel targets it adds distinct kernels/s: cases of distinct parameters that ran (each compiled
once, as every run starts with empty Triton and kernel caches), counted from the parameters regenerated from seed 0.
For every target, the seconds from the command's start to its first recorded outcome (what starting costs).

    python benchmarks/campaign_throughput.py [--targets A,B] [--budget 20] [--jobs 2] [--baseline TREE] [--out FILE] [--no-single]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from layoutfuzz.harness import registry  # noqa: E402
from layoutfuzz.harness.campaign import DEFAULT_TARGETS  # noqa: E402
from layoutfuzz.harness.target import make_case  # noqa: E402
from layoutfuzz.harness.triton_compat import cache_root  # noqa: E402
from layoutfuzz.harness.worker import evaluate  # noqa: E402


@dataclass(frozen=True)
class Run:
    """One ``layoutfuzz run``: cases/s, distinct kernels/s (cases of distinct parameters that ran), cases, crashes
    and hangs, and the indices that neither crashed nor hung."""

    rate: float
    kernel_rate: float
    cases: int
    crashes: int
    good: set[int]
    first_result_s: float  # from the command's start to its first recorded outcome: the start's cost
    errors: int  # harness errors: a run with any is broken, however fast


def through_run(target: str, budget: float, jobs: int, out: Path, extra: list[str], tree: Path = ROOT,
                timeout: str = "30s") -> Run:
    """``layoutfuzz run`` (of the source ``tree``) for ``budget`` seconds, with empty Triton and kernel caches."""
    command = [sys.executable, "-m", "layoutfuzz.harness.cli", "run", "--targets", target, "--budget", f"{budget}s", "--jobs", str(jobs),
               "--timeout", timeout, "-q", "--out", str(out), *extra]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(import_root(tree)), str(tree), os.environ.get("PYTHONPATH", "")])),
               TRITON_CACHE_DIR=str(out) + "-triton-cache",  # each run compiles its kernels: no run finds another's
               LAYOUTFUZZ_CACHE=str(seeded_cache(Path(str(out) + "-cache"))))
    started = time.time()
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, env=env)
    match = re.search(r"(\d+) cases in ([\d.]+) s", done.stderr)
    if done.returncode not in (0, 1) or not match:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    db = sqlite3.connect(out / "layoutfuzz.sqlite")
    rows = db.execute("SELECT idx, outcome FROM outcomes").fetchall()
    (first,) = db.execute("SELECT min(recorded_at) FROM outcomes").fetchone()
    first_s = datetime.fromisoformat(first.replace("Z", "+00:00")).timestamp() - started if first else float("nan")
    good = {i for i, o in rows if o not in ("crash", "timeout")}
    # a kernel counts where it was compiled and ran, or refused (a divergence): never a harness error
    kernels = distinct_params(target, [i for i, o in rows if o in ("pass", "diverge")]) if target in KERNEL_TARGETS else 0
    return Run(int(match[1]) / float(match[2]), kernels / float(match[2]), int(match[1]), len(rows) - len(good), good,
               first_s, sum(o == "error" for _, o in rows))


def distinct_params(target_name: str, indices: list[int]) -> int:
    """How many distinct parameters (kernels) the cases ``indices`` of seed 0 have: regenerated, since the store keeps
    no parameters of a pass."""
    import json

    target = registry.load(registry.resolve(target_name))
    return len({json.dumps(make_case(target, 0, i).params, sort_keys=True) for i in indices})


def seeded_cache(folder: Path) -> Path:
    """An empty cache folder but for the cubins NVRTC built here for the raw probes (``gpu.device.compile_source``): a
    probe is built once per machine (the wgmma probe takes NVRTC over a minute), not once per campaign, and no run
    should spend its budget on it."""
    built = cache_root() / "cubins"
    if built.is_dir():
        shutil.copytree(built, folder / "cubins", dirs_exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def import_root(tree: Path) -> Path:
    """A folder whose ``layoutfuzz/`` links to the packages of ``tree``: put first on the path, ``import layoutfuzz.harness``
    finds that tree's, not the checkout's (the installed name has no folder of its own in a tree)."""
    folder = Path(tempfile.mkdtemp(prefix="layoutfuzz-tree-"))
    (folder / "layoutfuzz").mkdir()
    for name in ("harness", "oracles", "generators", "gpu", "reports"):
        (folder / "layoutfuzz" / name).symlink_to(Path(tree).resolve() / name)
    return folder


KERNEL_TARGETS = ("triton.convert_layout", "triton.shared_memory", "triton.convert_layout_shuffle", "triton.compile")


def in_process(target_name: str, indices: list[int], seconds: float) -> float:
    """cases/s of generating and evaluating the target's cases ``indices`` (seed 0) one by one in this process
    (with a Triton cache of its own: the runs before it compiled the same kernels)."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="in-process-triton-cache-")
    os.environ["LAYOUTFUZZ_CACHE"] = str(seeded_cache(Path(tempfile.mkdtemp(prefix="in-process-cache-"))))
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
    parser.add_argument("--no-single", action="store_true", help="leave out the `--batch 1` runs (device time)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.targets.split(","):
            runs = (args.budget, args.jobs)
            batched = through_run(name, *runs, Path(tmp, name, "batched"), [], timeout=args.timeout)
            single = None if args.no_single else through_run(name, *runs, Path(tmp, name, "single"), ["--batch", "1"],
                                                             timeout=args.timeout)
            row = {"target": name}
            if args.baseline:
                before = through_run(name, *runs, Path(tmp, name, "baseline"), [], Path(args.baseline), args.timeout)
                row.update({"baseline run cases/s": round(before.rate, 1)})
            alone = in_process(name, sorted(batched.good & (single.good if single else batched.good)), min(args.budget, 10.0))
            row.update({"in-process cases/s (1 core)": round(alone, 1), "run cases/s": round(batched.rate, 1)})
            if single:
                row["run --batch 1 cases/s"] = round(single.rate, 1)
            row["run / in-process"] = round(batched.rate / alone, 2)
            if single:
                row["run / --batch 1"] = round(batched.rate / single.rate, 2)
            row["crashes in run"] = f"{batched.crashes} of {batched.cases}"
            row["errors in run"] = batched.errors
            if args.baseline:
                row["errors in baseline"] = before.errors
            if args.baseline:
                row["run / baseline"] = round(batched.rate / before.rate, 2)
            if name in KERNEL_TARGETS:
                row["run distinct kernels/s"] = round(batched.kernel_rate, 1)
                if args.baseline:
                    row["baseline distinct kernels/s"] = round(before.kernel_rate, 1)
            row["run first result s"] = round(batched.first_result_s, 1)
            if args.baseline:
                row["baseline first result s"] = round(before.first_result_s, 1)
            rows.append(row)
            print(f"{name}: done", file=sys.stderr)
    table = pd.DataFrame(rows).to_markdown(index=False)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
