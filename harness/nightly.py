"""The nightly: first re-run every open root cause's stored reproducer (cheap and deterministic),
then explore tonight's dated campaign, reduce each bucket with no reduced reproducer on file (the ledger's or an
earlier night's), and judge every root cause against the root's memory and the ledger: new (fails the night),
regressed (fails it), persisting, known, fixed (only when its reproducer passed tonight). Absence from tonight's
sample proves nothing."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.campaign import (
    Campaign,
    CampaignSettings,
    UsageError,
    holds_campaign,
    load_target,
    replay_command,
    run_campaign,
    system_version,
    target_specs,
)
from layoutfuzz.harness.runner import Runner, Shard
from layoutfuzz.harness.target import MALFORMED, Target
from layoutfuzz.harness.triton_compat import parse_version
from layoutfuzz.reports import ledger as ledger_file
from layoutfuzz.reports import schema
from layoutfuzz.reports.attribution import attribute
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.signatures import root_cause
from layoutfuzz.reports.tables import render
from layoutfuzz.reports.terminal import WIDTH, clip
from layoutfuzz.reports.triage import FAILING, Replay, Triage, TriageError

REPRODUCERS = "reproducers"
ROOT_CAUSE_COLUMNS = ["status", "bucket", "target", "outcome", "signature", "attribution", "cases", "families",
                      "first seen", "last seen", "fixed in", "reproducer", "replay", "evidence"]  # ROOT/reproducers/BUCKET.json: every root cause's replayable case


@dataclass(frozen=True)
class NightSettings:
    """Everything one night runs with, built once (by the CLI or a Python user) and handed to ``run_night``."""

    night: str  # YYYY-MM-DD; tonight's campaign is seeded by it (every machine and shard draws the same cases)
    root: Path = Path("nightly")  # one campaign per night, the history and the reproducers
    targets: tuple[str, ...] = ()  # none: the CPU targets
    budget: float = 600.0  # seconds of campaign
    shard: Shard = field(default_factory=Shard)  # this job's part of the night
    jobs: int = 1
    timeout: float | None = None  # per case; None: the campaign's default
    reduce_tries: int = 200  # per bucket representative's reduction
    known: str | Path = ledger_file.DEFAULT_LEDGER  # the ledger (absent: none)
    quiet: bool = False  # no progress bar

    def __post_init__(self) -> None:
        if isinstance(self.targets, str):
            raise TypeError("NightSettings.targets is a tuple of names, not a string")
        object.__setattr__(self, "root", Path(self.root))

    @property
    def out(self) -> Path:
        """Tonight's campaign folder: ROOT/DATE (ROOT/DATE-shardIofN for a part of the night)."""
        suffix = "" if self.shard.count == 1 else f"-shard{self.shard.index}of{self.shard.count}"
        return self.root / f"{self.night}{suffix}"

    def campaign(self) -> CampaignSettings:
        """Tonight's campaign: seeded by the date, reducing each bucket's representative; the same night again
        continues the campaign already in ``out`` (with its stored settings)."""
        settings = CampaignSettings(out=self.out, budget=self.budget, jobs=self.jobs, timeout=self.timeout,
                                    quiet=self.quiet, reduce=True, reduce_tries=self.reduce_tries)
        if holds_campaign(self.out):
            return replace(settings, resume=True)
        return replace(settings, targets=self.targets, seed=int(self.night.replace("-", "")), shard=self.shard)


@dataclass(frozen=True)
class Night:
    """One night's campaign and its verdicts."""

    campaign: Campaign
    verdicts: pd.DataFrame  # the root-cause table (``root_cause_table``)

    @property
    def failing(self) -> pd.DataFrame:
        return self.verdicts[self.verdicts["status"].isin(FAILING)]


def replay_open(triage: Triage, night: str, targets: Sequence[tuple[str, Target]], jobs: int, timeout: float) -> dict[str, Replay]:
    """Re-runs the stored reproducer of every open root cause of tonight's (available) targets."""
    runnable = {t.name: (spec, t) for spec, t in targets if t.availability().available}
    causes = [c for c in triage.to_replay(runnable, night) if _valid(runnable[c.target][1], c)]
    if not causes:
        return {}
    print(f"re-running the reproducers of {len(causes)} open root cause(s)...", file=sys.stderr)
    buckets_of: dict[str, list[str]] = {}
    replays: dict[str, Replay] = {}
    with Runner(jobs=min(jobs, len(causes)), timeout_s=timeout) as runner:
        for cause in causes:
            spec, target = runnable[cause.target]
            buckets_of.setdefault(cause.reproducer.to_json(), []).append(cause.bucket)
            runner.submit(spec, cause.reproducer, target.family(cause.reproducer))
        while runner.in_flight:
            for result in runner.results():
                for bucket in buckets_of[result.case.to_json()]:
                    replays[bucket] = Replay(bucket, result.outcome.value, root_cause(result))
    same = sum(r.still_fails(next(c for c in causes if c.bucket == b)) for b, r in replays.items())
    passing = sum(r.passes for r in replays.values())
    print(f"  {same} still fail the same way, {passing} pass, {len(replays) - same - passing} fail otherwise", file=sys.stderr)
    return replays


def _valid(target: Target, cause) -> bool:
    """Whether a stored reproducer passes its target's validation (a root is data); one that does not is skipped."""
    try:
        target.validate(cause.reproducer)
        return True
    except MALFORMED as exc:
        why = " ".join(str(exc).split())
        print(clip(f"{cause.bucket}: its stored reproducer is not a valid case of {target.name}; not replayed ({why})", WIDTH),
              file=sys.stderr)
        return False


def reproducers_of(campaign: Campaign) -> dict[str, tuple[Case, bool]]:
    """Bucket -> (its reduced case where there is one, else its representative; reduced?)."""
    out = {}
    for row in campaign.buckets.itertuples():
        if not row.report:
            continue
        report = schema.load_report(schema.report_path(campaign.directory, row.report))
        if report.get("reduced_case"):
            out[row.bucket] = (Case.from_dict(report["reduced_case"]), True)
        else:
            out[row.bucket] = (Case.from_dict(report["case"]), False)
    return out


def root_cause_table(verdicts: pd.DataFrame, known: Mapping[str, ledger_file.KnownProblem], root: Path | None,
                     targets: Mapping[str, Target]) -> pd.DataFrame:
    """What a user reads: per root cause its status, attribution, count, families hit, first and last
    seen, and the reproducer with its replay command."""
    rows = []
    for r in verdicts.itertuples():
        problem = known.get(r.bucket)
        blame = attribute(targets.get(r.target), r.outcome, r.signature, problem)
        status = r.status if problem is None else f"known: {problem.status}"
        case_file = (root / REPRODUCERS / f"{r.bucket}.json") if root is not None else None
        rows.append({
            "status": status, "bucket": r.bucket, "target": r.target, "outcome": r.outcome, "signature": r.signature,
            "attribution": str(blame), "cases": int(r.cases), "families": r.families,
            "first seen": f"{r.first_night} ({r.first_version})" if r.first_version else r.first_night,
            "last seen": f"{r.last_night} ({r.last_version})" if r.last_version else r.last_night,
            "fixed in": f"{r.fixed_night} ({r.fixed_version})" if r.fixed_night else "",
            "reproducer": ("reduced " if r.reduced else "") + (str(case_file) if case_file else ""),
            "replay": replay_command(case_file, r.target, r.spec) if case_file else "",
            "evidence": blame.evidence,
        })
    order = {"new": 0, "regressed": 1, "fixed": 2, "persisting": 3}
    frame = pd.DataFrame(rows, columns=ROOT_CAUSE_COLUMNS)  # the columns even on a clean night
    if frame.empty:
        return frame
    return frame.sort_values(by=["status", "cases"], key=lambda c: c.map(lambda s: order.get(s, 4)) if c.name == "status" else -c,
                             kind="stable").reset_index(drop=True)


def write_reproducers(root: Path, triage: Triage) -> None:
    """``ROOT/reproducers/BUCKET.json`` for every root cause: the case ``layoutfuzz reproduce`` replays."""
    for cause in triage.causes().values():
        path = root / REPRODUCERS / f"{cause.bucket}.json"
        text = json.dumps(cause.reproducer.to_dict(), indent=1, sort_keys=True) + "\n"
        if not path.exists() or path.read_text() != text:
            write_atomically(path, text)


def triton_release(version: str) -> str | None:
    """The Triton release in a system version ('triton 3.9.0, torch 2.11' -> '3.9.0'), if any."""
    match = re.search(r"\btriton (\d+\.\d+\.\d+)", version or "")
    return match[1] if match else None


def record_fixes(path: str | Path, known: Mapping[str, ledger_file.KnownProblem], triage: Triage, night: str) -> list[str]:
    """Known root causes whose reproducer passed tonight under a Triton release the ledger's range still
    calls bad: the ledger records the release as their first good one. Returns the buckets updated."""
    updated = []
    for bucket, cause in triage.causes().items():
        problem = known.get(bucket)
        release = triton_release(cause.fixed_version or "")
        if problem is None or cause.status != "fixed" or cause.fixed_night != night or release is None:
            continue
        if problem.first_good and parse_version(problem.first_good) <= parse_version(release):
            continue  # the range already says so
        ledger_file.add(path, replace(problem, first_good=release,
                                      bisected=f"{problem.bisected + '; ' if problem.bisected else ''}nightly {night}: passes under {release}"))
        print(f"{problem.title}: fixed in Triton {release} (its reproducer passes tonight); recorded in {path}", file=sys.stderr)
        updated.append(bucket)
    return updated


def run_night(settings: NightSettings, campaign_settings: CampaignSettings | None = None) -> Night:
    """Replay, explore, reduce, judge; remember the verdicts and write the root-cause table. ``campaign_settings``:
    tonight's campaign (default ``settings.campaign()``)."""
    root, night, out = settings.root, settings.night, settings.out
    try:
        known = ledger_file.load(settings.known)
    except ledger_file.LedgerError as exc:
        raise UsageError(str(exc)) from None
    try:
        triage = Triage(root)
    except TriageError as exc:
        raise UsageError(str(exc)) from None
    try:
        targets = [(spec, load_target(spec)) for spec in target_specs(list(settings.targets))]
        timeout = settings.timeout if settings.timeout is not None else 30.0
        replays = replay_open(triage, night, targets, settings.jobs, timeout)
        on_file = set(known) | {b for b, c in triage.causes().items() if c.reduced}
        campaign = run_campaign(replace(campaign_settings or settings.campaign(), reduce_skip=frozenset(on_file)))
        by_name = {t.name: t for _, t in campaign.targets}
        versions = {name: system_version(t) for name, t in by_name.items()}
        specs = {t.name: spec for spec, t in campaign.targets}
        verdicts = triage.judge(night, versions, campaign.buckets, reproducers_of(campaign), replays, known, specs)
        write_reproducers(root, triage)
        record_fixes(settings.known, known, triage, night)
    finally:
        triage.close()
    table = root_cause_table(verdicts, known, root, by_name)
    if not table.empty:
        write_atomically(out / "root-causes.md", render(table, "md") + "\n")
        table.to_csv(out / "root-causes.csv", index=False)
    return Night(campaign, table)
