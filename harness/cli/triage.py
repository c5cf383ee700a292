"""Triage commands: ``nightly`` (replay, explore, reduce, judge), ``buckets`` (a campaign's root
causes), ``diff`` (two campaigns' buckets) and ``known`` (the ledger of known problems), their parsers and their
handlers."""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

import pandas as pd

from layoutfuzz.harness.campaign import (
    UsageError,
    campaign_targets,
    open_store,
    reduced_path,
    replay_command,
)
from layoutfuzz.harness.cli.options import (
    add_budget,
    add_commands,
    add_format,
    add_jobs,
    add_known,
    add_out,
    add_quiet,
    add_reduce_tries,
    add_root,
    add_shard,
    add_targets,
    add_timeout,
    add_verbose,
    directory_problem,
    target_names,
)
from layoutfuzz.harness.nightly import REPRODUCERS, NightSettings, root_cause_table, run_night
from layoutfuzz.harness.runner import Shard
from layoutfuzz.reports import ledger as ledger_file
from layoutfuzz.reports import schema
from layoutfuzz.reports.attribution import attribute
from layoutfuzz.reports.buckets import DIFF_STATUSES, bucket_table, diff_buckets
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.junit import junit_xml
from layoutfuzz.reports.outcome import PARTIES
from layoutfuzz.reports.store import DB_NAME
from layoutfuzz.reports.tables import for_terminal, render
from layoutfuzz.reports.terminal import night_report, root_causes, show
from layoutfuzz.reports.triage import Triage, TriageError, night_replays


def _night(text: str | None) -> str:
    """The night's date, YYYY-MM-DD (default: today, UTC)."""
    date = text or time.strftime("%Y-%m-%d", time.gmtime())
    try:
        if len(date) == 10:
            return datetime.date.fromisoformat(date).isoformat()
    except ValueError:
        pass
    raise UsageError(f"bad date {date!r}: expected YYYY-MM-DD")


def _check_root(root: Path, out: Path) -> None:
    """What a night writes into its root, checked before it runs: tonight's folder, the reproducers' folder and the
    history database's tables (each is written only after the campaign)."""
    from layoutfuzz.reports import history, triage

    problem = directory_problem(out) or directory_problem(root / REPRODUCERS)
    if problem:
        raise UsageError(f"nightly root {root}: {problem}")
    folder = root / REPRODUCERS
    strays = sorted(p.name for p in folder.glob("*.json") if not p.is_file()) if folder.is_dir() else []
    if strays:  # ROOT/reproducers/BUCKET.json is rewritten after the campaign
        raise UsageError(f"nightly root {root}: {folder / strays[0]} is not a file, where a reproducer goes: move it away")
    try:
        history.check_tables(root, triage.SCHEMA)
    except history.HistoryError as exc:
        raise UsageError(str(exc)) from None


def night_settings(args: argparse.Namespace) -> NightSettings:
    """``nightly``'s options as the night's settings (built once, here)."""
    return NightSettings(night=_night(args.date), root=Path(args.root), targets=target_names(args.targets),
                         budget=args.budget, shard=args.shard, jobs=args.jobs, timeout=args.timeout,
                         reduce_tries=args.reduce_tries, known=args.known, quiet=args.quiet)


def cmd_nightly(args: argparse.Namespace) -> int:
    from layoutfuzz.reports.history import record_night
    from layoutfuzz.reports.html import write_html

    settings = night_settings(args)
    night, out = settings.night, settings.out
    _check_root(settings.root, out)
    campaign_settings = settings.campaign()  # the same night again continues it
    print(f"layoutfuzz nightly: {out} (root {args.root}, ledger {args.known})", file=sys.stderr)
    result = run_night(settings, campaign_settings)
    campaign, table = result.campaign, result.verdicts
    failing = result.failing
    print(night_report(night, campaign.table, table, failing, str(out)))
    if args.verbose:
        print(f"\n{for_terminal(campaign.table, 'md')}")
        if not table.empty:
            print(f"\n{root_causes(table.drop(columns=['evidence', 'reproducer']), 'md', str(out / 'root-causes.md'))}")
    write_buckets_file(out, table, campaign.buckets)
    known = set(campaign.buckets["bucket"]) - set(failing["bucket"])
    write_atomically(out / "junit.xml", junit_xml(campaign.table, campaign.buckets, known, f"layoutfuzz nightly {night}"))
    record_night(settings.root, out.name, campaign.table)
    try:
        print(f"html: {write_html(out, table, campaign.table)}", file=sys.stderr)
    except ImportError:
        print("html: skipped (pictures need matplotlib: pip install 'layoutfuzz[report]')", file=sys.stderr)
    print(campaign.summary(), file=sys.stderr)
    if campaign.interrupted:
        print(f"interrupted; run the same command again to continue {out}", file=sys.stderr)
        return 130
    return 1 if not failing.empty else 0


# ---- buckets --------------------------------------------------------------------------------


def campaign_root_causes(directory: Path, known_path: str) -> pd.DataFrame:
    """A campaign's root causes: with their nightly verdicts where the campaign is a night of a
    root (``DIR/../history.sqlite``), else "open" (or the ledger's word)."""
    try:
        known = ledger_file.load(known_path)
    except ledger_file.LedgerError as exc:
        raise UsageError(str(exc)) from None
    store = open_store(directory)
    try:
        buckets = bucket_table(store.frame())
        loaded = campaign_targets(store)
    finally:
        store.close()
    targets = {name: target for name, (_, target) in loaded.items()}
    root = directory.resolve().parent
    if (root / "history.sqlite").exists():
        try:
            triage = Triage(root)
            verdicts = triage.table(directory.name[:10])
            triage.close()
        except (TriageError, pd.errors.DatabaseError):
            verdicts = pd.DataFrame()
        if not verdicts.empty:
            return root_cause_table(verdicts, known, root, targets)
    rows = []
    for b in buckets.itertuples():
        problem = known.get(b.bucket)
        blame = attribute(targets.get(b.target), b.outcome, b.signature, problem)
        reduced = reduced_path(schema.report_path(directory, b.report)) if b.report else None
        if reduced is not None and reduced.exists():
            reproducer, replay = f"reduced {reduced}", replay_command(reduced, b.target, loaded.get(b.target, (b.target,))[0])
        else:
            reproducer, replay = b.representative, f"layoutfuzz reproduce {b.representative} --out {directory}"
        rows.append({"status": f"known: {problem.status}" if problem else "open", "bucket": b.bucket, "target": b.target,
                     "outcome": b.outcome, "signature": b.signature, "attribution": str(blame), "cases": b.cases,
                     "families": b.families, "reproducer": reproducer, "replay": replay, "evidence": blame.evidence})
    return pd.DataFrame(rows)


def write_buckets_file(directory: Path, causes: pd.DataFrame, buckets: pd.DataFrame) -> Path:
    """``DIR/buckets.md``: every column of the root causes a terminal shows cut down (status, replay command,
    evidence, ...) and each bucket's representative case."""
    table = causes.copy()
    if not table.empty and not buckets.empty:
        table["representative"] = table["bucket"].map(dict(zip(buckets["bucket"], buckets["representative"])))
    path = Path(directory) / "buckets.md"
    write_atomically(path, render(table, "md") + "\n")
    return path


def cmd_buckets(args: argparse.Namespace) -> int:
    table = campaign_root_causes(Path(args.out), args.known)
    if table.empty:
        print("no problems: every case passed (or was unsupported)", file=sys.stderr)
        return 0
    shown = table if args.format == "csv" else table.drop(columns=["evidence"], errors="ignore")  # the key stays: `known add` takes it
    print(root_causes(shown, args.format, "`layoutfuzz buckets --format csv`"))
    print(f"{len(table)} root cause(s) in {int(table['cases'].sum())} cases", file=sys.stderr)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    changes = diff_buckets(open_store(args.baseline).frame(), open_store(args.new).frame(), night_replays(args.new))
    if not changes.empty:
        print(diff_view(changes, args.format))
    print(diff_summary(changes), file=sys.stderr)
    return 1 if (changes["status"] == "new").any() else 0


def diff_view(changes: pd.DataFrame, fmt: str) -> str:
    """Two campaigns' buckets as a terminal shows them (families and representatives go first where the
    line is too long; ``--format csv`` has every column)."""
    columns = ["status", "bucket", "target", "outcome", "baseline cases", "new cases", "signature", "families", "representative"]
    return show(changes if fmt != "md" else changes[columns], fmt, drop=["families", "representative"], keep=columns[:4])


def diff_summary(changes: pd.DataFrame) -> str:
    counts = changes["status"].value_counts()
    return ", ".join(f"{int(counts.get(s, 0))} {s}" for s in DIFF_STATUSES) + " bucket(s)"


# ---- known ----------------------------------------------------------------------------------


def _find_bucket(bucket: str, out: str, root: str) -> tuple[str, str, str]:
    """(target, outcome, signature) of a bucket key, from a campaign or the nightly root."""
    if (Path(root) / "history.sqlite").exists():
        try:
            triage = Triage(root)
            cause = triage.causes().get(bucket)
            triage.close()
        except TriageError as exc:
            raise UsageError(str(exc)) from None
        if cause is not None:
            return cause.target, cause.outcome, cause.signature
    if (Path(out) / DB_NAME).exists():
        store = open_store(out)
        try:
            row = store.db.execute("SELECT target, outcome, signature FROM outcomes WHERE bucket = ? LIMIT 1", (bucket,)).fetchone()
        finally:
            store.close()
        if row is not None:
            return row
    raise UsageError(f"no bucket {bucket!r} in {out} or in the nightly root {root} (see `layoutfuzz buckets`)")


def cmd_known_add(args: argparse.Namespace) -> int:
    try:
        current = ledger_file.load(args.known).get(args.bucket)  # a malformed ledger is refused before anything else
    except ledger_file.LedgerError as exc:
        raise UsageError(str(exc)) from None
    target, outcome, signature = _find_bucket(args.bucket, args.out, args.root)
    given = {k: v for k, v in (("title", args.title), ("status", args.status), ("attribution", args.attribution),
                               ("layer", args.layer), ("link", args.link), ("note", args.note)) if v is not None}
    if current is None and not args.title:
        raise UsageError("a new known problem needs --title")
    fields = {**(vars(current) if current else {}), **given, "target": target, "outcome": outcome, "signature": signature}
    try:
        problem = ledger_file.entry(fields, "the new entry")
    except ledger_file.LedgerError as exc:
        raise UsageError(str(exc)) from None
    new = ledger_file.add(args.known, problem)
    print(f"{'added' if new else 'updated'} {problem.bucket} in {args.known}: {problem.title} [{problem.status}; {problem.attribution}]")
    return 0


REPORTED = "open upstream"  # the ledger's status of a problem filed upstream and not fixed yet


def cmd_known_report(args: argparse.Namespace) -> int:
    """Records that a ledger entry was filed upstream: its status becomes open upstream, its link the issue."""
    try:
        current = ledger_file.load(args.known).get(args.bucket)
    except ledger_file.LedgerError as exc:
        raise UsageError(str(exc)) from None
    if current is None:
        raise UsageError(f"no entry {args.bucket!r} in {args.known} (see `layoutfuzz known list`)")
    if not args.link.startswith(("https://", "http://")):
        raise UsageError(f"--link {args.link!r} is not an http(s) URL")
    ledger_file.add(args.known, replace(current, status=REPORTED, link=args.link))
    print(f"reported {current.bucket} in {args.known}: {current.title[:100]} [{REPORTED}; {args.link}]")
    return 0


def root_cause_counts(problems: Collection[ledger_file.KnownProblem]) -> str:
    """Root causes per system (the target's prefix) and status, one line each."""
    counts: dict[str, dict[str, int]] = {}
    for p in problems:
        per_status = counts.setdefault(p.target.split(".")[0], {})
        per_status[p.status] = per_status.get(p.status, 0) + 1
    return "\n".join(f"{system}: {sum(c.values())} root cause(s): " + ", ".join(f"{n} {s}" for s, n in sorted(c.items()))
                     for system, c in sorted(counts.items()))


def cmd_known_list(args: argparse.Namespace) -> int:
    try:
        known = ledger_file.load(args.known)
    except ledger_file.LedgerError as exc:
        raise UsageError(str(exc)) from None
    if not known:
        print(f"no known problems in {args.known}", file=sys.stderr)
        return 0
    history = {}
    if (Path(args.root) / "history.sqlite").exists():
        triage = Triage(args.root)
        history = {r.bucket: r for r in triage.table().itertuples()}
        triage.close()
    rows = []
    for p in dict.fromkeys(known.values()):  # one row per root cause, its variants' nights included
        bucket = p.bucket
        h = next((history[b] for b in p.buckets if b in history), None)
        rows.append({"bucket": bucket, "title": p.title, "status": p.status, "attribution": p.attribution + (f" ({p.layer})" if p.layer else ""),
                     "target": p.target, "outcome": p.outcome, "signature": p.signature, "link": p.link,
                     "first seen": f"{h.first_night} ({h.first_version})" if h is not None else "",
                     "last seen": f"{h.last_night} ({h.last_version})" if h is not None else "",
                     "last verdict": h.status if h is not None else ""})
    columns = ["bucket", "status", "target", "title", "last seen", "last verdict", "outcome", "signature", "attribution",
               "first seen", "link"]  # the ledger has every field in full; so has --format csv
    listed = pd.DataFrame(rows)
    if args.format == "md":  # no history: no first or last seen, no verdict
        listed = listed[[c for c in columns if (listed[c] != "").any() or c in columns[:4]]]
    print(show(listed, args.format, drop=[*columns[6:][::-1], "last verdict"], keep=columns[:3]))
    print(root_cause_counts(list(dict.fromkeys(known.values()))), file=sys.stderr)
    return 0


# ---- parsers ----------------------------------------------------------------------------------------


def _add_nightly(sub: argparse._SubParsersAction) -> None:
    nightly = sub.add_parser(
        "nightly", help="the nightly: replay open root causes, run a dated campaign, reduce, judge new/known/fixed",
        description="Tonight's triage in ROOT/DATE. First re-run the stored reproducer of every open root cause of "
        "the root (a root cause is fixed only when its reproducer passes tonight); then run tonight's campaign "
        "(seed = the date as YYYYMMDD, so every machine and shard draws the same cases; resumed if it exists), "
        "reduce each bucket's representative, and judge each root cause against every earlier night of the root "
        "(ROOT/history.sqlite) and the ledger (--known): new, regressed, persisting, known or fixed. Writes "
        "ROOT/DATE/root-causes.md, junit.xml and report.html, and ROOT/reproducers/BUCKET.json. Exit 1 when a root "
        "cause is new or regressed, 0 otherwise (a known or persisting one never fails the night).")
    add_root(nightly, "folder holding one campaign per night (default nightly)", writes=True)
    nightly.add_argument("--date", default=None, help="the night, YYYY-MM-DD (default: today, UTC)")
    add_targets(nightly)
    add_budget(nightly, "campaign length (default 10m)", default=600.0)
    add_shard(nightly, "this job's part of the night", default=Shard())
    add_jobs(nightly, "worker processes")
    add_timeout(nightly, "per-case limit")
    add_reduce_tries(nightly, "tries per bucket representative's reduction (default 200)")
    add_known(nightly, "the ledger of known problems", note="; absent: none")
    add_quiet(nightly)
    add_verbose(nightly, "also print the per-family pass-rate table and every root cause (always in ROOT/DATE's files)")
    nightly.set_defaults(func=cmd_nightly)


def _add_buckets(sub: argparse._SubParsersAction) -> None:
    buckets = sub.add_parser(
        "buckets", help="print a campaign's root causes: status, attribution, count, families, reproducer",
        description="One row per root cause of a campaign (a bucket: target, outcome and root-cause signature, "
        "whatever the families): its status (new, regressed, persisting, known, fixed where the campaign is a night "
        "of a nightly root; else open, or the ledger's word), who is responsible, how many cases, which families, "
        "when first and last seen, and the (reduced) case with the command that replays it.")
    add_out(buckets)
    add_known(buckets)
    add_format(buckets)
    buckets.set_defaults(func=cmd_buckets)


def _add_diff(sub: argparse._SubParsersAction) -> None:
    diff = sub.add_parser("diff", help="new, persisting and fixed buckets between two campaigns (exit 1 on new ones)",
                          description="Compare the buckets of two campaign directories. Exit status: 0 when "
                                      "nothing is new, 1 when NEW has a bucket BASELINE lacks, 2 on bad input.")
    diff.add_argument("baseline", help="the earlier campaign's directory")
    diff.add_argument("new", help="the later campaign's directory")
    add_format(diff)
    diff.set_defaults(func=cmd_diff)


def _add_known(sub: argparse._SubParsersAction) -> None:
    known = sub.add_parser(
        "known", help="the ledger of known problems (layoutfuzz-known.toml): add one, list them",
        description="Known problems are root causes the team has looked at: a known one is reported but never "
        "fails a nightly. The ledger is a TOML file you commit; the nightly root's history adds when each was "
        "first and last seen, and in which version.")
    known_sub = known.add_subparsers(dest="known_command", required=True, metavar="ACTION")
    add = known_sub.add_parser("add", help="record a bucket (from `layoutfuzz buckets`) as a known problem",
                               description="Record the root cause of BUCKET (a bucket key from `layoutfuzz buckets`, "
                               "looked up in --out or the nightly --root) in the ledger; an existing entry is updated.")
    add.add_argument("bucket", metavar="BUCKET")
    add.add_argument("--title", help="one line: what goes wrong (needed for a new entry)")
    add.add_argument("--status", choices=ledger_file.STATUSES, help="default: unreported")
    add.add_argument("--attribution", choices=PARTIES, help="who is responsible (default: system under test)")
    add.add_argument("--layer", help="which layer, e.g. \"Triton's TMA descriptor encoding\"")
    add.add_argument("--link", help="the upstream issue or pull request")
    add.add_argument("--note", help="anything else worth knowing")
    add.set_defaults(func=cmd_known_add)
    report = known_sub.add_parser("report", help="record that an entry was filed upstream (status open upstream, link)",
                                  description="Record that the ledger entry BUCKET (a key from `layoutfuzz known list`, "
                                  "a variant's key too) was filed upstream: its status becomes 'open upstream' and its "
                                  "link the issue's URL; the rest of the entry is kept. `layoutfuzz export BUCKET` writes "
                                  "the issue draft to file.")
    report.add_argument("bucket", metavar="BUCKET")
    report.add_argument("--link", required=True, help="the upstream issue's URL")
    report.set_defaults(func=cmd_known_report)
    listing = known_sub.add_parser("list", help="the known problems with when they were first and last seen, and the "
                                   "count of root causes per system and status")
    add_format(listing)
    listing.set_defaults(func=cmd_known_list)
    add_known(report)
    for p in (add, listing):
        add_known(p)
        add_root(p, "the nightly root, for first/last seen (default nightly)")
        add_out(p, "a campaign to look BUCKET up in")


PARSERS = {"nightly": _add_nightly, "buckets": _add_buckets, "diff": _add_diff, "known": _add_known}


def add_parsers(sub: argparse._SubParsersAction, only: Collection[str] | None = None) -> None:
    """The parsers of nightly, buckets, diff and known (``only``: of those named)."""
    add_commands(sub, PARSERS, only)
