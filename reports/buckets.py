"""Buckets: a campaign's distinct problems, one per root cause (target, outcome and root-cause
signature, ``reports.signatures``), each with the families it hit, a count and one representative
case; and what changed between two campaigns' buckets."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from layoutfuzz.reports.triage import FIXED, NEW, NOT_SEEN, OTHER, PASSES, PERSISTING, later_verdict

PROBLEMS = ("diverge", "crash", "timeout", "error")  # outcomes that are findings (not pass, not unsupported)
BUCKET_COLUMNS = ["bucket", "target", "families", "outcome", "signature", "cases", "representative", "report"]
DIFF_STATUSES = (NEW, PERSISTING, FIXED, NOT_SEEN)  # what ``diff`` says of a bucket, in the nightly's words


def bucket_table(outcomes: pd.DataFrame) -> pd.DataFrame:
    """One row per bucket of the non-pass outcomes, largest first; the representative is the
    bucket's lowest case index (reproduce it with ``layoutfuzz reproduce REPRESENTATIVE``)."""
    problems = outcomes[outcomes["outcome"].isin(PROBLEMS)]
    if problems.empty:
        return pd.DataFrame(columns=BUCKET_COLUMNS)
    problems = problems.sort_values(["target", "seed", "idx"])
    groups = problems.groupby("bucket", sort=False)
    first = groups.first()
    table = pd.DataFrame({
        "target": first["target"],
        "families": groups["family"].agg(lambda f: ", ".join(sorted(set(f)))),
        "outcome": first["outcome"],
        "signature": [_signature(row) for _, row in first.iterrows()],
        "cases": problems.groupby("bucket", sort=False).size(),
        "representative": [f"{r.target}/{r.seed}/{r.idx}" for r in first.itertuples()],
        "report": first["report"].fillna(""),
    })
    table = table.reset_index().sort_values(["cases", "target", "families"], ascending=[False, True, True])
    return table[BUCKET_COLUMNS].reset_index(drop=True)


def _signature(row: pd.Series) -> str:
    """What the bucket's members share: the root-cause signature (stores written before root-cause
    signatures kept none for crashes: their first line then)."""
    signature = row.get("signature") or ""
    if signature:
        return str(signature)
    lines = str(row.get("detail") or "").strip().splitlines()
    return " | ".join(lines[:1] + lines[-1:])[:100]


def diff_buckets(baseline: pd.DataFrame, new: pd.DataFrame, replays: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The buckets of two campaigns side by side, judged by the nightly's rule (``triage.later_verdict``):
    ``new`` (only in the new one), ``persisting``, and for a bucket only in the baseline ``fixed`` where its
    reproducer passed in the new campaign (its representative case run again there, or ``replays``: bucket ->
    what a nightly's re-run of it did) or ``not seen``; with the case counts of each."""
    old_b, new_b = bucket_table(baseline).set_index("bucket"), bucket_table(new).set_index("bucket")
    reruns = {**rerun_representatives(old_b, new), **(replays or {})}
    rows = []
    for bucket in list(new_b.index) + [b for b in old_b.index if b not in new_b.index]:
        side = new_b.loc[bucket] if bucket in new_b.index else old_b.loc[bucket]
        status = later_verdict(bucket in old_b.index, bucket in new_b.index, reruns.get(bucket))
        rows.append({
            "status": status, "bucket": bucket, "target": side["target"], "families": side["families"],
            "outcome": side["outcome"], "signature": side["signature"],
            "baseline cases": int(old_b.loc[bucket, "cases"]) if bucket in old_b.index else 0,
            "new cases": int(new_b.loc[bucket, "cases"]) if bucket in new_b.index else 0,
            "representative": side["representative"],
        })
    order = {status: i for i, status in enumerate(DIFF_STATUSES)}
    columns = ["status", "bucket", "target", "families", "outcome", "signature", "baseline cases", "new cases", "representative"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(by=["status", "new cases"], key=lambda c: c.map(order) if c.name == "status" else -c).reset_index(drop=True)


def rerun_representatives(buckets: pd.DataFrame, outcomes: pd.DataFrame) -> dict[str, str]:
    """Bucket (of ``buckets``, indexed by bucket) -> PASSES or OTHER where ``outcomes`` ran its representative case
    again and it did not land in the bucket (a case that did is seen there, which needs no re-run)."""
    if outcomes.empty or buckets.empty:
        return {}
    ran = {f"{r.target}/{r.seed}/{r.idx}": (r.outcome, r.bucket) for r in outcomes.itertuples()}
    out = {}
    for bucket, representative in buckets["representative"].items():
        outcome, got = ran.get(representative, (None, None))
        if outcome is not None and got != bucket:
            out[bucket] = PASSES if outcome == "pass" else OTHER
    return out
