"""Campaign throughput (CPU targets here, GPU targets on the device machine): per target, cases/s in-process, through ``layoutfuzz run`` (batched, the default),
and through ``layoutfuzz run --batch 1`` (one case per worker call), with ratios to in-process in the same run.

In-process means the target's cases evaluated one after another in this process, with nothing around them:
the rate a harness could reach on one core if it never isolated anything. Cases that crash or hang cannot run
in-process; they are left out of that rate (and counted in the runs, where a crash costs a worker).

For the Triton kernel targets it adds distinct kernels/s: cases of distinct parameters that ran (each compiled
once, as every run starts with empty Triton and kernel caches), counted from the parameters regenerated from seed 0.
For every target, the seconds from the command's start to its first recorded outcome (what starting costs), and the
steady-state rate: the cases recorded after the first outcome over the time from it to the last.

The one-off builds come first and are timed on their own: one case of the target through ``layoutfuzz run`` with the
machine's cache, which builds what a machine keeps (NVRTC cubins: the wgmma probe takes 41 s on an H100) and warms
the imports, so that no timed run spends its budget on them. A rate that is 0 (no case recorded or runnable in
process) says why in ``note`` rather than failing.

    python benchmarks/campaign_throughput.py [--targets A,B] [--budget 20] [--jobs 2] [--baseline TREE] [--out FILE] [--no-single]
"""

from __future__ import annotations

import argparse
import math
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

MACHINE_CACHE = cache_root()  # the machine's layoutfuzz cache, where one-off builds stay (read before in_process moves it)


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
    steady_rate: float  # cases/s recorded after the first outcome, over the time from it to the last (NaN: too few)


def layoutfuzz_run(target: str, out: Path, options: list[str], tree: Path, cache: Path) -> tuple[subprocess.CompletedProcess, float]:
    """``layoutfuzz run`` (of the source ``tree``) of ``target`` into ``out`` with an empty Triton cache and the
    layoutfuzz cache ``cache``, and its start (``time.time()``)."""
    command = [sys.executable, "-m", "layoutfuzz.harness.cli", "run", "--targets", target, "-q", "--out", str(out), *options]
    path = os.pathsep.join(filter(None, [str(import_root(tree)), str(tree), os.environ.get("PYTHONPATH", "")]))
    env = dict(os.environ, PYTHONPATH=path, TRITON_CACHE_DIR=str(out) + "-triton-cache",  # no run finds another's kernels
               LAYOUTFUZZ_CACHE=str(cache))
    started = time.time()
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1) or not re.search(r"\d+ cases in [\d.]+ s", done.stderr):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return done, started


def one_off_builds(target: str, out: Path, tree: Path = ROOT) -> float:
    """Seconds of one case of ``target`` through ``layoutfuzz run`` with the machine's cache: what a fresh machine builds
    once (NVRTC cubins, kept in the machine's cache and seeded into every timed run), the imports' first reading, one
    case's kernel; on a machine that built them before, the start and one case."""
    started = time.monotonic()
    layoutfuzz_run(target, out, ["--cases", "1", "--jobs", "1", "--timeout", "10m"], tree, MACHINE_CACHE)
    return time.monotonic() - started


def through_run(target: str, budget: float, jobs: int, out: Path, extra: list[str], tree: Path = ROOT,
                timeout: str = "30s") -> Run:
    """``layoutfuzz run`` (of the source ``tree``) for ``budget`` seconds, with empty Triton and kernel caches (but for
    the machine's cubins)."""
    options = ["--budget", f"{budget}s", "--jobs", str(jobs), "--timeout", timeout, *extra]
    done, started = layoutfuzz_run(target, out, options, tree, seeded_cache(Path(str(out) + "-cache")))
    match = re.search(r"(\d+) cases in ([\d.]+) s", done.stderr)
    assert match is not None  # layoutfuzz_run checked it
    cases, seconds = int(match[1]), max(float(match[2]), 1e-9)
    db = sqlite3.connect(out / "layoutfuzz.sqlite")
    rows = db.execute("SELECT idx, outcome FROM outcomes").fetchall()
    first, last, later = db.execute("SELECT min(recorded_at), max(recorded_at), "
                                    "sum(recorded_at > (SELECT min(recorded_at) FROM outcomes)) FROM outcomes").fetchone()
    first_s = _timestamp(first) - started if first else math.nan
    span = _timestamp(last) - _timestamp(first) if first else 0.0
    good = {i for i, o in rows if o not in ("crash", "timeout")}
    # a kernel counts where it was compiled and ran, or refused (a divergence): never a harness error
    kernels = distinct_params(target, [i for i, o in rows if o in ("pass", "diverge")]) if target in KERNEL_TARGETS else 0
    return Run(cases / seconds, kernels / seconds, cases, len(rows) - len(good), good, first_s,
               sum(o == "error" for _, o in rows), (later or 0) / span if span > 0 else math.nan)


def _timestamp(recorded_at: str) -> float:
    """A store's ``recorded_at`` (ISO 8601, UTC) as seconds since the epoch."""
    return datetime.fromisoformat(recorded_at.replace("Z", "+00:00")).timestamp()


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
    built = MACHINE_CACHE / "cubins"
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


@dataclass(frozen=True)
class InProcess:
    """The in-process rate (0 where no case could run) and the seconds of its first case (imports, caches, builds)."""

    rate: float
    first_case_s: float


def in_process(target_name: str, indices: list[int], seconds: float) -> InProcess:
    """cases/s of generating and evaluating the target's cases ``indices`` (seed 0) one by one in this process
    (with a Triton cache of its own: the runs before it compiled the same kernels), after its first case, timed
    apart; none (no case the runs could run here): a rate of 0."""
    if not indices:
        return InProcess(0.0, math.nan)
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="in-process-triton-cache-")
    os.environ["LAYOUTFUZZ_CACHE"] = str(seeded_cache(Path(tempfile.mkdtemp(prefix="in-process-cache-"))))
    spec = registry.resolve(target_name)
    target = registry.load(spec)
    started = time.perf_counter()
    evaluate(target, make_case(target, 0, indices[0]))  # warm: imports, caches
    first_case_s = time.perf_counter() - started
    started, count = time.perf_counter(), 0
    for index in indices:
        evaluate(target, make_case(target, 0, index))
        count += 1
        if time.perf_counter() - started >= seconds:
            break
    return InProcess(count / (time.perf_counter() - started), first_case_s)


def ratio(a: float, b: float) -> float:
    """``a / b`` to two places; NaN (a table's ``-``) where ``b`` is 0 or unknown."""
    return round(a / b, 2) if b and not math.isnan(b) else math.nan


def why_none(budget: float, one_off_s: float, runs: dict[str, Run], alone: InProcess) -> str:
    """Why a rate of the row is 0: a run that recorded no case within its budget, or no case to run in process."""
    notes = [f"`{what}` recorded no case within its {budget:g} s budget (the one-off builds before it took "
             f"{one_off_s:.0f} s)" for what, run in runs.items() if run.cases == 0]
    if not alone.rate:
        notes.append("no case to time in-process: the runs recorded none that did not crash or hang")
    return "; ".join(notes)


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
            one_off_s = one_off_builds(name, Path(tmp, name, "one-off"))
            batched = through_run(name, *runs, Path(tmp, name, "batched"), [], timeout=args.timeout)
            single = None if args.no_single else through_run(name, *runs, Path(tmp, name, "single"), ["--batch", "1"],
                                                             timeout=args.timeout)
            row: dict[str, object] = {"target": name, "one-off builds s": round(one_off_s, 1)}
            if args.baseline:
                before = through_run(name, *runs, Path(tmp, name, "baseline"), [], Path(args.baseline), args.timeout)
                row.update({"baseline run cases/s": round(before.rate, 1)})
            alone = in_process(name, sorted(batched.good & (single.good if single else batched.good)), min(args.budget, 10.0))
            row.update({"in-process cases/s (1 core)": round(alone.rate, 1), "in-process first case s": round(alone.first_case_s, 1),
                        "run cases/s": round(batched.rate, 1), "run steady cases/s": round(batched.steady_rate, 1)})
            if single:
                row["run --batch 1 cases/s"] = round(single.rate, 1)
            row["run / in-process"] = ratio(batched.rate, alone.rate)
            if single:
                row["run / --batch 1"] = ratio(batched.rate, single.rate)
            row["crashes in run"] = f"{batched.crashes} of {batched.cases}"
            row["errors in run"] = batched.errors
            if args.baseline:
                row["errors in baseline"] = before.errors
                row["run / baseline"] = ratio(batched.rate, before.rate)
            if name in KERNEL_TARGETS:
                row["run distinct kernels/s"] = round(batched.kernel_rate, 1)
                if args.baseline:
                    row["baseline distinct kernels/s"] = round(before.kernel_rate, 1)
            row["run first result s"] = round(batched.first_result_s, 1)
            if args.baseline:
                row["baseline first result s"] = round(before.first_result_s, 1)
            named = {"run": batched, **({"run --batch 1": single} if single else {}), **({"baseline": before} if args.baseline else {})}
            row["note"] = why_none(args.budget, one_off_s, named, alone)
            rows.append(row)
            print(f"{name}: done", file=sys.stderr)
    frame = pd.DataFrame(rows)
    table = frame.astype(object).where(frame.notna(), None).to_markdown(index=False, missingval="-")
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
