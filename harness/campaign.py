"""Campaigns: the store a campaign writes to, the recorder of its outcomes, running it, and reducing
each bucket's representative afterwards (reduce, then bucket)."""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from layoutfuzz.harness import registry, trust
from layoutfuzz.harness.batching import StoredPasses
from layoutfuzz.harness.health import Health
from layoutfuzz.harness.reduce import Reduction, reduce_case
from layoutfuzz.harness.runner import Runner, Shard, run_cases, share
from layoutfuzz.harness.target import Target, make_case
from layoutfuzz.reports.buckets import PROBLEMS, bucket_table
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.outcome import OUTCOMES, Outcome, Result
from layoutfuzz.reports.report import bounded, build_report, environment_versions
from layoutfuzz.reports.side_by_side import model_groups, side_by_side
from layoutfuzz.reports.signatures import root_cause_and_bucket
from layoutfuzz.reports.store import DB_NAME, DirectoryLock, Store, StoreError, report_name
from layoutfuzz.reports.tables import pass_rate_table, render, write_tables

DEFAULT_OUT = "layoutfuzz-out"
DEFAULT_TARGETS = "triton.linear_layout,triton.layouts,triton.shared_layouts,triton.bank_conflicts,triton.compile"  # every CPU target
DEFAULT_BUDGET_S = 60.0
DEFAULT_TIMEOUT_S = 30.0
SANITIZED_TIMEOUT_S = 600.0  # --sanitize: a batch's child starts Python and CUDA under the tool before any case ends


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit code 2."""


def target_specs(names: list[str]) -> list[str]:
    """The ``module:attr`` specs of target names (default: every CPU target), without repeats."""
    names = names or DEFAULT_TARGETS.split(",")
    try:
        specs = [registry.resolve(n) for n in names]
    except registry.TargetNotFound as exc:
        raise UsageError(str(exc)) from None
    return list(dict.fromkeys(specs))


def load_target(spec: str) -> Target:
    try:
        return registry.load(spec)
    except registry.TargetNotFound as exc:
        raise UsageError(str(exc)) from None


def specs_by_name(targets: list[tuple[str, Target]]) -> dict[str, str]:
    """Target name -> the spec it was loaded from."""
    return {target.name: spec for spec, target in targets}


def campaign_targets(store: Store, grants: Iterable[str] = ()) -> dict[str, tuple[str, Target]]:
    """Target name -> (spec, target) of each target a stored campaign ran that is installed here (or that the
    user names with ``grants``, their ``--target``); a store is data, so any other spec it lists is not imported."""
    out = {}
    try:
        recorded = store.meta().get("targets", [])
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    for spec in recorded:
        try:
            target = load_target(trust.trusted_spec(spec, f"{store.path}", grants=grants))
        except (UsageError, trust.UntrustedTarget):  # not installed here: its rows still show, without its hooks
            continue
        out[target.name] = (spec, target)
    return out


def stored_specs(store: Store, grants: Iterable[str]) -> list[str]:
    """The specs a stored campaign runs again (``--resume``): each installed here or named by the user with
    ``--target``; a store naming any other code is refused, in one line that says how to trust it."""
    try:
        recorded = store.meta().get("targets", [])
        return [trust.trusted_spec(spec, f"the campaign in {store.directory}", grants=grants) for spec in recorded]
    except (StoreError, trust.UntrustedTarget) as exc:
        raise UsageError(str(exc)) from None


def system_version(target: Target) -> str:
    """The version of a target's system under test: its required packages that are installed."""
    found = []
    for name in target.requires:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except (metadata.PackageNotFoundError, ValueError):
            pass
    return ", ".join(found)


@dataclass(frozen=True)
class CampaignSettings:
    """Everything one campaign runs with, built once (by the CLI, the nightly or a Python user) and handed to
    ``run_campaign``. ``resume=True`` continues the campaign in ``out`` with its stored seed, shard, cases and
    targets: leave those unset (a ``module:attr`` target may be named again, to allow its import)."""

    out: str | Path = DEFAULT_OUT
    targets: tuple[str, ...] = ()  # target names and module:attr specs; none: DEFAULT_TARGETS
    seed: int | None = None  # None: 0
    shard: Shard | None = None  # None: the whole campaign (1/1)
    cases: int | None = None  # cases per target; None: until the budget ends
    budget: float | None = None  # seconds; None: DEFAULT_BUDGET_S unless cases is given
    jobs: int = 1
    timeout: float | None = None  # per case; None: DEFAULT_TIMEOUT_S (SANITIZED_TIMEOUT_S sanitized) or the stored one
    memory_limit: int | None = None  # heap per worker, bytes
    batch: int | None = None  # the most cases one worker call takes; None: each target's own limit
    sanitize: str | None = None  # a compute-sanitizer tool every target's system under test runs under
    reduce: bool = False  # reduce each bucket's representative afterwards
    reduce_tries: int = 200
    reduce_skip: frozenset[str] = frozenset()  # buckets left unreduced: a reduced reproducer of each is on file
    resume: bool = False
    force: bool = False  # replace a campaign already in ``out``
    quiet: bool = False  # no progress bar

    def __post_init__(self) -> None:
        if isinstance(self.targets, str):
            raise TypeError("CampaignSettings.targets is a tuple of names, not a string")
        if self.resume:  # named as the command line's options, which build these settings
            changed = [f"--{name.replace('_', '-')}" for name in ("seed", "shard", "cases", "sanitize", "memory_limit")
                       if getattr(self, name) is not None]
            changed += ["--targets"] * any(":" not in t for t in self.targets) + ["--force"] * self.force
            if changed:
                raise UsageError(f"{', '.join(changed)} cannot change a resumed campaign (it runs with its stored "
                                 f"settings): drop {'them' if len(changed) > 1 else 'it'}, or start a new campaign "
                                 "with another --out")

    def named_targets(self) -> list[str]:
        """The targets named (default: every CPU target), each under ``sanitize``'s tool where one is given."""
        named = list(self.targets)
        tool = self.sanitize
        if tool:  # every target's system under test under compute-sanitizer (gpu/sanitizer.py)
            named = [n if registry.sanitized_parts(n) or n.endswith(f"+{tool}") else
                     registry.sanitized_spec(n, tool) if ":" in n else f"{n}+{tool}"
                     for n in (named or DEFAULT_TARGETS.split(","))]
        return named

    def resume_command(self) -> str:
        """The command that continues this campaign (naming again the targets named as module:attr)."""
        specs = [t for t in self.named_targets() if ":" in t]
        return f"layoutfuzz run --out {self.out} --resume" + "".join(f" --target {s}" for s in specs)


def open_store(directory: str | Path) -> Store:
    """An existing campaign's store, its settings checked (a store that is not a valid campaign is refused)."""
    try:
        store = Store(directory, create=False)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        store.meta()
    except StoreError as exc:
        store.close()
        raise UsageError(str(exc)) from None
    return store


def prepare_store(settings: CampaignSettings) -> tuple[Store, dict[str, Any]]:
    """The store of ``settings.out``: resumed, replaced (``force``) or new, with the campaign's stored settings.

    Settings are checked before anything is written: a refused command leaves no folder or store behind."""
    out = Path(settings.out)
    specs = None if settings.resume else target_specs(settings.named_targets())
    made = not out.exists()
    lock = DirectoryLock(out)  # first: nothing is read or deleted while another run writes here
    try:
        lock.acquire()
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        store, meta = _open_campaign(settings, out, holds_campaign(out), specs)
    except BaseException:
        lock.release()
        if made:  # nothing of this command's is left to block the corrected one
            lock.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    store.lock = lock
    return store, meta


def holds_campaign(out: Path) -> bool:
    """Whether ``out`` holds a campaign: a store with settings or outcomes (a store left empty by a run that stopped
    before it began is not one, and is replaced without --force). A store that cannot be read counts as one."""
    path = out / DB_NAME
    if not path.exists():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            return any(db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() for table in ("campaign", "outcomes"))
    except sqlite3.Error:
        return True


def _open_campaign(settings: CampaignSettings, out: Path, existing: bool,
                   specs: list[str] | None) -> tuple[Store, dict[str, Any]]:
    if settings.resume:
        if not existing:
            raise UsageError(f"nothing to resume in {out}: it holds no campaign")
        store = open_store(out)
        try:
            meta = store.meta()
            if not meta.get("targets"):
                raise UsageError(f"{out / DB_NAME} holds no campaign settings to resume")
            meta["targets"] = stored_specs(store, settings.named_targets())
        except BaseException:
            store.close()
            raise
        return store, meta
    if existing:
        if not settings.force:
            raise UsageError(
                f"{out} already holds a campaign: add --resume to continue it, --force to replace it, "
                "or --out to write elsewhere"
            )
        for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", "reports"):
            path = out / name
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    store = Store(out)
    meta = {
        "targets": specs,
        "seed": settings.seed if settings.seed is not None else 0,
        "shard": str(settings.shard if settings.shard is not None else Shard()),
        "cases": settings.cases,
        "timeout_s": settings.timeout if settings.timeout is not None else
        SANITIZED_TIMEOUT_S if settings.sanitize else DEFAULT_TIMEOUT_S,
        "memory_limit": settings.memory_limit,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    store.set_meta(meta)
    return store, meta


UNSUPPORTED_REPORTS = 3  # report files per root cause of unsupported cases (each case is a row all the same)


class Recorder:
    """Stores results as they arrive, writes a report for each finding (diverge, crash, timeout, error) and for the
    first UNSUPPORTED_REPORTS cases of each reason a case is unsupported, shows progress.

    Results are stored together at most every ``FLUSH_S`` (and by ``flush``, which the campaign calls at its end,
    interrupted or not): a target that crashes on every fourth case sends them one at a time, and each transaction
    flushes its reports to disk (2.6 ms a crash on a 2-core CPU). A campaign killed outright loses the results of
    that last fraction of a second, rows and reports alike, and ``--resume`` runs those cases again."""

    FLUSH_S = 0.25
    FLUSH_ROWS = 512

    def __init__(self, store: Store, specs: dict[str, str], versions: dict[str, dict[str, str]], progress) -> None:
        self.store, self.specs, self.versions, self.progress = store, specs, versions, progress
        self.counts: Counter[str] = Counter()
        self.unsupported: Counter[str] = Counter()  # per bucket: a refused input is no finding, a file each would flood
        self.health = Health()
        self.stopped: set[str] = set()  # targets found broken: no more of their cases are started
        self._pending: list[tuple] = []
        self._flushed = time.monotonic()

    def flush(self) -> None:
        """Stores the results held since the last flush (one transaction for all of them), each report first."""
        if self._pending:
            self.store.record_many(self._pending)
            self._pending = []
        self._flushed = time.monotonic()

    def __call__(self, results: list[Result]) -> None:
        """Takes results: stored now if ``FLUSH_S`` has passed since the last flush, else with the next."""
        rows = []
        for result in results:
            report = None
            signature, bucket = root_cause_and_bucket(result)
            if result.outcome is Outcome.UNSUPPORTED:
                self.unsupported[bucket] += 1
            if result.outcome is not Outcome.PASS and self.unsupported[bucket] <= UNSUPPORTED_REPORTS:
                path = Path(self.store.directory, "reports", report_name(result.case))
                spec = self.specs.get(result.case.target, result.case.target)
                report = build_report(result, signature, bucket, self.versions.get(result.case.target, {}), spec,
                                      replay_command(path, result.case.target, spec))
            rows.append((result, bucket, report, signature))
            self.counts[result.outcome.value] += 1
            self._check(result.case.target, result.outcome.value, signature)
        self._pending.extend(rows)
        if len(self._pending) >= self.FLUSH_ROWS or time.monotonic() - self._flushed >= self.FLUSH_S:
            self.flush()
        self._show(len(results))

    def stored(self, passes: list[StoredPasses]) -> None:
        """Counts passes the workers stored themselves (``harness.stored_passes``)."""
        count = sum(p.cases for p in passes)
        self.counts[Outcome.PASS.value] += count
        for stored in passes:
            self.health.passed(stored.target, stored.cases)
        self._show(count)

    def _check(self, target: str, outcome: str, signature: str | None) -> None:
        """Stops a target whose first cases all end in one harness error (``harness.health``), saying so once."""
        broken = self.health.see(target, outcome, signature or "")
        if broken:
            self.stopped.add(target)
            print(f"\n{broken}", file=sys.stderr)

    def running(self, target: str, indices: Iterable[int]) -> Iterator[int]:
        """``indices`` until ``target`` is stopped as broken."""
        return itertools.takewhile(lambda _: target not in self.stopped, indices)

    def _show(self, finished: int) -> None:
        if self.progress is not None:
            self.progress.update(finished)
            self.progress.set_postfix_str(
                " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()) if k != "pass"), refresh=False
            )


def unrecorded(target: str, seed: int, indices: Iterable[int], done: set[tuple[str, int, int]]) -> Iterator[int]:
    """The case indices of ``target`` that the store has not recorded yet, in order (what ``--resume`` still runs).

    A function of its own: each target's filter is bound to that target's name when it is made, never to a loop
    variable read later."""
    return (index for index in indices if (target, seed, index) not in done)


def nondeterministic_index(target: Target, seed: int, indices, sample: int = 3) -> int | None:
    """The first of ``sample`` case indices whose params differ between two draws (None: all agree)."""
    for _, index in zip(range(sample), indices):
        try:
            if make_case(target, seed, index).to_json() != make_case(target, seed, index).to_json():
                return index
        except Exception:  # a generator that fails is recorded as an error when the case runs
            return None
    return None


@dataclass(frozen=True)
class Campaign:
    """What one run of a campaign left: where, its tables, buckets, outcome counts."""

    directory: Path
    targets: tuple[tuple[str, Target], ...]
    table: pd.DataFrame
    buckets: pd.DataFrame
    counts: Counter
    elapsed_s: float
    interrupted: bool
    side_by_side: pd.DataFrame | None = None  # targets of one case model compared case by case (side-by-side.md)

    @property
    def findings(self) -> int:
        return sum(self.counts[o] for o in ("diverge", "crash", "timeout", "error"))

    def summary(self) -> str:
        n = sum(self.counts.values())
        what = ", ".join(f"{self.counts[o]} {o}" for o in OUTCOMES if self.counts[o])
        return f"{n} cases in {self.elapsed_s:.1f} s ({n / max(self.elapsed_s, 1e-9):.0f}/s): {what or 'none'}"


def run_campaign(settings: CampaignSettings) -> Campaign:
    """Runs (or resumes) the campaign ``settings`` describe, records everything, writes the tables, and
    with ``settings.reduce`` reduces each bucket's representative (reduce, then bucket)."""
    store, meta = prepare_store(settings)
    try:
        specs = list(meta["targets"])
        targets = [(spec, load_target(spec)) for spec in specs]
        seed, shard, cases = int(meta["seed"]), Shard.parse(meta["shard"]), meta.get("cases")
        budget = settings.budget if settings.budget is not None else (None if cases else DEFAULT_BUDGET_S)
        env = environment_versions()
        versions = {target.name: env | dict(target.versions()) for _, target in targets}
        recorder = Recorder(store, specs_by_name(targets), versions, None)
        runnable = []
        done = store.recorded()
        first = next(shard.indices(cases), None)
        for spec, target in targets:
            availability = target.availability()
            if availability.available:
                runnable.append((spec, target))
                continue
            print(f"{target.name}: unsupported here: {availability.reason}", file=sys.stderr)
            if first is not None and (target.name, seed, first) not in done:
                case = make_case(target, seed, first)
                recorder([Result(case, target.family(case), Outcome.UNSUPPORTED, availability.reason)])
        recorder.flush()

        for _, target in runnable:
            differs = nondeterministic_index(target, seed, shard.indices(cases))
            if differs is not None:
                print(f"{target.name}: generate is not deterministic: case {target.name}/{seed}/{differs} differs between two "
                      "draws, so its cases cannot be reproduced from their ids", file=sys.stderr)
        total = None if cases is None else len(range(shard.index - 1, cases, shard.count)) * len(runnable)
        already = sum(1 for (t, s, _) in done if s == seed and t in {x.name for _, x in runnable})
        what = f"{len(runnable)} target(s), seed {seed}, shard {shard}, " + (
            f"{cases} cases" if cases else "no case limit") + (f", budget {budget:g} s" if budget else "")
        print(f"layoutfuzz: {what}, {settings.jobs} worker(s) -> {store.directory}", file=sys.stderr)
        interactive = sys.stderr.isatty()  # in CI logs: a progress line every 30 s instead of a live bar
        progress = tqdm(total=total, initial=already if total else 0, unit=" cases", disable=settings.quiet,
                        file=sys.stderr, dynamic_ncols=interactive, mininterval=0.1 if interactive else 30)
        recorder.progress = progress
        batch = settings.batch
        shares = [share(spec, target, seed, recorder.running(target.name, unrecorded(target.name, seed, shard.indices(cases), done)), batch)
                  for spec, target in runnable]
        deadline = time.monotonic() + budget if budget else None
        started = time.monotonic()
        interrupted = False
        timeout = settings.timeout if settings.timeout is not None else float(meta.get("timeout_s", DEFAULT_TIMEOUT_S))
        try:
            run_cases(shares, recorder, settings.jobs, timeout, deadline, meta.get("memory_limit"), (str(store.path), recorder.stored))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            recorder.flush()
            progress.close()
        elapsed = time.monotonic() - started
        table = pass_rate_table(store.counts(), store.metric_rows())
        write_tables(table, store.directory)
        buckets = bucket_table(store.frame(PROBLEMS))
        to_reduce = buckets[~buckets["bucket"].isin(settings.reduce_skip)] if not buckets.empty else buckets
        if settings.reduce and not to_reduce.empty and not interrupted:
            on_file = len(buckets) - len(to_reduce)
            print(f"reducing the representatives of {len(to_reduce)} bucket(s)"
                  + (f" ({on_file} more have a reduced reproducer on file)" if on_file else "") + "...", file=sys.stderr)
            reduce_representatives(store, to_reduce, specs_by_name(targets), timeout, settings.reduce_tries, settings.jobs)
        write_atomically(store.directory / "buckets.md", render(buckets.drop(columns=["report"]), "md") + "\n")
        groups = model_groups({t.name: t.case_model for _, t in targets})
        compared = side_by_side(store.db, groups) if groups else None
        if compared is not None:
            write_atomically(store.directory / "side-by-side.md", render(compared, "md") + "\n")
    finally:
        store.close()  # and its lock: a failed run (a full disk, ...) leaves the campaign resumable
    return Campaign(store.directory, tuple(targets), table, buckets, recorder.counts, elapsed, interrupted, compared)


# ---- reduction ---------------------------------------------------------------------------------


def reduced_path(report_or_case: Path) -> Path:
    """Where the reduced case of a report or case file goes: beside it, ``NAME.reduced.json``."""
    return report_or_case.with_name(report_or_case.name.removesuffix(".json") + ".reduced.json")


def save_reduction(done: Reduction, case_file: Path, report_file: Path | None, replay: str) -> None:
    """Writes the reduced case as a case file; a report keeps its original case and gains the reduced
    one, what it gave (for pictures of it) and the command that replays it."""
    reduced = done.reduced
    write_atomically(case_file, json.dumps(reduced.to_dict(), indent=1, sort_keys=True) + "\n")
    if report_file is not None:
        report = json.loads(report_file.read_text())
        report.update(
            reduced_case=reduced.to_dict(), reduced_case_file=case_file.name, reduced_replay=replay,
            reduced_fixpoint=done.fixpoint, reduced_signature=done.signature,
            reduced_expected=bounded(done.result.expected, replay), reduced_observed=bounded(done.result.observed, replay),
            reduced_mismatches=list(done.result.mismatches), reduced_detail=done.result.detail[-4000:],
        )
        write_atomically(report_file, json.dumps(report, indent=2, sort_keys=True) + "\n")


def replay_command(case_file: Path, target: str, spec: str) -> str:
    """The one command that replays a case file (naming the target spec unless it is installed as a target)."""
    installed = trust.installed_spec(spec, target) == spec
    return f"layoutfuzz reproduce {case_file}" + ("" if installed else f" --target {spec}")


def reduce_representatives(store: Store, buckets: pd.DataFrame, specs: dict[str, str], timeout: float,
                           max_tries: int, jobs: int = 1) -> None:
    """Reduces each bucket's representative: its report gains ``reduced_case`` and a case file
    ``reports/NAME.reduced.json`` is written beside it, with the command that replays it."""
    with Runner(jobs=jobs, timeout_s=timeout) as runner:
        for row in buckets.itertuples():
            found = store.find(row.representative)
            spec = specs.get(row.target, row.target)
            if found is None or not found[1]:
                continue
            case, report_path = found
            done = reduce_case(spec, load_target(spec), case, runner, max_tries)
            if done is None:  # it passed on this run: flaky, left as it was
                continue
            case_file = reduced_path(Path(report_path))
            save_reduction(done, case_file, Path(report_path), replay_command(case_file, row.target, spec))
