"""Every ledger entry of a system under test, and the campaign that met it first: over several campaign stores (each
of one release, CPU or GPU), per entry the store that met it after the fewest cases of its target, how many cases
that took and how often the entry was met there; entries no store met, with the releases their range calls bad.

    python benchmarks/ledger_met.py LABEL=DIR[@TRITON] ... [--known layoutfuzz-known.toml]

LABEL names the store in the table (e.g. ``cpu-3.9.0``); ``@TRITON`` is the Triton release the campaign ran under,
so that an entry outside its range there is not counted as missed by it.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from layoutfuzz.reports import ledger


@dataclass(frozen=True)
class Store:
    """One campaign's store: its label, folder and the Triton release it ran under ('' where none)."""

    label: str
    folder: Path
    triton: str


def parse_store(text: str) -> Store:
    label, _, rest = text.partition("=")
    folder, _, triton = rest.partition("@")
    path = Path(folder)
    if not label or not folder or not ((path / "layoutfuzz.sqlite").exists() or (path / "table.md").exists()):
        raise argparse.ArgumentTypeError(f"{text!r}: want LABEL=DIR[@TRITON] with DIR/layoutfuzz.sqlite, or DIR/table.md "
                                         "and DIR/reports (a campaign's folder brought back without its store)")
    return Store(label, path, triton)


def met_from_reports(folder: Path) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """``met`` of a campaign folder without its store: every non-pass case has a report; the cases per target are the
    pass-rate table's "(all)" rows."""
    buckets: dict[str, tuple[int, int]] = {}
    for path in (folder / "reports").glob("*.json"):
        if path.name.endswith(".reduced.json"):
            continue
        report = json.loads(path.read_text())
        if report["outcome"] in ("pass", "unsupported"):
            continue
        first, count = buckets.get(report["bucket"], (report["case"]["index"], 0))
        buckets[report["bucket"]] = (min(first, report["case"]["index"]), count + 1)
    cases = {}
    for line in (folder / "table.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 2 and cells[1] == "(all)":
            cases[cells[0]] = int(cells[2].replace(",", ""))
    return buckets, cases


def met(store: Store) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """Per bucket its first case index and count; per target its cases."""
    if not (store.folder / "layoutfuzz.sqlite").exists():
        return met_from_reports(store.folder)
    with sqlite3.connect(store.folder / "layoutfuzz.sqlite") as db:
        buckets = {b: (first, n) for b, first, n in db.execute(
            "SELECT bucket, MIN(idx), COUNT(*) FROM outcomes WHERE outcome NOT IN ('pass', 'unsupported') GROUP BY bucket")}
        cases = dict(db.execute("SELECT target, COUNT(*) FROM outcomes GROUP BY target"))
    return buckets, cases


def table(stores: list[Store], known: dict) -> pd.DataFrame:
    from layoutfuzz.harness.triton_compat import parse_version

    seen = {s.label: met(s) for s in stores}
    rows = []
    for problem in dict.fromkeys(known.values()):
        if problem.attribution != "system under test":
            continue
        best = None
        # a release outside the entry's range does not count: what meets its signatures there is another cause
        in_range = [s for s in stores if not (s.triton and problem.first_bad and not problem.present_in(s.triton, parse_version))]
        for store in in_range:
            buckets, cases = seen[store.label]
            hits = [buckets[b] for b in problem.buckets if b in buckets]
            if not hits:
                continue
            first, count = min(h[0] for h in hits) + 1, sum(h[1] for h in hits)
            per = sum(cases.get(t, 0) for t in problem.targets)
            if best is None or first < best[1]:
                best = (store.label, first, round(1000 * count / max(per, 1), 1))
        ran = [s.label for s in in_range if set(problem.targets) & set(seen[s.label][1])]
        rows.append({"system": problem.target.split(".")[0], "entry": problem.title[:80],
                     "met in": best[0] if best else "not met",
                     "cases needed": best[1] if best else None, "met per 1,000": best[2] if best else None,
                     "stores of its targets and range": len(ran)})
    return pd.DataFrame(rows).sort_values(["system", "met in", "cases needed"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+", type=parse_store, metavar="LABEL=DIR[@TRITON]")
    parser.add_argument("--known", default="layoutfuzz-known.toml")
    args = parser.parse_args()
    out = table(args.stores, ledger.load(args.known))
    print(out.to_markdown(index=False))
    missed = out[out["met in"] == "not met"]
    rare = out[out["met per 1,000"] < 0.2]
    print(f"\n{len(out)} entries of a system under test: {len(out) - len(missed)} met, {len(missed)} not met; "
          f"{len(rare)} met less than once in 5,000 cases of their targets")


if __name__ == "__main__":
    main()
