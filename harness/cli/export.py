"""``layoutfuzz export``: a finding as a folder that leaves the repository (a standalone reproducer and an issue
draft), its parser and its handler."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection
from pathlib import Path

from layoutfuzz.harness.cli.options import add_commands, add_known, add_out, job_count, output_directory


def cmd_export(args: argparse.Namespace) -> int:
    from layoutfuzz.harness.campaign import UsageError
    from layoutfuzz.harness.export import export, resolve

    if args.check:
        return cmd_check(args)
    if args.finding is None:
        raise UsageError("name a FINDING to export, or --check DIR to re-run exported reproducers")
    finding = resolve(args.finding, Path(args.out), Path(args.known))
    folder, run = export(finding, Path(args.to))
    verdict = {0: "the problem does not show here", 1: "reproduced", 2: "this release cannot express the case"}
    if run.returncode == 2 and "observed: cannot run here" in run.output:  # a GPU script without its GPU, say
        verdict[2] = run.output.split("observed: ", 1)[1].splitlines()[0][:120]
    print(f"{folder}: repro.py (exit {run.returncode}: {verdict.get(run.returncode, 'see ISSUE.md')}) and ISSUE.md")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """``export --check DIR``: every exported reproducer whose system is installed, run and judged by the ledger."""
    import pandas as pd

    from layoutfuzz.harness.campaign import UsageError
    from layoutfuzz.harness.export_check import check, summary
    from layoutfuzz.reports import ledger
    from layoutfuzz.reports.terminal import show

    folder = Path(args.check)
    if not folder.is_dir():
        raise UsageError(f"--check {args.check!r} is not a folder of exported reproducers")
    try:
        known = ledger.load(args.known)
        results = check(folder, known, args.python or sys.executable, args.jobs)
    except (ledger.LedgerError, RuntimeError, OSError) as exc:
        raise UsageError(str(exc)) from None
    rows = [{"reproducer": r.slug, "release": r.release or "-", "expected": "/".join(map(str, r.expected)) or "-",
             "exit": "-" if r.returncode is None else r.returncode, "ok": "yes" if r.ok else "NO", "observed": r.note}
            for r in results]
    print(show(pd.DataFrame(rows, columns=["reproducer", "release", "expected", "exit", "ok", "observed"]), "md",
               drop=["observed"], keep=["reproducer", "ok"]))
    print(summary(results), file=sys.stderr)
    return 0 if all(r.ok for r in results) else 1


def _add_export(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "export", help="write a finding as a standalone reproducer (repro.py) and an issue draft (ISSUE.md)",
        description="Write FINDING as DIR/<slug>/repro.py and DIR/<slug>/ISSUE.md. FINDING is a bucket id (from the "
        "ledger, or from `layoutfuzz buckets` of the campaign --out), a report or case file (a ledger entry's "
        "reproducer, e.g. docs/results/cases/NAME.json) or a case id TARGET/SEED/INDEX (found in --out, else "
        "generated). repro.py imports only the system under test (and NumPy), builds the case with the system's "
        "public API, prints expected and observed, and exits 1 while the problem shows, 0 once it is gone, 2 where "
        "the release cannot express the case. ISSUE.md is a draft a maintainer could file: title, summary, the "
        "script, its output under the installed release (run here in a clean environment), the ledger's release "
        "range, versions, attribution and a regression test in the system's test style. A target without a "
        "reproducer script is refused in one line. Exit 0 when written, 2 on bad input. With --check DIR, re-runs "
        "exported reproducers instead (exit 1 if one does not exit as the ledger says).")
    parser.add_argument("finding", metavar="FINDING", nargs="?", help="BUCKET, REPORT or case file, or TARGET/SEED/INDEX")
    parser.add_argument("--check", metavar="DIR", help="instead of exporting, run every DIR/<slug>/repro.py whose system "
                        "is installed, layoutfuzz unimportable (runpy, PYTHONPATH='', an empty folder), and judge its "
                        "exit by the ledger's range for the installed release (1 bad, 0 good; a masked release is not "
                        "judged); exit 1 if any does not exit as the ledger says")
    parser.add_argument("--python", metavar="PATH", help="with --check: the interpreter to run them under (default "
                        "this one; e.g. a per-release environment's bin/python)")
    parser.add_argument("--jobs", type=job_count, metavar="J", help="with --check: scripts run at once (default: one "
                        "per core)")
    parser.add_argument("--to", type=output_directory, default="layoutfuzz-export", metavar="DIR",
                        help="where the folder goes (default layoutfuzz-export)")
    add_out(parser, "a campaign to look a bucket or case id up in")
    add_known(parser, "the ledger: a bucket's entry, the release range and attribution")
    parser.set_defaults(func=cmd_export)


PARSERS = {"export": _add_export}


def add_parsers(sub: argparse._SubParsersAction, only: Collection[str] | None = None) -> None:
    """The parser of export."""
    add_commands(sub, PARSERS, only)


__all__ = ["add_parsers", "cmd_export"]
