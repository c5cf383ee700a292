"""The version matrix: the same seeded cases run under several Tritons, one campaign store per version,
then one pass-rate table with a column per version and a root cause x version grid (present, absent,
unsupported). A root cause is a bucket (target, outcome, root-cause signature), which does not name a
version, so the same problem lines up across versions."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from layoutfuzz.harness.campaign import UsageError, open_store
from layoutfuzz.harness.environments import TritonEnvironment
from layoutfuzz.harness.triton_compat import parse_version
from layoutfuzz.reports.buckets import bucket_table
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.store import DB_NAME
from layoutfuzz.reports.tables import pass_rate_table, render

SETTINGS = "matrix.json"


@dataclass(frozen=True)
class VersionRun:
    """One version's campaign of a matrix: its environment and its store."""

    environment: TritonEnvironment
    directory: Path

    @property
    def label(self) -> str:
        return self.environment.label


def folder_name(label: str) -> str:
    """A store folder for a version label: 'triton-3.9.0' for a release, else its first word and a hash
    of the whole label ('3.10.0 (/opt/py/bin/python)' -> 'triton-3.10.0-1a2b3c4d')."""
    if re.fullmatch(r"\d+\.\d+\.\d+", label):
        return f"triton-{label}"
    first = re.sub(r"[^A-Za-z0-9._-]+", "_", label.split()[0])[:40]
    return f"triton-{first}-{hashlib.sha1(label.encode()).hexdigest()[:8]}"


def check_settings(out: Path, settings: dict, force: bool) -> bool:
    """Whether ``out`` already holds this matrix (then it resumes); refuses one of other settings."""
    path = out / SETTINGS
    if not path.exists():
        return False
    held = json.loads(path.read_text())
    if held == settings:
        return True
    if not force:
        raise UsageError(f"{out} holds a matrix of other settings ({path}): add --force to replace it, or --out")
    return False


def run_version(run: VersionRun, campaign: list[str], resume: list[str] | None, force: bool) -> int:
    """Runs one version's campaign in its own environment, or resumes it with the arguments ``resume``
    (its stored settings hold the rest); the campaign's table goes to DIR/run.log, its progress to this
    terminal. Returns the campaign's exit status."""
    args = ["run", "--out", str(run.directory), "--format", "md"]
    if resume is not None and (run.directory / DB_NAME).exists():
        args += ["--resume", *resume]
    else:
        args += campaign + (["--force"] if force else [])
    print(f"\n== Triton {run.label} ({run.environment.triton}) -> {run.directory}", file=sys.stderr)
    run.directory.mkdir(parents=True, exist_ok=True)
    with open(run.directory / "run.log", "w") as log:
        child = subprocess.Popen(run.environment.command(*args), env=run.environment.env(), stdout=log)
        try:
            return child.wait()
        except KeyboardInterrupt:  # the campaign got the same Ctrl-C: it records what finished and stops
            child.wait()
            return 130


def frames(runs: list[VersionRun]) -> dict[str, pd.DataFrame]:
    """Version label -> the outcomes its store holds."""
    out = {}
    for run in runs:
        store = open_store(run.directory)
        out[run.label] = store.frame()
        store.close()
    return out


def _unsupported(frame: pd.DataFrame, target: str) -> bool:
    rows = frame[frame["target"] == target]
    return rows.empty or bool((rows["outcome"] == "unsupported").all())


def pass_rates(by_version: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (target, family): the pass rate % under each version ('unsupported' where the
    version could not run the target), and the cases each ran."""
    tables = {}
    for label, frame in by_version.items():
        table = pass_rate_table(frame).set_index(["target", "family"])
        cells = table["pass rate %"].map(lambda v: f"{v:.2f}" if pd.notna(v) else v).astype(object)
        for target in table.index.get_level_values("target").unique():
            if _unsupported(frame, target):
                cells.loc[target] = "unsupported"
        tables[label] = cells.where(cells.notna(), "-")
        tables[f"cases {label}"] = table["cases"]
    combined = pd.DataFrame(tables)
    combined.index.names = ["target", "family"]  # an index built from several versions' rows keeps no names
    for label in by_version:
        combined[label] = combined[label].where(combined[label].notna(), "-")
        combined[f"cases {label}"] = combined[f"cases {label}"].fillna(0).astype(int)
    combined = combined.reset_index()
    order = combined.apply(lambda r: (r["target"], r["family"] != "(all)", r["family"]), axis=1)
    return combined.iloc[sorted(range(len(combined)), key=lambda i: order.iloc[i])].reset_index(drop=True)


def version_span(present: list[str], labels: list[str]) -> str:
    """Which versions have a root cause, in words: 'all', 'none', '3.6.0 only', '3.6.0 to 3.7.1'."""
    if not present:
        return "none"
    if len(present) == len(labels):
        return "all"
    if len(present) == 1:
        return f"{present[0]} only"
    positions = [labels.index(p) for p in present]
    if positions == list(range(positions[0], positions[-1] + 1)):
        return f"{present[0]} to {present[-1]}"
    return ", ".join(present)


def root_cause_grid(by_version: dict[str, pd.DataFrame], ledger: dict | None = None) -> pd.DataFrame:
    """One row per root cause seen under any version: where it is present (with its case count),
    absent, or unsupported (the version could not run its target); and the ledger's title if known."""
    labels = list(by_version)
    buckets = {label: bucket_table(frame).set_index("bucket") for label, frame in by_version.items()}
    seen: dict[str, pd.Series] = {}
    for table in buckets.values():
        for bucket, row in table.iterrows():
            seen.setdefault(bucket, row)
    rows = []
    for bucket, first in seen.items():
        row = {"bucket": bucket, "target": first["target"], "outcome": first["outcome"], "signature": first["signature"]}
        present = []
        for label in labels:
            if bucket in buckets[label].index:
                row[label] = f"present ({int(buckets[label].loc[bucket, 'cases'])})"
                present.append(label)
            else:
                row[label] = "unsupported" if _unsupported(by_version[label], first["target"]) else "absent"
        row["versions"] = version_span(present, labels)
        known = (ledger or {}).get(bucket)
        row["known as"] = known.title if known else ""
        rows.append(row)
    columns = ["bucket", "target", "outcome", "signature", *labels, "versions", "known as"]
    return pd.DataFrame(rows, columns=columns).sort_values(["target", "outcome", "signature"]).reset_index(drop=True)


def ordered(runs: list[VersionRun]) -> list[VersionRun]:
    """Releases oldest first, then the user's own builds in the order given."""
    def key(run: VersionRun):
        try:
            return (0, parse_version(run.environment.triton), run.label)
        except ValueError:
            return (1, (0, 0, 0), run.label)
    return sorted(runs, key=key)


def write_matrix(out: Path, rates: pd.DataFrame, grid: pd.DataFrame, header: str) -> Path:
    """OUT/matrix.md (both tables) and OUT/pass-rates.csv, OUT/root-causes.csv."""
    write_atomically(out / "pass-rates.csv", rates.to_csv(index=False))
    write_atomically(out / "root-causes.csv", grid.to_csv(index=False))
    text = f"{header}\n\n## Pass rate % per version\n\n{render(rates, 'md')}\n\n## Root causes x versions\n\n" + (
        render(grid, "md") if not grid.empty else "(none: every case passed under every version)") + "\n"
    write_atomically(out / "matrix.md", text)
    return out / "matrix.md"
