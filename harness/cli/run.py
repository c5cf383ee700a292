"""Commands on whole campaigns: ``run``, ``table``, ``html``, ``targets``, ``history`` and ``selftest``, their
parsers and their handlers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection
from pathlib import Path

import pandas as pd

from layoutfuzz.harness import registry
from layoutfuzz.harness.campaign import (
    DEFAULT_BUDGET_S,
    DEFAULT_TARGETS,
    CampaignSettings,
    UsageError,
    open_store,
    run_campaign,
)
from layoutfuzz.harness.cli.options import (
    add_budget,
    add_commands,
    add_format,
    add_jobs,
    add_out,
    add_quiet,
    add_reduce_tries,
    add_root,
    add_seed,
    add_shard,
    add_targets,
    add_timeout,
    output_file,
    parse_size,
    positive_int,
    target_argument,
    target_names,
)
from layoutfuzz.harness.cli.triage import campaign_root_causes, diff_summary, diff_view, write_buckets_file
from layoutfuzz.reports.buckets import diff_buckets
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.junit import junit_xml
from layoutfuzz.reports.ledger import DEFAULT_LEDGER
from layoutfuzz.reports.signatures import SANITIZER_TOOLS
from layoutfuzz.reports.tables import for_terminal, pass_rate_table, render
from layoutfuzz.reports.terminal import history_view, indented, root_causes, show

# ---- run --------------------------------------------------------------------------------


def campaign_settings(args: argparse.Namespace) -> CampaignSettings:
    """``run``'s options as the campaign's settings (built once, here; a resumed campaign refuses the options that
    would change it)."""
    named = target_names(args.targets)
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


def cmd_html(args: argparse.Namespace) -> int:
    from layoutfuzz.reports.html import write_html

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("pictures need matplotlib: pip install 'layoutfuzz[report]'") from None
    directory = Path(args.out)
    open_store(directory).close()  # a folder that holds no campaign is refused before the ledger is read
    print(write_html(directory, campaign_root_causes(directory, DEFAULT_LEDGER)))
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


# ---- parsers ----------------------------------------------------------------------------------------


def _add_run(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="run a campaign and print its pass-rate table",
                         description="Run a campaign: generate cases for the targets, run each in an isolated "
                         "worker, store every outcome in OUT/layoutfuzz.sqlite and every non-pass as "
                         "OUT/reports/*.json, and print the pass-rate table (also OUT/table.{md,csv,html}).")
    add_targets(run, help=f"comma-separated target names (default: {DEFAULT_TARGETS}); see `layoutfuzz targets`")
    run.add_argument("--target", action="append", type=target_argument, metavar="MODULE:ATTR",
                     help="a third-party target (repeatable)")
    run.add_argument("--sanitize", nargs="?", const="memcheck", choices=SANITIZER_TOOLS, metavar="TOOL",
                     help="run each target's system under test under compute-sanitizer (default tool memcheck; also "
                     "racecheck, initcheck, synccheck): an out-of-bounds access is a crash of the case that made it, "
                     "found by splitting batches; slow (a child process a batch; the per-case limit defaults to 10 "
                     "minutes). A target named NAME+memcheck is the same")
    add_seed(run, "campaign seed; (seed, index) fixes each case (default 0)", default=None)
    run.add_argument("--cases", type=positive_int, help="cases per target (indices 0..N-1, split by --shard)")
    add_budget(run, f"stop starting cases after this long, e.g. 60s, 5m (default {DEFAULT_BUDGET_S:g}s unless --cases "
               "is given)")
    add_shard(run, "run only part I of N (1-based): case indices = I-1 mod N")
    add_jobs(run, "worker processes (default: one per core)")
    add_timeout(run, "per-case time limit; a case past it is a timeout (default 30s, 10m with --sanitize, or the "
                "resumed campaign's)")
    run.add_argument("--batch", type=positive_int, default=None, metavar="N",
                     help="the most cases one worker call takes (default: each target's own limit, sized to about "
                     "0.1 s of work); 1 runs one case per call. A crash or hang costs only the case(s) that cause it "
                     "either way")
    run.add_argument("--memory-limit", type=parse_size, metavar="SIZE",
                     help="heap per worker, e.g. 4G (RLIMIT_DATA); a case past it is a crash with the reason "
                     "(default: none)")
    add_out(run, "output directory", writes=True)
    run.add_argument("--resume", action="store_true",
                     help="continue the campaign in --out with its stored settings, skipping recorded cases")
    run.add_argument("--force", action="store_true", help="replace a campaign already in --out")
    add_format(run, "format of the printed table")
    run.add_argument("--fail-on-findings", action="store_true",
                     help="exit 1 if any case diverged, crashed, timed out or errored")
    run.add_argument("--baseline", metavar="DIR",
                     help="an earlier campaign's directory: print new, persisting and fixed buckets; exit 1 on new ones")
    run.add_argument("--reduce", action="store_true",
                     help="after the campaign, reduce each bucket's representative (its report gains reduced_case)")
    add_reduce_tries(run, "tries per reduction (200)")
    run.add_argument("--junit", type=output_file, metavar="FILE",
                     help="also write JUnit XML: a test case per clean family and per bucket")
    add_quiet(run)
    run.set_defaults(func=cmd_run)


def _add_history(sub: argparse._SubParsersAction) -> None:
    history = sub.add_parser("history", help="pass rate over time: one column per night of `layoutfuzz nightly`",
                             description="Print the pass rate % of every target (with --families, every family) "
                             "for each night recorded in ROOT/history.sqlite, which `layoutfuzz nightly` updates.")
    add_root(history, "the nightly folder (default nightly)")
    history.add_argument("--families", action="store_true", help="one row per family, not only per target")
    add_format(history)
    history.set_defaults(func=cmd_history)


def _add_html(sub: argparse._SubParsersAction) -> None:
    html = sub.add_parser("html", help="write DIR/report.html: tables, buckets and a picture of each representative",
                          description="One offline HTML page of a campaign: the pass-rate table, the buckets, and a "
                          "PNG of each bucket's representative (holders per thread, swizzle grids, mismatches in red). "
                          "Needs matplotlib (the [report] extra).")
    add_out(html)
    html.set_defaults(func=cmd_html)


def _add_selftest(sub: argparse._SubParsersAction) -> None:
    selftest = sub.add_parser(
        "selftest", help="plant faults in copies of the oracles and report how many the recorded truth catches",
        description="Mutation score of the harness: each mutant plants one fault (LBO and SBO swapped, a wrong base "
        "offset, an off-by-one swizzle phase, a wrong 96B table, ...) and replays the recorded hardware truth and the "
        "seeds' tables against it. Then, as a campaign would, it buckets each planted fault's divergences by root "
        "cause and reduces one (the unmutated oracle, which reproduces every record, standing in for the hardware), "
        "and prints the number of buckets and the reduced case's size. Exit 0 when at least 95%% are caught and no "
        "fault lands in more than 2 buckets, 1 otherwise (the misses are listed).")
    add_format(selftest)
    selftest.add_argument("--no-spread", dest="spread", action="store_false",
                          help="skip bucketing and reducing each planted fault's divergences (about 1.5 min)")
    selftest.set_defaults(func=cmd_selftest)


def _add_table(sub: argparse._SubParsersAction) -> None:
    table = sub.add_parser("table", help="print the pass-rate table of a campaign")
    add_out(table)
    add_format(table)
    table.set_defaults(func=cmd_table)


def _add_targets(sub: argparse._SubParsersAction) -> None:
    targets = sub.add_parser("targets", help="list the targets and whether they can run here")
    targets.set_defaults(func=cmd_targets)


PARSERS = {"run": _add_run, "history": _add_history, "html": _add_html, "selftest": _add_selftest,
           "table": _add_table, "targets": _add_targets}


def add_parsers(sub: argparse._SubParsersAction, only: Collection[str] | None = None) -> None:
    """The parsers of run, history, html, selftest, table and targets (``only``: of those named)."""
    add_commands(sub, PARSERS, only)
