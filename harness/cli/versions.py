"""Commands across Triton versions: ``matrix`` (the same cases under several Tritons, a table and a root
cause x version grid), ``kernels`` (compile GPU cases' kernels ahead) and ``bisect`` (the release range of one root
cause), their parsers and their handlers."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from layoutfuzz.harness import environments, trust
from layoutfuzz.harness.bisect import bisect, kernels_refusal, replay
from layoutfuzz.harness.campaign import UsageError, load_target
from layoutfuzz.harness.cli.options import (
    add_budget,
    add_commands,
    add_format,
    add_jobs,
    add_known,
    add_out,
    add_quiet,
    add_root,
    add_seed,
    add_targets,
    add_timeout,
    bounded_int,
    positive_int,
)
from layoutfuzz.harness.environments import EnvironmentFailure, TritonEnvironment
from layoutfuzz.harness.matrix import (
    VersionRun,
    check_settings,
    folder_name,
    frames,
    ordered,
    pass_rates,
    root_cause_grid,
    run_version,
    write_matrix,
)
from layoutfuzz.harness.target import Target
from layoutfuzz.harness.triton_compat import folder_version
from layoutfuzz.reports import ledger as ledger_file
from layoutfuzz.reports import schema
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.terminal import pass_rate_view, show

DEFAULT_MATRIX_OUT = "layoutfuzz-matrix"
MAX_KERNEL_CASES = 100_000  # cases per target `kernels` compiles: about a day of compiles on 16 cores
kernel_cases = bounded_int(1, MAX_KERNEL_CASES, " kernels per target")  # more would spend hours drawing cases first


def _environments(args: argparse.Namespace) -> list[TritonEnvironment]:
    """Each version's environment (made on first use): releases, then the user's wheels and interpreters;
    with --kernels, this interpreter once per version of prebuilt kernels."""
    envs = []
    try:
        if getattr(args, "kernels", None):
            versions = environments.release_range(args.triton) if args.triton else None
            return [environments.for_kernels(f) for f in environments.kernel_folders(args.kernels, versions)]
        for version in environments.release_range(args.triton) if args.triton else []:
            envs.append(environments.for_release(version))
        for wheel in args.triton_wheel or []:
            envs.append(environments.for_wheel(wheel))
        for python in args.triton_python or []:
            envs.append(environments.for_python(python))
    except EnvironmentFailure as exc:
        raise UsageError(str(exc)) from None
    labels = [e.label for e in envs]
    if len(set(labels)) != len(labels):
        raise UsageError(f"a version is given twice: {', '.join(labels)}")
    return envs


def matrix_view(rates: pd.DataFrame, grid: pd.DataFrame, fmt: str) -> str:
    """The pass rates and root causes per version as a terminal shows them (in Markdown: the case counts,
    the ledger's titles and the version spans go first where a line is too long; matrix.md has them all)."""
    cases = [c for c in rates.columns if str(c).startswith("cases ")]
    shown = grid.drop(columns=["bucket"]) if not grid.empty else grid
    causes = show(shown, fmt, drop=["known as", "versions"]) if not grid.empty else "no root causes: every case passed under every version"
    return f"{pass_rate_view(rates, fmt, drop=cases)}\n\n{causes}"


def cmd_matrix(args: argparse.Namespace) -> int:
    if args.prune and not (args.triton or args.triton_wheel or args.triton_python):
        for folder in environments.prune():
            print(f"removed {folder}")
        return 0
    if not (args.triton or args.triton_wheel or args.triton_python or args.kernels):
        raise UsageError("name the versions: --triton 3.6.0,3.9.0 (or a range 3.6.0..3.9.0), --triton-wheel, --triton-python "
                         "or --kernels DIR")
    envs = _environments(args)
    out = Path(args.out)
    each = ["--jobs", str(args.jobs), "--quiet"] + (["--budget", f"{args.budget:g}"] if args.budget else [])
    campaign = each + ["--seed", str(args.seed)] + (["--targets", args.targets] if args.targets else [])
    campaign += ["--cases", str(args.cases)] if args.cases else []
    campaign += ["--timeout", f"{args.timeout:g}"] if args.timeout else []
    settings = {"targets": args.targets, "seed": args.seed, "cases": args.cases, "budget": args.budget,
                "versions": [[e.label, e.triton] for e in envs], "kernels": str(args.kernels or "")}
    resume = check_settings(out, settings, args.force) and not args.force  # --force starts every version over
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "matrix.json", json.dumps(settings, indent=1) + "\n")
    runs = ordered([VersionRun(e, out / folder_name(e.label)) for e in envs])
    started = time.monotonic()
    for run in runs:
        # a resumed campaign keeps its targets: only a module:attr the user gave is named again, to allow its import
        again = each + [arg for name in (args.targets or "").split(",") if ":" in name for arg in ("--target", name.strip())]
        status = run_version(run, campaign, again if resume else None, args.force)
        if status == 130:
            print(f"interrupted; the same command resumes (stores in {out})", file=sys.stderr)
            return 130
        if status not in (0, 1):
            raise UsageError(f"the campaign under Triton {run.label} failed (exit {status}); see {run.directory / 'run.log'}")
    if args.prune:
        for folder in environments.prune({e.python.parent.parent for e in envs}):
            print(f"removed {folder}", file=sys.stderr)
    by_version = frames(runs)
    rates = pass_rates(by_version)
    try:
        known = ledger_file.load(args.known)
    except ledger_file.LedgerError as exc:
        raise UsageError(str(exc)) from None
    grid = root_cause_grid(by_version, known)
    header = (f"# layoutfuzz matrix: {args.targets or 'the CPU targets'}, seed {args.seed}, "
              + (f"{args.cases} cases" if args.cases else f"budget {args.budget:g} s") + " per target and version\n\n"
              + "\n".join(f"- Triton {r.label}: {r.environment.triton}, {r.environment.python}, store {r.directory}" for r in runs))
    written = write_matrix(out, rates, grid, header)
    print(matrix_view(rates, grid, args.format))
    print(f"\n{len(runs)} version(s) in {time.monotonic() - started:.0f} s; {written}", file=sys.stderr)
    return 0


def find_reproducer(case: str, known: str | Path, root: str | Path, out: str | Path) -> tuple[Path, str | None]:
    """The case file to replay and the bucket it stands for: ``case`` is a case or report file, or a bucket key whose
    reproducer is in the ledger ``known``, the nightly ``root`` or the campaign ``out`` (its reduced case, if any)."""
    path = Path(case)
    if path.is_file():
        _, report = schema.read_case_file(path)
        if report is not None:  # a report: replay its reduced case where it has one
            reduced_file = path.with_name(report["reduced_case_file"]) if report.get("reduced_case_file") else None
            if reduced_file is not None and reduced_file.is_file():
                return reduced_file, report.get("bucket")
            return path, report.get("bucket")
        return path, None
    try:
        problem = ledger_file.load(known).get(case)
    except ledger_file.LedgerError as exc:
        raise UsageError(str(exc)) from None
    if problem is not None and problem.reproducer:
        candidate = Path(known).resolve().parent / problem.reproducer
        if candidate.is_file():
            return candidate, case
    candidate = Path(root) / "reproducers" / f"{case}.json"
    if candidate.is_file():
        return candidate, case
    reports = Path(out) / "reports"
    if reports.is_dir():
        for report in sorted(reports.glob("*.json")):
            if report.name.endswith(".reduced.json"):
                continue
            try:
                data = schema.load_report(report)
            except schema.SchemaError:
                continue
            if data.get("bucket") == case:
                return find_reproducer(str(report), known, root, out)
    raise UsageError(f"{case!r} is neither a case or report file nor a bucket with a reproducer in "
                     f"{known}, {Path(root) / 'reproducers'} or {reports}")


@dataclass(frozen=True)
class BisectSettings:
    """What one bisection runs with (``layoutfuzz bisect``'s options, or a Python user's)."""

    case: str  # a case or report file, or a bucket key (see ``find_reproducer``)
    triton: str = f"{environments.RELEASES[0]}..{environments.RELEASES[-1]}"  # releases, A..B or a list
    kernels: str | Path | None = None  # replay with the kernels compiled ahead into DIR/triton-VERSION
    timeout: float = 120.0  # seconds per replay
    out: str | Path = "layoutfuzz-out"  # the campaign to find a bucket's report in
    root: str | Path = "nightly"  # the nightly root to find a bucket's reproducer in
    known: str | Path = ledger_file.DEFAULT_LEDGER  # the ledger, where the range is recorded
    record: bool = True  # write the range into the ledger


def cmd_bisect(args: argparse.Namespace) -> int:
    return run_bisect(BisectSettings(case=args.case, triton=args.triton, kernels=args.kernels, timeout=args.timeout,
                                     out=args.out, root=args.root, known=args.known, record=args.record))


def run_bisect(settings: BisectSettings) -> int:
    """Bisects one reproducer over Triton releases and prints (and records) the range: exit 0 when a range was found,
    1 when another failure got in the way."""
    case_file, bucket = find_reproducer(settings.case, settings.known, settings.root, settings.out)
    refusal = kernels_refusal(case_file) if settings.kernels else ""
    if refusal:
        raise UsageError(refusal)
    try:
        versions = environments.release_range(settings.triton)
        folders = {}
        if settings.kernels:  # only the releases whose kernels were compiled ahead
            folders = {folder_version(f): f for f in environments.kernel_folders(settings.kernels)}
            versions = [v for v in versions if v in folders]
    except EnvironmentFailure as exc:
        raise UsageError(str(exc)) from None
    if len(versions) < 2:
        raise UsageError("bisect needs at least two releases: --triton 3.6.0..3.9.0" + (f" with kernels in {settings.kernels}" if settings.kernels else ""))

    def run(version: str):
        try:
            env = environments.for_kernels(folders[version]) if folders else environments.for_release(version)
        except EnvironmentFailure as exc:
            raise UsageError(str(exc)) from None
        result = replay(env, case_file, settings.timeout)
        print(f"Triton {version}: {result.outcome}" + (f" ({result.signature})" if result.signature else ""), file=sys.stderr)
        return result

    found = bisect(versions, run, bucket)
    print(f"{case_file}: {found.summary()}")
    print(f"replayed: {found.checked()}")
    if found.stopped:
        return 1
    if settings.record and found.bucket:
        try:
            known = ledger_file.load(settings.known)
        except ledger_file.LedgerError as exc:
            raise UsageError(str(exc)) from None
        if found.bucket in known:
            stamp = time.strftime("%Y-%m-%d", time.gmtime())
            ledger_file.add(settings.known, ledger_file.KnownProblem(
                **{**_identity(known[found.bucket]), "first_bad": found.first_bad or "none",
                   "first_good": found.first_good, "bisected": f"{found.checked()} ({stamp})",
                   "masked": ", ".join(found.masked)}))
            print(f"recorded in {settings.known}")
        else:
            print(f"not in {settings.known}: add it with `layoutfuzz known add {found.bucket} --title ...` to record the range")
    return 0


def _identity(problem: ledger_file.KnownProblem) -> dict[str, str]:
    return {"target": problem.target, "outcome": problem.outcome, "signature": problem.signature, "title": problem.title}


def cmd_kernels(args: argparse.Namespace) -> int:
    from layoutfuzz.gpu.precompile import Job, compile_all
    from layoutfuzz.harness.campaign import target_specs
    from layoutfuzz.harness.target import MALFORMED, make_case

    if args.triton:  # each release compiles in its own environment, into OUT/triton-VERSION
        try:
            envs = [environments.for_release(v) for v in environments.release_range(args.triton)]
        except EnvironmentFailure as exc:
            raise UsageError(str(exc)) from None
        rest = _forwarded(args)
        for env in envs:
            print(f"\n== Triton {env.label}", file=sys.stderr)
            done = subprocess.run(env.command("kernels", *rest), env=env.env())
            if done.returncode:
                return done.returncode
        return 0
    import triton
    from tqdm import tqdm

    jobs = []
    for path in args.case or []:
        case, report = schema.read_case_file(Path(path))
        try:
            spec = trust.trusted_spec((report or {}).get("target_spec") or case.target, path, case.target)
        except trust.UntrustedTarget as exc:
            raise UsageError(str(exc)) from None
        try:
            _compiling_target(spec).validate(case)
        except MALFORMED as exc:
            raise UsageError(f"malformed case {case.case_id}: {str(exc)[:300]}") from None
        jobs.append(Job(spec, case))
    if args.targets and not args.cases:
        raise UsageError("--targets needs --cases N")
    named = target_specs([t.strip() for t in args.targets.split(",") if t.strip()]) if args.targets else []
    for spec, target in [(spec, _compiling_target(spec)) for spec in named]:  # every target checked before any is drawn
        missing = target.compile_support()
        if missing:  # a release without the operation: the others of a --triton range still compile
            print(f"Triton {triton.__version__}: {target.name} skipped: {missing}", file=sys.stderr)
            continue
        drawing = tqdm(range(args.cases), desc=f"drawing {target.name}", unit=" cases", disable=args.quiet, file=sys.stderr)
        jobs += [Job(spec, make_case(target, args.seed, i)) for i in drawing]
    if not jobs:
        if args.targets:  # every target named needs what this release lacks (said above): nothing to compile here
            return 0
        raise UsageError("name the kernels: --targets NAMES --cases N, or --case FILE")
    folder = Path(args.out) / f"triton-{triton.__version__}"
    started = time.monotonic()
    counts = compile_all(jobs, folder, args.jobs, args.timeout, args.quiet)
    print(f"Triton {triton.__version__}: {len(jobs)} kernel(s) in {time.monotonic() - started:.0f} s: "
          + ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) + f" -> {folder}")
    return 0


def _compiling_target(spec: str) -> Target:
    """The target of ``spec`` if it has kernels to compile ahead (a GPU target of Triton's), else a usage error."""
    target = load_target(spec)
    if not getattr(target, "prebuilt", False):
        raise UsageError(f"{target.name} runs no Triton kernel to compile ahead: `layoutfuzz kernels` compiles the GPU "
                         "targets' Gluon kernels (see `layoutfuzz kernels --help`)")
    return target


def _forwarded(args: argparse.Namespace) -> list[str]:
    """The arguments of ``kernels`` for each version's own run (all but --triton)."""
    out = ["--out", str(Path(args.out).resolve()), "--jobs", str(args.jobs), "--seed", str(args.seed), "--timeout", f"{args.timeout:g}"]
    out += ["--targets", args.targets] if args.targets else []
    out += ["--cases", str(args.cases)] if args.cases else []
    for path in args.case or []:
        out += ["--case", str(Path(path).resolve())]
    return out + (["--quiet"] if args.quiet else [])


def _add_matrix(sub: argparse._SubParsersAction) -> None:
    matrix = sub.add_parser(
        "matrix", help="the same seeded cases under several Triton versions: a pass-rate column per version and a root "
        "cause grid",
        description="Run the same seeded campaign under each Triton version, each in its own environment (a uv virtual "
        "environment per release, made on first use and cached in $LAYOUTFUZZ_CACHE or ~/.cache/layoutfuzz; or your own "
        "interpreter or wheel), one store per version in OUT/triton-VERSION. Then print one pass-rate table with a column "
        "per version and a grid of root causes x versions (present, absent, unsupported), also written to OUT/matrix.md "
        "and OUT/*.csv. Interrupted, the same command resumes. `--prune` alone removes every cached environment.")
    matrix.add_argument("--triton", metavar="VERSIONS", help="releases: 3.6.0,3.9.0 or a range 3.6.0..3.9.0 "
                        f"(known releases: {', '.join(environments.RELEASES)})")
    matrix.add_argument("--triton-python", action="append", metavar="PATH",
                        help="an interpreter with your own Triton (and layoutfuzz's requirements) installed (repeatable)")
    matrix.add_argument("--triton-wheel", action="append", metavar="PATH", help="a Triton wheel of your own build (repeatable)")
    matrix.add_argument("--kernels", metavar="DIR", help="run the GPU targets' kernels that `layoutfuzz kernels` compiled ahead "
                        "into DIR/triton-VERSION, one campaign per version (with --triton: those versions only), with "
                        "this interpreter and no Triton of that version")
    add_targets(matrix)
    matrix.add_argument("--cases", type=positive_int, help="cases per target and version (the same indices under each)")
    add_budget(matrix, "time per version instead of a case count")
    add_seed(matrix)
    add_jobs(matrix, "worker processes per campaign")
    add_timeout(matrix, "per-case limit (default 30s)")
    add_out(matrix, "output folder", default=DEFAULT_MATRIX_OUT, writes=True)
    matrix.add_argument("--force", action="store_true", help="replace a matrix of other settings in --out")
    matrix.add_argument("--prune", action="store_true", help="remove the cached environments this matrix did not use")
    add_known(matrix, "the ledger to name known root causes from")
    add_format(matrix)
    matrix.set_defaults(func=cmd_matrix)


def _add_kernels(sub: argparse._SubParsersAction) -> None:
    kernels = sub.add_parser(
        "kernels", help="compile GPU cases' kernels ahead on a CPU, by one or several Triton releases",
        description="Compile the Gluon kernel of each case of the GPU targets (triton.convert_layout, "
        "triton.convert_layout_cluster, triton.shared_memory, triton.convert_layout_shuffle, whose second lowering "
        "3.9.0 on compiles too) "
        "for sm_90a on this machine, by this interpreter's Triton or, with --triton, by each release in its own "
        "environment, into OUT/triton-VERSION/TARGET/KEY.json (the cubin and what launching it needs, filed by the "
        "case's content hash; a compile the compiler refuses is filed with its error). Each compile runs in a worker; "
        "what is filed already is skipped. Take OUT to the GPU machine and run `layoutfuzz matrix --kernels OUT` or "
        "`layoutfuzz bisect CASE --kernels OUT` there: no Triton of those versions is needed on it.")
    kernels.add_argument("--triton", metavar="VERSIONS", help="releases to compile with, each in its cached environment")
    add_targets(kernels, help="GPU targets whose cases to compile (with --cases)")
    kernels.add_argument("--cases", type=kernel_cases, help=f"cases per target (indices 0..N-1 of --seed; at most "
                         f"{MAX_KERNEL_CASES:,})")
    add_seed(kernels)
    kernels.add_argument("--case", action="append", metavar="FILE", help="a case or report file to compile (repeatable)")
    add_out(kernels, "output folder", default="layoutfuzz-kernels", writes=True)
    add_jobs(kernels, "compiles at once")
    add_timeout(kernels, "per compile (300s)", default=300.0)
    add_quiet(kernels)
    kernels.set_defaults(func=cmd_kernels)


def _add_bisect(sub: argparse._SubParsersAction) -> None:
    bis = sub.add_parser(
        "bisect", help="the Triton releases where a root cause is present: first bad, first good",
        description="Replay one reproducer (a reduced case, a report, or a BUCKET key with a reproducer in the ledger, "
        "ROOT/reproducers or OUT/reports) under ordered Triton releases, each in its cached environment, by binary "
        "search over the range, and print the first bad and the first good release. A release is bad when the "
        "reproducer fails with the same root cause; an end release where another failure comes first is set aside "
        "(masked). With the bucket in the ledger, records the range there (first_bad, first_good, bisected, masked). "
        "Exit 0 when a range was found, 1 when another failure got in the way, 2 on bad input.")
    bis.add_argument("case", metavar="CASE|BUCKET")
    bis.add_argument("--triton", default=BisectSettings.triton, metavar="RANGE",
                     help=f"releases, A..B or a list (default {BisectSettings.triton})")
    bis.add_argument("--kernels", metavar="DIR", help="replay with the kernels `layoutfuzz kernels` compiled ahead into "
                     "DIR/triton-VERSION (a GPU target on the GPU machine, no Triton of those versions there)")
    add_timeout(bis, "per replay (120s)", default=120.0)
    add_out(bis, "campaign folder to find a BUCKET's report in", show_default=False)
    add_root(bis, "nightly root to find a BUCKET's reproducer in")
    add_known(bis)
    bis.add_argument("--no-record", dest="record", action="store_false", help="do not write the range into the ledger")
    bis.set_defaults(func=cmd_bisect)


PARSERS = {"matrix": _add_matrix, "kernels": _add_kernels, "bisect": _add_bisect}


def add_parsers(sub: argparse._SubParsersAction, only: Collection[str] | None = None) -> None:
    """The parsers of matrix, kernels and bisect (``only``: of those named)."""
    add_commands(sub, PARSERS, only)
