"""Buckets before and after root-cause triage, on the same outcomes.

Baseline: the bucket key layoutfuzz used before (target, family, outcome and the comparison's raw
signature, or a crash's first and last line with numbers removed). Now: target, outcome and the
root-cause signature (``reports.signatures``). Two sources of outcomes:

- stored campaigns given on the command line (``python benchmarks/triage_buckets.py DIR...``);
- the selftest's planted faults, each run over its recorded hardware cases (``--planted``).

Prints one table: outcomes, buckets before, root causes now, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from layoutfuzz.generators.case import Case  # noqa: E402
from layoutfuzz.reports.outcome import Outcome, Result  # noqa: E402
from layoutfuzz.reports.signatures import root_cause  # noqa: E402
from layoutfuzz.reports.tables import render  # noqa: E402


def old_signature(outcome: str, detail: str, signature: str) -> str:
    """The problem signature before root-cause triage (reports/report.py at 87ef0d1)."""
    if outcome in ("crash", "error", "timeout", "unsupported"):
        lines = (detail or "").strip().splitlines()
        return re.sub(r"0x[0-9a-fA-F]+|\d+", "N", " | ".join(lines[:1] + lines[-1:]))
    return signature


def campaign_rows(directory: Path) -> list[dict]:
    """One row per stored non-pass outcome: its old key and its root cause now."""
    rows = []
    for path in sorted((directory / "reports").glob("*.json")):
        if path.name.endswith(".reduced.json"):
            continue
        report = json.loads(path.read_text())
        if report["outcome"] not in ("diverge", "crash", "timeout", "error"):
            continue
        rows.append({"source": str(directory), "old": (report["target"], report["family"], report["outcome"],
                                                       old_signature(report["outcome"], report["detail"], report["signature"])),
                     "new": (report["target"], report["outcome"], root_cause(Result(
                         Case.from_dict(report["case"]), report["family"], Outcome(report["outcome"]), report["detail"],
                         signature=report["signature"])))})
    return rows


def planted_rows() -> list[dict]:
    """The selftest's planted faults over their recorded cases, as a campaign would bucket them."""
    from layoutfuzz.harness import registry, selftest
    from layoutfuzz.harness.compare import compare_values

    rows = []
    for mutant in selftest.MUTANTS:
        if mutant.evidence not in selftest.EVIDENCE_TARGETS:
            continue
        name, params = selftest.EVIDENCE_TARGETS[mutant.evidence]
        target = registry.load(name)
        for index, p in enumerate(params()):
            case = Case(target.name, 0, index, p)
            result = selftest.divergence(target, mutant, case)
            if result.outcome.value == "pass":
                continue
            if result.outcome.value == "diverge":  # what the comparison said before: cell counts, element paths
                observed = target.expected(case)
                with mutant.plant():
                    expected = target.expected(case)
                if name == "tma.swizzle":
                    cells = re.search(r"in (\d+) 16-byte cells", target.compare(case, expected, observed).note)
                    old = f"{cells.group(1)} cells"
                else:
                    old = compare_values(expected, observed).signature
            else:
                old = old_signature(result.outcome.value, result.detail, "")
            rows.append({"source": f"planted: {mutant.name}", "old": (name, target.family(case), result.outcome.value, old),
                         "new": (name, result.outcome.value, root_cause(result))})
    return rows


def table(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    out = frame.groupby("source", sort=False).agg(outcomes=("old", "size"), **{
        "buckets before": ("old", lambda s: len(set(s))), "root causes now": ("new", lambda s: len(set(s)))})
    out["ratio (before / now)"] = (out["buckets before"] / out["root causes now"]).round(1)
    return out.reset_index()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaigns", nargs="*", type=Path, help="campaign directories (layoutfuzz run --out DIR)")
    parser.add_argument("--planted", action="store_true", help="also the selftest's planted faults (about 5 minutes)")
    args = parser.parse_args()
    rows = [r for d in args.campaigns for r in campaign_rows(d)] + (planted_rows() if args.planted else [])
    if not rows:
        parser.error("give campaign directories and/or --planted")
    print(render(table(rows), "md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
