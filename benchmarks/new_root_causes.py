"""The root causes of systems under test that the ledger holds now and did not hold at an earlier commit: per system,
how many, by status, then one row each (target, status, bad releases, title). An entry counts as new when none of its
signatures (its own and its variants') was a signature of the earlier ledger, so entries merged since are not counted
twice, and expected behaviours are left out (they are not bugs).

    python benchmarks/new_root_causes.py --since COMMIT [--known layoutfuzz-known.toml]
"""

from __future__ import annotations

import argparse
import subprocess
import tomllib
from pathlib import Path

import pandas as pd

from layoutfuzz.reports.ledger import variant

SYSTEMS = {"triton": "Triton", "cute": "CuTe DSL", "pycute": "pycute", "mosaic": "Mosaic GPU"}
NOT_BUGS = ("expected behaviour", "hardware behaviour", "specification", "harness bug")
TITLE = 42  # characters of each title, so that a row fits 120 columns


def signatures(entry: dict) -> set[tuple[str, str, str]]:
    """(target, outcome, signature) of an entry and of each of its variants."""
    out = {(entry["target"], entry["outcome"], entry["signature"])}
    for line in (entry.get("variants") or "").strip().splitlines():
        if line.strip():
            out.add(variant(line.strip(), entry["target"], entry["outcome"]))
    return out


def ledger_at(commit: str, path: str) -> list[dict]:
    """The ledger's entries as committed at ``commit``."""
    text = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, check=True).stdout
    return tomllib.loads(text)["problem"]


def new_root_causes(before: list[dict], now: list[dict]) -> pd.DataFrame:
    """One row per entry of ``now`` of a system under test (not an expected behaviour) none of whose signatures
    ``before`` held."""
    known = set().union(*(signatures(e) for e in before))
    rows = []
    for entry in now:
        if entry.get("attribution") != "system under test" or entry.get("status") in NOT_BUGS or signatures(entry) & known:
            continue
        bad = entry.get("first_bad", "")
        good = entry.get("first_good", "")
        releases = f"bad {bad}" + (f", good {good}" if good else "") if bad else "installed release"
        rows.append({"system": SYSTEMS.get(entry["target"].split(".")[0], entry["target"]), "target": entry["target"],
                     "status": entry["status"], "releases": releases, "title": entry["title"][:TITLE]})
    return pd.DataFrame(rows, columns=["system", "target", "status", "releases", "title"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--since", required=True, help="the commit whose ledger is the baseline")
    parser.add_argument("--known", default="layoutfuzz-known.toml")
    args = parser.parse_args()
    now = tomllib.loads(Path(args.known).read_text())["problem"]
    table = new_root_causes(ledger_at(args.since, args.known), now)
    counts = table.groupby(["system", "status"]).size().unstack(fill_value=0)
    counts["all"] = counts.sum(axis=1)
    print(f"new root causes of systems under test since {args.since}: {len(table)}, in {table['system'].nunique()} systems\n")
    print(counts.to_markdown())
    print()
    print(table.sort_values(["system", "target"]).drop(columns="system").to_markdown(index=False))


if __name__ == "__main__":
    main()
