"""The ``layoutfuzz`` command line: run, reproduce, table, targets."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from generators.case import Case, parse_case_id
from harness import registry
from harness.runner import Result, Runner, Shard, make_case, plan, run_cases
from harness.target import OUTCOMES, Outcome, Target
from reports.buckets import bucket_table, diff_buckets
from reports.junit import junit_xml
from reports.report import bucket_key, build_report, environment_versions
from reports.store import DB_NAME, Store, StoreError, report_name, write_atomically
from reports.tables import FORMATS, pass_rate_table, render, write_tables

DEFAULT_OUT = "layoutfuzz-out"
DEFAULT_TARGETS = "triton.linear_layout,triton.layouts,triton.bank_conflicts,triton.compile"  # every CPU target
DEFAULT_BUDGET_S = 60.0
DEFAULT_TIMEOUT_S = 30.0


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit code 2."""


def parse_duration(text: str) -> float:
    """Seconds from '90', '90s', '5m', '1h' or '1h30m'."""
    match = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not text.strip() or not match or not any(match.groups()):
        raise argparse.ArgumentTypeError(f"bad duration {text!r}: use e.g. 90, 90s, 5m or 1h")
    h, m, s = (float(g) if g else 0.0 for g in match.groups())
    return h * 3600 + m * 60 + s


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def shard_spec(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# ---- run --------------------------------------------------------------------------------


def _target_specs(args: argparse.Namespace) -> list[str]:
    names = [t.strip() for t in (args.targets or "").split(",") if t.strip()] + list(args.target or [])
    if not names:
        names = DEFAULT_TARGETS.split(",")
    try:
        specs = [registry.resolve(n) for n in names]
    except registry.TargetNotFound as exc:
        raise UsageError(str(exc)) from None
    return list(dict.fromkeys(specs))


def _load(spec: str) -> Target:
    try:
        return registry.load(spec)
    except registry.TargetNotFound as exc:
        raise UsageError(str(exc)) from None


def _specs_by_name(targets: list[tuple[str, Target]]) -> dict[str, str]:
    """Target name -> the spec it was loaded from."""
    return {target.name: spec for spec, target in targets}


def _prepare_store(args: argparse.Namespace) -> tuple[Store, dict[str, Any]]:
    out = Path(args.out)
    existing = (out / DB_NAME).exists()
    if args.resume:
        if not existing:
            raise UsageError(f"nothing to resume in {out}: no {DB_NAME} there")
        store = Store(out, create=False)
        meta = store.meta()
        if not meta.get("targets"):
            raise UsageError(f"{out / DB_NAME} holds no campaign settings to resume")
        return store, meta
    if existing:
        if not args.force:
            raise UsageError(
                f"{out} already holds a campaign: add --resume to continue it, --force to replace it, "
                "or --out to write elsewhere"
            )
        for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", "reports"):
            path = out / name
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    store = Store(out)
    meta = {
        "targets": _target_specs(args),
        "seed": args.seed,
        "shard": str(args.shard),
        "cases": args.cases,
        "timeout_s": args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    store.set_meta(meta)
    return store, meta


class Recorder:
    """Stores results as they arrive, writes reports for non-pass ones, shows progress."""

    def __init__(self, store: Store, specs: dict[str, str], versions: dict[str, dict[str, str]], progress) -> None:
        self.store, self.specs, self.versions, self.progress = store, specs, versions, progress
        self.counts: Counter[str] = Counter()

    def __call__(self, result: Result) -> None:
        report = None
        if result.outcome is not Outcome.PASS:
            path = Path(self.store.directory, "reports", report_name(result.case))
            spec = self.specs.get(result.case.target, result.case.target)
            report = build_report(result, self.versions.get(result.case.target, {}), path, spec)
        self.store.record(result, bucket_key(result), report)
        self.counts[result.outcome.value] += 1
        if self.progress is not None:
            self.progress.update(1)
            self.progress.set_postfix_str(
                " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()) if k != "pass"), refresh=False
            )


def cmd_run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    if args.baseline:  # a wrong baseline is an input error, found before the campaign runs
        _open_store(args.baseline).close()
    store, meta = _prepare_store(args)
    specs = list(meta["targets"])
    targets = [(spec, _load(spec)) for spec in specs]
    seed, shard, cases = int(meta["seed"]), Shard.parse(meta["shard"]), meta.get("cases")
    budget = args.budget if args.budget is not None else (None if cases else DEFAULT_BUDGET_S)
    env = environment_versions()
    versions = {target.name: env | dict(target.versions()) for _, target in targets}
    recorder = Recorder(store, _specs_by_name(targets), versions, None)
    runnable = []
    done = store.recorded()
    first = next(shard.indices(cases), None)
    for spec, target in targets:
        availability = target.availability()
        if availability.available:
            runnable.append((spec, target))
            continue
        print(f"{target.name}: unsupported here: {availability.reason}", file=sys.stderr)
        if first is not None and (target.name, seed, first) not in done:
            case = make_case(target, seed, first)
            recorder(Result(case, target.family(case), Outcome.UNSUPPORTED, availability.reason))

    total = None if cases is None else sum(1 for _ in shard.indices(cases)) * len(runnable)
    already = sum(1 for (t, s, _) in done if s == seed and t in {x.name for _, x in runnable})
    what = f"{len(runnable)} target(s), seed {seed}, shard {shard}, " + (
        f"{cases} cases" if cases else "no case limit") + (f", budget {budget:g} s" if budget else "")
    print(f"layoutfuzz: {what}, {args.jobs} worker(s) -> {store.directory}", file=sys.stderr)
    interactive = sys.stderr.isatty()  # in CI logs: a progress line every 30 s instead of a live bar
    progress = tqdm(total=total, initial=already if total else 0, unit=" cases", disable=args.quiet,
                    file=sys.stderr, dynamic_ncols=interactive, mininterval=0.1 if interactive else 30)
    recorder.progress = progress
    work = plan(runnable, seed, shard, cases, lambda t, i: (t, seed, i) in done)
    deadline = time.monotonic() + budget if budget else None
    started = time.monotonic()
    interrupted = False
    try:
        timeout = args.timeout if args.timeout is not None else float(meta.get("timeout_s", DEFAULT_TIMEOUT_S))
        run_cases(work, recorder, args.jobs, timeout, deadline)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()
    elapsed = time.monotonic() - started
    frame = store.frame()
    table = pass_rate_table(frame)
    write_tables(table, store.directory)
    print(render(table, args.format))
    buckets = bucket_table(frame)
    if args.reduce and not buckets.empty and not interrupted:
        print(f"reducing the representatives of {len(buckets)} bucket(s)...", file=sys.stderr)
        buckets["reduced"] = reduce_representatives(store, buckets, _specs_by_name(targets), timeout, args.reduce_tries)
    write_atomically(store.directory / "buckets.md", render(buckets, "md") + "\n")
    if not buckets.empty:
        print(f"\n{len(buckets)} distinct problem(s) in {int(buckets['cases'].sum())} cases (buckets.md):")
        print(render(buckets.drop(columns=["report"]), args.format))
    new_buckets, changes = 0, None
    if args.baseline:
        changes = diff_buckets(_open_store(args.baseline).frame(), frame)
        new_buckets = int((changes["status"] == "new").sum())
        print(f"\nagainst {args.baseline}: {_diff_summary(changes)}")
        if not changes.empty:
            print(render(changes, args.format))
    if args.junit:
        write_atomically(Path(args.junit), junit_xml(table, buckets, changes, f"layoutfuzz {store.directory}"))
    n = sum(recorder.counts.values())
    summary = ", ".join(f"{recorder.counts[o]} {o}" for o in OUTCOMES if recorder.counts[o])
    print(f"\n{n} cases in {elapsed:.1f} s ({n / max(elapsed, 1e-9):.0f}/s): {summary or 'none'}", file=sys.stderr)
    findings = sum(recorder.counts[o] for o in ("diverge", "crash", "timeout", "error"))
    if findings:
        print(f"reports: {store.directory / 'reports'}", file=sys.stderr)
    store.close()
    if interrupted:
        print(f"interrupted; continue with: layoutfuzz run --out {args.out} --resume", file=sys.stderr)
        return 130
    return 1 if (args.fail_on_findings and findings) or new_buckets else 0


# ---- nightly ------------------------------------------------------------------------------------


def cmd_nightly(args: argparse.Namespace) -> int:
    date = args.date or time.strftime("%Y-%m-%d", time.gmtime())
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise UsageError(f"bad date {date!r}: expected YYYY-MM-DD")
    suffix = "" if args.shard.count == 1 else f"-shard{args.shard.index}of{args.shard.count}"
    root = Path(args.root)
    out = root / f"{date}{suffix}"
    earlier = sorted(p for p in root.glob(f"????-??-??{suffix}") if p.name < out.name and (p / DB_NAME).exists())
    resume = (out / DB_NAME).exists()
    run_args = argparse.Namespace(
        targets=args.targets, target=None, seed=int(date.replace("-", "")), cases=None, budget=args.budget,
        shard=args.shard, jobs=args.jobs, timeout=args.timeout, out=str(out), resume=resume, force=False,
        format="md", fail_on_findings=False, baseline=str(earlier[-1]) if earlier else None,
        junit=str(out / "junit.xml"), quiet=args.quiet, reduce=True, reduce_tries=args.reduce_tries)
    print(f"layoutfuzz nightly: {out}" + (f", against {earlier[-1]}" if earlier else ", no earlier night to compare"),
          file=sys.stderr)
    status = cmd_run(run_args)
    from reports.history import record_night

    record_night(root, out.name, pass_rate_table(_open_store(str(out)).frame()))
    try:
        print(f"html: {write_html(out)}", file=sys.stderr)
    except ImportError:
        print("html: skipped (pictures need matplotlib: pip install 'layoutfuzz[report]')", file=sys.stderr)
    return status


# ---- reduce --------------------------------------------------------------------------------------


def cmd_reduce(args: argparse.Namespace) -> int:
    from harness.reduce import reduce_case

    case, spec, report, target = _valid_case(args)
    if not target.availability().available:
        raise UsageError(f"{target.name} cannot run here: {target.availability().reason}")
    with Runner(jobs=1, timeout_s=args.timeout) as runner:
        done = reduce_case(spec, target, case, runner, args.max_tries, progress=lambda line: print(line, file=sys.stderr))
    if done is None:
        print(f"{case.case_id} passes: nothing to reduce")
        return 1
    written = Path(args.write) if args.write else Path(f"{case.target}-{case.seed}-{case.index}.reduced.json")
    _save_reduction(done.reduced, written, Path(args.case) if report is not None else None)
    print(f"{done.outcome.value} ({done.signature or 'no signature'}) kept through {done.steps} shrinking step(s), "
          f"{done.tries} tries")
    print(f"original: {json.dumps(case.params)[:2000]}")
    print(f"reduced:  {json.dumps(done.reduced.params)[:2000]}")
    builtin = registry.BUILTIN.get(case.target) == spec
    print(f"reproduce: layoutfuzz reproduce {written}" + ("" if builtin else f" --target {spec}"))
    return 0


def _save_reduction(reduced: Case, case_file: Path, report_file: Path | None) -> None:
    """Writes the reduced case as a case file; a report keeps its original case and gains it."""
    write_atomically(case_file, json.dumps(reduced.to_dict(), indent=1, sort_keys=True) + "\n")
    if report_file is not None:
        report = json.loads(report_file.read_text())
        write_atomically(report_file, json.dumps({**report, "reduced_case": reduced.to_dict()}, indent=2, sort_keys=True) + "\n")


def reduce_representatives(store: Store, buckets, specs: dict[str, str], timeout: float, max_tries: int) -> list[str]:
    """Reduces each bucket's representative; its report gains ``reduced_case`` and a case file
    ``reports/NAME.reduced.json`` is written beside it. Returns the reduced cases' paths (or "")."""
    from harness.reduce import reduce_case

    paths = []
    with Runner(jobs=1, timeout_s=timeout) as runner:
        for row in buckets.itertuples():
            found = store.find(row.representative)
            spec = specs.get(row.target, row.target)
            if found is None or not found[1]:
                paths.append("")
                continue
            case, report_path = found
            done = reduce_case(spec, _load(spec), case, runner, max_tries)
            if done is None:  # it passed on this run: flaky, left as it was
                paths.append("")
                continue
            case_file = Path(report_path).with_suffix(".reduced.json")
            _save_reduction(done.reduced, case_file, Path(report_path))
            paths.append(str(case_file.relative_to(store.directory)))
    return paths


# ---- history ------------------------------------------------------------------------------------


def cmd_history(args: argparse.Namespace) -> int:
    from reports.history import HISTORY, pass_rates_over_time

    table = pass_rates_over_time(Path(args.root), args.families)
    if table.empty:
        raise UsageError(f"no nights recorded in {Path(args.root) / HISTORY}: run `layoutfuzz nightly --root {args.root}`")
    print(render(table, args.format))
    return 0


# ---- html ----------------------------------------------------------------------------------------


def write_html(directory: Path) -> Path:
    """``DIR/report.html``: tables, buckets and a picture of each representative, in one offline page."""
    from reports.pictures import html_report

    store = _open_store(str(directory))
    frame = store.frame()
    page = html_report(store.directory, render(pass_rate_table(frame), "html"), bucket_table(frame), f"layoutfuzz {directory}")
    path = store.directory / "report.html"
    write_atomically(path, page)
    return path


def cmd_html(args: argparse.Namespace) -> int:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("pictures need matplotlib: pip install 'layoutfuzz[report]'") from None
    print(write_html(Path(args.out)))
    return 0


# ---- selftest ------------------------------------------------------------------------------------


def cmd_selftest(args: argparse.Namespace) -> int:
    import pandas as pd

    from harness import selftest

    clean = selftest.baseline()
    broken = {name: n for name, n in clean.items() if n}
    if broken:
        print(f"layoutfuzz selftest: the unmutated oracles already disagree with the recorded truth: {broken}", file=sys.stderr)
        return 1
    verdicts = list(selftest.run())
    rows = [{"mutant": v.mutant.name, "planted fault": v.mutant.fault, "evidence": v.mutant.evidence,
             "caught": "yes" if v.caught else "NO", "how": v.how, "s": round(v.seconds, 2)} for v in verdicts]
    print(render(pd.DataFrame(rows), args.format))
    caught = sum(v.caught for v in verdicts)
    score = caught / len(verdicts)
    print(f"\nmutation score: {caught}/{len(verdicts)} = {100 * score:.1f}% (required: {100 * selftest.REQUIRED_SCORE:.0f}%)")
    for v in verdicts:
        if not v.caught:
            print(f"missed: {v.mutant.name}: {v.mutant.fault} (evidence {v.mutant.evidence})")
    return 0 if score >= selftest.REQUIRED_SCORE else 1


# ---- buckets and diff --------------------------------------------------------------------------


def _open_store(directory: str) -> Store:
    try:
        return Store(directory, create=False)
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def _diff_summary(changes) -> str:
    counts = changes["status"].value_counts()
    return ", ".join(f"{int(counts.get(s, 0))} {s}" for s in ("new", "persisting", "fixed")) + " bucket(s)"


def cmd_buckets(args: argparse.Namespace) -> int:
    buckets = bucket_table(_open_store(args.out).frame())
    print(render(buckets, args.format))
    print(f"{len(buckets)} distinct problem(s) in {int(buckets['cases'].sum()) if len(buckets) else 0} cases", file=sys.stderr)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    changes = diff_buckets(_open_store(args.baseline).frame(), _open_store(args.new).frame())
    if not changes.empty:
        print(render(changes, args.format))
    print(_diff_summary(changes), file=sys.stderr)
    return 1 if (changes["status"] == "new").any() else 0


# ---- reproduce --------------------------------------------------------------------------


def _case_from_argument(args: argparse.Namespace) -> tuple[Case, str | None, dict[str, Any] | None]:
    """The case named by a report/case file or a case id; its target spec; the original report."""
    path = Path(args.case)
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            report = data if "case" in data else None
            case = Case.from_dict(data["case"] if report else data)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path} is not a layoutfuzz report or case: {exc}") from None
        spec = args.target or (report or {}).get("target_spec") or case.target
        return case, spec, report
    key = parse_case_id(args.case)
    if key is None:
        raise UsageError(f"{args.case!r} is neither a file nor a case id TARGET/SEED/INDEX")
    target_name, seed, index = key
    spec = args.target or target_name
    if (Path(args.out) / DB_NAME).exists():
        store = Store(args.out, create=False)
        if not args.target:  # the campaign's own spec for this name
            campaign = [(s, _load(s)) for s in store.meta().get("targets", [])]
            spec = _specs_by_name(campaign).get(target_name, spec)
        found = store.find(args.case)
        if found:
            case, report_path = found
            report = json.loads(Path(report_path).read_text()) if report_path and Path(report_path).exists() else None
            return case, spec, report
    return make_case(_load(spec), seed, index), spec, None


def _valid_case(args: argparse.Namespace) -> tuple[Case, str, dict[str, Any] | None, Target]:
    """The case CASE names, its target spec (resolved), its report if any, and the loaded target;
    a case its target rejects is a usage error."""
    case, spec, report = _case_from_argument(args)
    target = _load(spec)
    try:
        target.validate(case)
    except ValueError as exc:
        raise UsageError(f"malformed case {case.case_id}: {exc}") from None
    return case, registry.resolve(spec), report, target


def cmd_reproduce(args: argparse.Namespace) -> int:
    case, spec, report, target = _valid_case(args)
    availability = target.availability()
    family = target.family(case)
    print(f"case {case.case_id} ({target.name}, family {family})")
    print(f"params: {json.dumps(case.params)[:2000]}")
    if not availability.available:
        result = Result(case, family, Outcome.UNSUPPORTED, availability.reason)
    else:
        results: list[Result] = []
        with Runner(jobs=1, timeout_s=args.timeout) as runner:
            runner.submit(spec, case, family)
            while runner.in_flight:
                results += runner.results()
        result = results[0]
    print(f"outcome: {result.outcome.value}")
    if result.detail:
        print(f"detail: {result.detail}")
    if result.outcome is Outcome.DIVERGE:
        print(f"{result.mismatch_count} mismatch(es); first:")
        for line in result.mismatches:
            print(f"  {line}")
    if args.verbose:
        print(f"expected: {json.dumps(result.expected)[:4000]}")
        print(f"observed: {json.dumps(result.observed)[:4000]}")
    if report is not None:
        same = report.get("outcome") == result.outcome.value
        print(f"reported outcome: {report.get('outcome')} -> {'reproduced' if same else 'NOT reproduced'}")
    return 0 if result.outcome is Outcome.PASS else 1


# ---- table, targets ---------------------------------------------------------------------


def cmd_table(args: argparse.Namespace) -> int:
    table = pass_rate_table(_open_store(args.out).frame())
    print(render(table, args.format))
    return 0


def cmd_targets(args: argparse.Namespace) -> int:
    rows = []
    for name, spec in registry.available_specs().items():
        try:
            target = registry.load(spec)
            availability = target.availability()
            status = "available" if availability.available else f"unsupported: {availability.reason}"
            rows.append((name, status, target.description))
        except registry.TargetNotFound as exc:
            rows.append((name, f"cannot load: {exc}", ""))
    width = max(len(r[0]) for r in rows)
    for name, status, description in rows:
        print(f"{name:<{width}}  {status}")
        if description:
            print(f"{'':<{width}}  {description}")
    return 0


# ---- entry point ------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: no usage dump, a pointer to --help."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _case_arguments(parser: argparse.ArgumentParser) -> None:
    """CASE and how to find and run it (reproduce, reduce)."""
    parser.add_argument("case", metavar="CASE")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"campaign directory to look case ids up in (default {DEFAULT_OUT})")
    parser.add_argument("--target", metavar="MODULE:ATTR", help="the target, if it is not a built-in or plug-in")
    parser.add_argument("--timeout", type=parse_duration, default=60.0, metavar="DURATION", help="per-run limit (60s)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="layoutfuzz",
        description="Differential testing of GPU tensor layouts: generated cases, an F2/PTX oracle, "
        "systems under test run in isolated workers, every divergence stored and reproducible.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a campaign and print its pass-rate table",
                         description="Run a campaign: generate cases for the targets, run each in an isolated "
                         "worker, store every outcome in OUT/layoutfuzz.sqlite and every non-pass as "
                         "OUT/reports/*.json, and print the pass-rate table (also OUT/table.{md,csv,html}).")
    run.add_argument("--targets", metavar="NAMES", help=f"comma-separated target names (default: {DEFAULT_TARGETS}); "
                     "see `layoutfuzz targets`")
    run.add_argument("--target", action="append", metavar="MODULE:ATTR", help="a third-party target (repeatable)")
    run.add_argument("--seed", type=int, default=0, help="campaign seed; (seed, index) fixes each case (default 0)")
    run.add_argument("--cases", type=positive_int, help="cases per target (indices 0..N-1, split by --shard)")
    run.add_argument("--budget", type=parse_duration, metavar="DURATION",
                     help=f"stop starting cases after this long, e.g. 60s, 5m (default {DEFAULT_BUDGET_S:g}s "
                     "unless --cases is given)")
    run.add_argument("--shard", type=shard_spec, default=Shard(), metavar="I/N",
                     help="run only part I of N (1-based): case indices = I-1 mod N")
    run.add_argument("--jobs", "-j", type=positive_int, default=os.cpu_count() or 1,
                     help="worker processes (default: one per core)")
    run.add_argument("--timeout", type=parse_duration, default=None, metavar="DURATION",
                     help="per-case time limit; a case past it is a timeout (default 30s, or the resumed campaign's)")
    run.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    run.add_argument("--resume", action="store_true",
                     help="continue the campaign in --out with its stored settings, skipping recorded cases")
    run.add_argument("--force", action="store_true", help="replace a campaign already in --out")
    run.add_argument("--format", choices=FORMATS, default="md", help="format of the printed table")
    run.add_argument("--fail-on-findings", action="store_true",
                     help="exit 1 if any case diverged, crashed, timed out or errored")
    run.add_argument("--baseline", metavar="DIR",
                     help="an earlier campaign's directory: print new, persisting and fixed buckets; exit 1 on new ones")
    run.add_argument("--reduce", action="store_true",
                     help="after the campaign, reduce each bucket's representative (its report gains reduced_case)")
    run.add_argument("--reduce-tries", type=positive_int, default=200, metavar="N", help="tries per reduction (200)")
    run.add_argument("--junit", metavar="FILE", help="also write JUnit XML: a test case per clean family and per bucket")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    run.set_defaults(func=cmd_run)

    nightly = sub.add_parser(
        "nightly", help="the nightly preset: a dated, seeded campaign diffed against the previous night",
        description="Run tonight's campaign in ROOT/DATE (seed = the date as YYYYMMDD, so every machine and shard "
        "draws the same cases), resume it if it exists, compare its buckets with the latest earlier night in ROOT, "
        "and write ROOT/DATE/junit.xml. Exit 1 when a bucket is new, 0 otherwise.")
    nightly.add_argument("--root", default="nightly", help="folder holding one campaign per night (default nightly)")
    nightly.add_argument("--date", default=None, help="the night, YYYY-MM-DD (default: today, UTC)")
    nightly.add_argument("--targets", metavar="NAMES", help="comma-separated target names (default: the CPU targets)")
    nightly.add_argument("--budget", type=parse_duration, default=600.0, metavar="DURATION",
                         help="campaign length (default 10m)")
    nightly.add_argument("--shard", type=shard_spec, default=Shard(), metavar="I/N", help="this job's part of the night")
    nightly.add_argument("--jobs", "-j", type=positive_int, default=os.cpu_count() or 1, help="worker processes")
    nightly.add_argument("--timeout", type=parse_duration, default=None, metavar="DURATION", help="per-case limit")
    nightly.add_argument("--reduce-tries", type=positive_int, default=200, metavar="N",
                         help="tries per bucket representative's reduction (default 200)")
    nightly.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    nightly.set_defaults(func=cmd_nightly)

    rep = sub.add_parser("reproduce", help="re-run one case and show expected vs observed",
                         description="Re-run one case in an isolated worker and show what the oracle and the "
                         "system under test say. CASE is a report (OUT/reports/*.json), a case JSON file, or a case "
                         "id TARGET/SEED/INDEX. Exit 0 if it passes, 1 if it still diverges (or crashes, ...).")
    _case_arguments(rep)
    rep.add_argument("--verbose", "-v", action="store_true", help="print expected and observed in full")
    rep.set_defaults(func=cmd_reproduce)

    red = sub.add_parser("reduce", help="shrink a failing case while it fails the same way",
                         description="Reduce a failing case (a report, a case file or TARGET/SEED/INDEX): drop list "
                         "elements and move integers towards 0 while the case keeps the same outcome and signature, "
                         "each try in an isolated worker. Writes the reduced case (reproducible with `layoutfuzz "
                         "reproduce FILE`); a report also gains it as `reduced_case`. Exit 0 when reduced, 1 when the "
                         "case passes, 2 on bad input.")
    _case_arguments(red)
    red.add_argument("--max-tries", type=positive_int, default=500, help="give up shrinking after this many tries")
    red.add_argument("--write", metavar="FILE", help="where the reduced case goes (default TARGET-SEED-INDEX.reduced.json)")
    red.set_defaults(func=cmd_reduce)

    history = sub.add_parser("history", help="pass rate over time: one column per night of `layoutfuzz nightly`",
                             description="Print the pass rate % of every target (with --families, every family) "
                             "for each night recorded in ROOT/history.sqlite, which `layoutfuzz nightly` updates.")
    history.add_argument("--root", default="nightly", help="the nightly folder (default nightly)")
    history.add_argument("--families", action="store_true", help="one row per family, not only per target")
    history.add_argument("--format", choices=FORMATS, default="md")
    history.set_defaults(func=cmd_history)

    html = sub.add_parser("html", help="write DIR/report.html: tables, buckets and a picture of each representative",
                          description="One offline HTML page of a campaign: the pass-rate table, the buckets, and a "
                          "PNG of each bucket's representative (holders per thread, swizzle grids, mismatches in red). "
                          "Needs matplotlib (the [report] extra).")
    html.add_argument("--out", default=DEFAULT_OUT, help=f"campaign directory (default {DEFAULT_OUT})")
    html.set_defaults(func=cmd_html)

    selftest = sub.add_parser(
        "selftest", help="plant faults in copies of the oracles and report how many the recorded truth catches",
        description="Mutation score of the harness: each mutant plants one fault (LBO and SBO swapped, a wrong base "
        "offset, an off-by-one swizzle phase, a wrong 96B table, ...) and replays the recorded hardware truth and the "
        "seeds' tables against it. Exit 0 when at least 95%% are caught, 1 otherwise (the misses are listed).")
    selftest.add_argument("--format", choices=FORMATS, default="md")
    selftest.set_defaults(func=cmd_selftest)

    buckets = sub.add_parser("buckets", help="print a campaign's distinct problems, with counts and a representative each")
    buckets.add_argument("--out", default=DEFAULT_OUT, help=f"campaign directory (default {DEFAULT_OUT})")
    buckets.add_argument("--format", choices=FORMATS, default="md")
    buckets.set_defaults(func=cmd_buckets)

    diff = sub.add_parser("diff", help="new, persisting and fixed buckets between two campaigns (exit 1 on new ones)",
                          description="Compare the buckets of two campaign directories. Exit status: 0 when "
                                      "nothing is new, 1 when NEW has a bucket BASELINE lacks, 2 on bad input.")
    diff.add_argument("baseline", help="the earlier campaign's directory")
    diff.add_argument("new", help="the later campaign's directory")
    diff.add_argument("--format", choices=FORMATS, default="md")
    diff.set_defaults(func=cmd_diff)

    table = sub.add_parser("table", help="print the pass-rate table of a campaign")
    table.add_argument("--out", default=DEFAULT_OUT, help=f"campaign directory (default {DEFAULT_OUT})")
    table.add_argument("--format", choices=FORMATS, default="md")
    table.set_defaults(func=cmd_table)

    targets = sub.add_parser("targets", help="list the targets and whether they can run here")
    targets.set_defaults(func=cmd_targets)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"layoutfuzz: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
