"""The ``layoutfuzz`` command line: the parser, and the commands on whole campaigns (run, table,
targets, history, html, selftest). Triage commands live in ``cli_triage``, case commands in
``cli_cases``, version commands in ``cli_versions``, the coverage report in ``cli_coverage``."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import pandas as pd

from layoutfuzz.harness import registry
from layoutfuzz.harness.campaign import (
    DEFAULT_BUDGET_S,
    DEFAULT_OUT,
    DEFAULT_TARGETS,
    CampaignSettings,
    UsageError,
    open_store,
    run_campaign,
)
from layoutfuzz.harness.cli_cases import cmd_reduce, cmd_reproduce
from layoutfuzz.harness.cli_coverage import add_coverage_parser
from layoutfuzz.harness.cli_paths import output_directory, output_file
from layoutfuzz.harness.cli_triage import (
    add_known_parser,
    campaign_root_causes,
    cmd_buckets,
    cmd_diff,
    cmd_nightly,
    diff_summary,
    diff_view,
    write_buckets_file,
)
from layoutfuzz.harness.cli_versions import add_version_parsers
from layoutfuzz.harness.runner import Shard
from layoutfuzz.reports.buckets import PROBLEMS, bucket_table, diff_buckets
from layoutfuzz.reports.junit import junit_xml
from layoutfuzz.reports.ledger import DEFAULT_LEDGER
from layoutfuzz.reports.schema import MAX_INT  # what SQLite stores as an INTEGER
from layoutfuzz.reports.store import write_atomically
from layoutfuzz.reports.tables import FORMATS, for_terminal, pass_rate_table, render
from layoutfuzz.reports.terminal import history_view, indented, root_causes, show


def parse_duration(text: str) -> float:
    """Seconds from '90', '90s', '5m', '1h' or '1h30m'."""
    match = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not text.strip() or not match or not any(match.groups()):
        raise argparse.ArgumentTypeError(f"bad duration {text!r}: use e.g. 90, 90s, 5m or 1h")
    h, m, s = (float(g) if g else 0.0 for g in match.groups())
    return h * 3600 + m * 60 + s




def parse_size(text: str) -> int:
    """Bytes from '512M', '4G', '1.5G' or a plain number of bytes (at least 64 MiB)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: use e.g. 512M or 4G")
    size = int(float(match[1]) * 1024 ** " KMGT".index(match[2].upper() or " "))
    if not 64 << 20 <= size <= MAX_INT:
        raise argparse.ArgumentTypeError(f"must be from 64M up: {text!r}")
    return size
MAX_JOBS = 1024


def parse_positive_duration(text: str) -> float:
    """A duration that is more than zero (a zero budget or timeout would run forever or never)."""
    seconds = parse_duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return seconds


def bounded_int(low: int, high: int, what: str = ""):
    """An argparse type: an integer in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}{what}: {text!r}")
        return value

    return parse


positive_int = bounded_int(1, MAX_INT)
job_count = bounded_int(1, MAX_JOBS, " worker processes")
seed_int = bounded_int(0, MAX_INT)


def target_argument(text: str) -> str:
    """A ``--target``: a target name, or a well-formed ``module:attr`` (checked before anything is imported)."""
    if ":" in text:
        try:
            registry.check_spec(text)
        except registry.TargetNotFound as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def shard_spec(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# ---- run --------------------------------------------------------------------------------


CAMPAIGN_FLAGS = {"targets": "--targets", "seed": "--seed", "shard": "--shard", "cases": "--cases",
                  "sanitize": "--sanitize", "memory_limit": "--memory-limit", "force": "--force"}


def settings_beside_resume(args: argparse.Namespace) -> list[str]:
    """The options given with ``--resume`` that would change the campaign it continues (a resumed campaign runs
    with its stored settings; ``--target MODULE:ATTR``, ``--budget``, ``--jobs`` and ``--timeout`` may be given)."""
    if not getattr(args, "resume", False):
        return []
    return [flag for key, flag in CAMPAIGN_FLAGS.items() if getattr(args, key, None) not in (None, False)]


def campaign_settings(args: argparse.Namespace) -> CampaignSettings:
    """``run``'s options as the campaign's settings (built once, here)."""
    beside = settings_beside_resume(args)
    if beside:
        raise UsageError(f"{', '.join(beside)} cannot change a resumed campaign (it runs with its stored settings): "
                         f"drop {'them' if len(beside) > 1 else 'it'}, or start a new campaign with another --out")
    named = [t.strip() for t in (args.targets or "").split(",") if t.strip()]
    if args.targets is not None and not named:
        raise UsageError(f"--targets {args.targets!r} names no target: give comma-separated names "
                         "(see `layoutfuzz targets`)")
    return CampaignSettings(
        out=args.out, targets=(*named, *(args.target or ())), seed=args.seed, shard=args.shard, cases=args.cases,
        budget=args.budget, jobs=args.jobs, timeout=args.timeout, memory_limit=args.memory_limit, batch=args.batch,
        sanitize=args.sanitize, reduce=args.reduce, reduce_tries=args.reduce_tries, resume=args.resume,
        force=args.force, quiet=args.quiet)


def resume_command(args: argparse.Namespace) -> str:
    """The command that continues the campaign ``args`` ran (``run``'s, or any command's ``--out``)."""
    if args.func is cmd_run:
        return campaign_settings(args).resume_command()
    return f"layoutfuzz run --out {args.out} --resume"


def cmd_run(args: argparse.Namespace) -> int:
    settings = campaign_settings(args)
    if args.baseline:  # a wrong baseline is an input error, found before the campaign runs
        open_store(args.baseline).close()
    campaign = run_campaign(settings)
    print(for_terminal(campaign.table, args.format))
    if campaign.side_by_side is not None and not campaign.side_by_side.empty:
        print("\nSystems side by side (the same cases; side-by-side.md):")
        print(show(campaign.side_by_side, args.format))
    buckets = campaign.buckets
    if not buckets.empty:
        print(f"\n{len(buckets)} distinct problem(s) in {int(buckets['cases'].sum())} cases, one per root cause "
              f"(buckets.md; known ones from {DEFAULT_LEDGER}):")
        causes = campaign_root_causes(campaign.directory, DEFAULT_LEDGER)
        write_buckets_file(campaign.directory, causes, buckets)
        print(root_causes(causes.drop(columns=["evidence", "reproducer"]), args.format, str(campaign.directory / "buckets.md")))
    new_buckets, known = 0, None
    if args.baseline:
        changes = diff_buckets(open_store(args.baseline).frame(), open_store(campaign.directory).frame())
        new_buckets = int((changes["status"] == "new").sum())
        known = set(changes.loc[changes["status"] != "new", "bucket"])
        print(f"\nagainst {args.baseline}: {diff_summary(changes)}")
        if not changes.empty:
            print(diff_view(changes, args.format))
    if args.junit:
        write_atomically(Path(args.junit), junit_xml(campaign.table, buckets, known, f"layoutfuzz {campaign.directory}"))
    print(f"\n{campaign.summary()}", file=sys.stderr)
    if campaign.findings:
        print(f"reports: {campaign.directory / 'reports'}", file=sys.stderr)
    if campaign.interrupted:
        print(f"interrupted; continue with: {resume_command(args)}", file=sys.stderr)
        return 130
    return 1 if (args.fail_on_findings and campaign.findings) or new_buckets else 0


# ---- history ------------------------------------------------------------------------------------


def cmd_history(args: argparse.Namespace) -> int:
    import sqlite3

    from layoutfuzz.reports.history import HISTORY, pass_rates_over_time

    try:
        table = pass_rates_over_time(Path(args.root), args.families)
    except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
        raise UsageError(f"{Path(args.root) / HISTORY} is not a layoutfuzz history database: {exc}") from None
    if table.empty:
        raise UsageError(f"no nights recorded in {Path(args.root) / HISTORY}: run `layoutfuzz nightly --root {args.root}`")
    print(history_view(table, args.format))
    return 0


# ---- html ----------------------------------------------------------------------------------------


def write_html(directory: Path, root_causes: pd.DataFrame | None = None, table: pd.DataFrame | None = None) -> Path:
    """``DIR/report.html``: each root cause with its status, attribution and a picture of its reduced case, then
    the pass-rate table folded (``table`` where the campaign has just computed it: counting is a scan of every
    row), in one offline page."""
    from layoutfuzz.reports.pictures import html_report

    store = open_store(directory)
    problems = store.frame(PROBLEMS)
    if table is None:
        table = pass_rate_table(store.counts(), store.metric_rows())
    store.close()
    if root_causes is None:
        root_causes = campaign_root_causes(Path(directory), DEFAULT_LEDGER)
    reports = dict(zip(*[bucket_table(problems)[c] for c in ("bucket", "report")]))
    page = html_report(Path(directory), render(table, "html"), root_causes, reports, f"layoutfuzz {directory}")
    path = Path(directory) / "report.html"
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

    from layoutfuzz.harness import selftest

    clean = selftest.baseline()
    broken = {name: n for name, n in clean.items() if n}
    if broken:
        print(f"layoutfuzz selftest: the unmutated oracles already disagree with the recorded truth: {broken}", file=sys.stderr)
        return 1
    verdicts = list(selftest.run())
    spreads = {v.mutant.name: selftest.spread(v.mutant) for v in verdicts} if args.spread else {}
    rows = []
    for v in verdicts:
        row = {"mutant": v.mutant.name, "planted fault": v.mutant.fault, "evidence": v.mutant.evidence,
               "caught": "yes" if v.caught else "NO", "how": v.how, "s": round(v.seconds, 2)}
        if v.mutant.name in spreads:
            spread = spreads[v.mutant.name]
            cases = spread.original_chars is not None  # table evidence (seed 004) has no cases to bucket
            row.update({"divergences": spread.divergences if cases else "-", "buckets": len(spread.buckets) if cases else "-",
                        "reduced case (chars)": f"{spread.original_chars} -> {spread.reduced_chars}" if cases else "-"})
        rows.append(row)
    print(render(pd.DataFrame(rows), args.format))
    caught = sum(v.caught for v in verdicts)
    score = caught / len(verdicts)
    print(f"\nmutation score: {caught}/{len(verdicts)} = {100 * score:.1f}% (required: {100 * selftest.REQUIRED_SCORE:.0f}%)")
    for v in verdicts:
        if not v.caught:
            print(f"missed: {v.mutant.name}: {v.mutant.fault} (evidence {v.mutant.evidence})")
    spread_out = [name for name, s in spreads.items() if len(s.buckets) > selftest.MAX_BUCKETS]
    if spreads:
        widest = max(len(s.buckets) for s in spreads.values())
        print(f"buckets per planted fault: at most {widest} (allowed: {selftest.MAX_BUCKETS})")
    for name in spread_out:
        print(f"spread: {name} lands in {len(spreads[name].buckets)} buckets: {'; '.join(spreads[name].buckets)}")
    if spread_out:
        return 1
    return 0 if score >= selftest.REQUIRED_SCORE else 1



# ---- table, targets ---------------------------------------------------------------------


def cmd_table(args: argparse.Namespace) -> int:
    store = open_store(args.out)
    table = pass_rate_table(store.counts(), store.metric_rows())
    print(for_terminal(table, args.format))
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
        print(indented(f"{name:<{width}}  {status}", width + 2))
        if description:
            print(indented(f"{'':<{width}}  {description}", width + 2))
    return 0


# ---- entry point ------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: no usage dump, a pointer to --help."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _case_arguments(parser: argparse.ArgumentParser) -> None:
    """CASE and how to find and run it (reproduce, reduce)."""
    parser.add_argument("case", metavar="CASE")
    parser.add_argument("--out", type=output_directory, default=DEFAULT_OUT,
                        help=f"campaign directory to look case ids up in (default {DEFAULT_OUT})")
    parser.add_argument("--target", type=target_argument, metavar="MODULE:ATTR",
                        help="the target, if it is not a built-in or plug-in")
    parser.add_argument("--timeout", type=parse_positive_duration, default=60.0, metavar="DURATION", help="per-run limit (60s)")


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
    run.add_argument("--target", action="append", type=target_argument, metavar="MODULE:ATTR",
                     help="a third-party target (repeatable)")
    run.add_argument("--sanitize", nargs="?", const="memcheck", choices=registry.SANITIZER_TOOLS, metavar="TOOL",
                     help="run each target's system under test under compute-sanitizer (default tool memcheck; also "
                     "racecheck, initcheck, synccheck): an out-of-bounds access is a crash of the case that made it, "
                     "found by splitting batches; slow (a child process a batch; the per-case limit defaults to 10 minutes). A target "
                     "named NAME+memcheck is the same")
    run.add_argument("--seed", type=seed_int, help="campaign seed; (seed, index) fixes each case (default 0)")
    run.add_argument("--cases", type=positive_int, help="cases per target (indices 0..N-1, split by --shard)")
    run.add_argument("--budget", type=parse_positive_duration, metavar="DURATION",
                     help=f"stop starting cases after this long, e.g. 60s, 5m (default {DEFAULT_BUDGET_S:g}s "
                     "unless --cases is given)")
    run.add_argument("--shard", type=shard_spec, metavar="I/N",
                     help="run only part I of N (1-based): case indices = I-1 mod N")
    run.add_argument("--jobs", "-j", type=job_count, default=os.cpu_count() or 1,
                     help="worker processes (default: one per core)")
    run.add_argument("--timeout", type=parse_positive_duration, default=None, metavar="DURATION",
                     help="per-case time limit; a case past it is a timeout (default 30s, 10m with --sanitize, or the resumed "
                     "campaign's)")
    run.add_argument("--batch", type=positive_int, default=None, metavar="N",
                     help="the most cases one worker call takes (default: each target's own limit, sized to about 0.1 s "
                          "of work); 1 runs one case per call. A crash or hang costs only the case(s) that cause it either way")
    run.add_argument("--memory-limit", type=parse_size, metavar="SIZE",
                     help="heap per worker, e.g. 4G (RLIMIT_DATA); a case past it is a crash with the reason (default: none)")
    run.add_argument("--out", type=output_directory, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
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
    run.add_argument("--junit", type=output_file, metavar="FILE", help="also write JUnit XML: a test case per clean family and per bucket")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    run.set_defaults(func=cmd_run)

    nightly = sub.add_parser(
        "nightly", help="the nightly: replay open root causes, run a dated campaign, reduce, judge new/known/fixed",
        description="Tonight's triage in ROOT/DATE. First re-run the stored reproducer of every open root cause of "
        "the root (a root cause is fixed only when its reproducer passes tonight); then run tonight's campaign "
        "(seed = the date as YYYYMMDD, so every machine and shard draws the same cases; resumed if it exists), "
        "reduce each bucket's representative, and judge each root cause against every earlier night of the root "
        "(ROOT/history.sqlite) and the ledger (--known): new, regressed, persisting, known or fixed. Writes "
        "ROOT/DATE/root-causes.md, junit.xml and report.html, and ROOT/reproducers/BUCKET.json. Exit 1 when a root "
        "cause is new or regressed, 0 otherwise (a known or persisting one never fails the night).")
    nightly.add_argument("--root", type=output_directory, default="nightly", help="folder holding one campaign per night (default nightly)")
    nightly.add_argument("--date", default=None, help="the night, YYYY-MM-DD (default: today, UTC)")
    nightly.add_argument("--targets", metavar="NAMES", help="comma-separated target names (default: the CPU targets)")
    nightly.add_argument("--budget", type=parse_positive_duration, default=600.0, metavar="DURATION",
                         help="campaign length (default 10m)")
    nightly.add_argument("--shard", type=shard_spec, default=Shard(), metavar="I/N", help="this job's part of the night")
    nightly.add_argument("--jobs", "-j", type=job_count, default=os.cpu_count() or 1, help="worker processes")
    nightly.add_argument("--timeout", type=parse_positive_duration, default=None, metavar="DURATION", help="per-case limit")
    nightly.add_argument("--reduce-tries", type=positive_int, default=200, metavar="N",
                         help="tries per bucket representative's reduction (default 200)")
    nightly.add_argument("--known", type=output_file, default=DEFAULT_LEDGER, metavar="FILE",
                         help=f"the ledger of known problems (default {DEFAULT_LEDGER}; absent: none)")
    nightly.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    nightly.add_argument("--verbose", "-v", action="store_true",
                         help="also print the per-family pass-rate table and every root cause (always in ROOT/DATE's files)")
    nightly.set_defaults(func=cmd_nightly)

    rep = sub.add_parser("reproduce", help="re-run one case and show expected vs observed",
                         description="Re-run one case in an isolated worker and show what the oracle and the "
                         "system under test say. CASE is a report (OUT/reports/*.json), a case JSON file, or a case "
                         "id TARGET/SEED/INDEX. Exit 0 if it passes, 1 if it still diverges (or crashes, ...).")
    _case_arguments(rep)
    rep.add_argument("--verbose", "-v", action="store_true", help="print expected and observed in full")
    rep.add_argument("--json", type=output_file, metavar="FILE", help="also write the verdict as JSON: outcome, root-cause signature, bucket, versions")
    rep.set_defaults(func=cmd_reproduce)

    red = sub.add_parser("reduce", help="shrink a failing case while it fails the same way",
                         description="Reduce a failing case (a report, a case file or TARGET/SEED/INDEX) while it keeps "
                         "the same outcome and root-cause signature: first the target's own shrinks (drop a basis "
                         "vector, halve a dimension, fewer warps, a narrower element), then generic edits, each kept "
                         "only if the target's validation (the generators' rules) accepts it, each try in an isolated "
                         "worker, until no single shrink fails the same way. Writes the reduced case beside its report "
                         "or case file (or in OUT/reports/), which `layoutfuzz reproduce FILE` replays; a report gains "
                         "it as `reduced_case`. Exit 0 when reduced, 1 when the case passes, 2 on bad input.")
    _case_arguments(red)
    red.add_argument("--max-tries", type=positive_int, default=500, help="give up shrinking after this many tries")
    red.add_argument("--jobs", "-j", type=job_count, default=os.cpu_count() or 1,
                     help="candidates tried at once, each in its own worker (default: one per core)")
    red.add_argument("--write", type=output_file, metavar="FILE", help="where the reduced case goes (default: beside its report or case file, NAME.reduced.json)")
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
        "seeds' tables against it. Then, as a campaign would, it buckets each planted fault's divergences by root "
        "cause and reduces one (the unmutated oracle, which reproduces every record, standing in for the hardware), "
        "and prints the number of buckets and the reduced case's size. Exit 0 when at least 95%% are caught and no "
        "fault lands in more than 2 buckets, 1 otherwise (the misses are listed).")
    selftest.add_argument("--format", choices=FORMATS, default="md")
    selftest.add_argument("--no-spread", dest="spread", action="store_false",
                          help="skip bucketing and reducing each planted fault's divergences (about 1.5 min)")
    selftest.set_defaults(func=cmd_selftest)

    buckets = sub.add_parser(
        "buckets", help="print a campaign's root causes: status, attribution, count, families, reproducer",
        description="One row per root cause of a campaign (a bucket: target, outcome and root-cause signature, "
        "whatever the families): its status (new, regressed, persisting, known, fixed where the campaign is a night "
        "of a nightly root; else open, or the ledger's word), who is responsible, how many cases, which families, "
        "when first and last seen, and the (reduced) case with the command that replays it.")
    buckets.add_argument("--out", default=DEFAULT_OUT, help=f"campaign directory (default {DEFAULT_OUT})")
    buckets.add_argument("--known", type=output_file, default=DEFAULT_LEDGER, metavar="FILE", help=f"the ledger (default {DEFAULT_LEDGER})")
    buckets.add_argument("--format", choices=FORMATS, default="md")
    buckets.set_defaults(func=cmd_buckets)

    diff = sub.add_parser("diff", help="new, persisting and fixed buckets between two campaigns (exit 1 on new ones)",
                          description="Compare the buckets of two campaign directories. Exit status: 0 when "
                                      "nothing is new, 1 when NEW has a bucket BASELINE lacks, 2 on bad input.")
    diff.add_argument("baseline", help="the earlier campaign's directory")
    diff.add_argument("new", help="the later campaign's directory")
    diff.add_argument("--format", choices=FORMATS, default="md")
    diff.set_defaults(func=cmd_diff)

    add_known_parser(sub)
    add_version_parsers(sub, parse_positive_duration, positive_int, job_count, seed_int)
    add_coverage_parser(sub, bounded_int(1, 10_000_000), seed_int)

    table = sub.add_parser("table", help="print the pass-rate table of a campaign")
    table.add_argument("--out", default=DEFAULT_OUT, help=f"campaign directory (default {DEFAULT_OUT})")
    table.add_argument("--format", choices=FORMATS, default="md")
    table.set_defaults(func=cmd_table)

    targets = sub.add_parser("targets", help="list the targets and whether they can run here")
    targets.set_defaults(func=cmd_targets)
    return parser


def main(argv: list[str] | None = None) -> int:
    import sqlite3

    from layoutfuzz.harness.trust import UntrustedTarget
    from layoutfuzz.reports.ledger import LedgerError
    from layoutfuzz.reports.schema import SchemaError
    from layoutfuzz.reports.store import StoreError, ignore_file_size_signal, out_of_room
    from layoutfuzz.reports.triage import TriageError

    args = build_parser().parse_args(argv)
    ignore_file_size_signal()
    try:
        return args.func(args)
    except KeyboardInterrupt:  # what was recorded is kept; a campaign says how to continue it
        hint = f": continue with {resume_command(args)}" if args.func is cmd_run and getattr(args, "out", None) else ""
        print(f"layoutfuzz: interrupted{hint}", file=sys.stderr)
        return 130
    except (UsageError, UntrustedTarget, SchemaError, StoreError, TriageError, LedgerError) as exc:  # bad input, or data that is not what it claims
        print(f"layoutfuzz: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.OperationalError) as exc:  # out of disk or past the file size limit: what was recorded is kept
        room = out_of_room(exc)
        if room is None:
            raise
        print(f"layoutfuzz: error: {room[0]} ({exc}); what was recorded is kept: {room[1]}, then run "
              f"the same command again" + (f" (for a campaign: {resume_command(args)})" if getattr(args, "out", None) else ""), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
