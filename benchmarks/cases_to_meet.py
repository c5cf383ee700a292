"""How many cases a campaign needs to meet each root cause: per root cause of a campaign's store (a ledger entry and
its variants, else a bucket), the first case index that met it and how often it was met, with the ledger entry's
title where it is a known problem.

    python benchmarks/cases_to_meet.py CAMPAIGN_DIR [--known layoutfuzz-known.toml]

A root cause met later than one case in 5,000 needs its parameter region weighted up.
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import pandas as pd

from layoutfuzz.reports import ledger


def cases_to_meet(directory: Path, known: dict) -> pd.DataFrame:
    with sqlite3.connect(directory / "layoutfuzz.sqlite") as db:
        per_target = dict(db.execute("SELECT target, COUNT(*) FROM outcomes GROUP BY target"))
        rows = db.execute("SELECT target, outcome, signature, bucket, MIN(idx), COUNT(*) FROM outcomes "
                          "WHERE outcome NOT IN ('pass', 'unsupported') GROUP BY bucket").fetchall()
    table = pd.DataFrame(rows, columns=["target", "outcome", "signature", "bucket", "first case", "cases"])
    table["cases needed"] = table["first case"] + 1
    table["met per 1,000"] = (1000 * table["cases"] / table["target"].map(per_target)).round(1)
    table["known"] = table["bucket"].map(lambda b: "yes" if b in known else "no")
    # a ledger entry with variants is one root cause: its buckets count together, from the first that was met
    table["root cause"] = [(known[b].title if b in known else s)[:90] for b, s in zip(table["bucket"], table["signature"])]
    table = table.groupby(["target", "outcome", "root cause", "known"], as_index=False).agg(
        {"cases needed": "min", "met per 1,000": "sum", "signature": "count"}).rename(columns={"signature": "buckets"})
    table["met per 1,000"] = table["met per 1,000"].round(1)
    return table.sort_values(["target", "cases needed"])[
        ["target", "outcome", "root cause", "buckets", "cases needed", "met per 1,000", "known"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--known", default="layoutfuzz-known.toml")
    parser.add_argument("--triton", default=_installed("triton"), metavar="VERSION",
                        help="the Triton release the campaign ran under (default: the installed one)")
    args = parser.parse_args()
    known = ledger.load(args.known)
    table = cases_to_meet(args.directory, known)
    print(table.to_markdown(index=False))
    rare = table[table["met per 1,000"] < 0.2]
    print(f"\n{len(table)} root causes; {len(rare)} met less than once in 5,000 cases")
    missed = not_met(args.directory, known, args.triton)
    print(f"\nledger entries of these targets, open in Triton {args.triton or '(none)'} or without a Triton range, "
          f"not met: {len(missed)}")
    for title in missed:
        print(f"- {title}")


def not_met(directory: Path, known: dict, triton: str) -> list[str]:
    """Titles of the ledger's root causes of the system under test in the campaign's targets that the campaign did
    not meet, leaving out Triton's where ``triton`` (the campaign's release) is outside their recorded range."""
    from layoutfuzz.harness.triton_compat import parse_version

    with sqlite3.connect(directory / "layoutfuzz.sqlite") as db:
        targets = {t for (t,) in db.execute("SELECT DISTINCT target FROM outcomes")}
        met = {b for (b,) in db.execute("SELECT DISTINCT bucket FROM outcomes WHERE outcome NOT IN ('pass', 'unsupported')")}
    out = []
    for problem in dict.fromkeys(known.values()):
        if not set(problem.targets) & targets or problem.attribution != "system under test":
            continue
        if problem.target.startswith("triton") and triton and problem.first_bad and not problem.present_in(triton, parse_version):
            continue  # outside its range, or masked there by another failure
        if not set(problem.buckets) & met:
            out.append(problem.title[:110])
    return out


def _installed(package: str) -> str:
    """The installed release of ``package`` (the campaign ran under it), or ''."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return ""


if __name__ == "__main__":
    main()
