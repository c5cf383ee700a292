"""Running cases in isolated worker processes, and campaigns of them.

Cases run in batches in worker processes forked from a warm fork server (``harness.pool``,
``harness.forkserver``), each running ``harness.worker.run_batch``: an abort, a segfault or a hang of the system
under test kills or stalls only that worker, is recorded as ``crash`` (with the signal and the last lines the worker
printed) or ``timeout`` of the case(s) causing it (``harness.batching``), and the campaign goes on.
"""

from __future__ import annotations

import itertools
import os
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness import registry
from layoutfuzz.harness.batching import BATCH_SECONDS, Batch, BatchSize, Progress, StoredPasses, cases_of
from layoutfuzz.harness.pool import Died, Finished, WorkerPool
from layoutfuzz.harness.scratch import memory_root
from layoutfuzz.harness.target import Target
from layoutfuzz.harness.worker import DETAIL_LIMIT, _init_worker, run_batch
from layoutfuzz.reports.bounded import clipped
from layoutfuzz.reports.outcome import Outcome, Result, result_of
from layoutfuzz.reports.signatures import native_fatal_lines

WORKER_LOG_LINES = 20
LOG_TAIL_BYTES = 64 * 1024  # of a crashed worker's output, read back


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (1-based) of ``count``: the case indices congruent to index-1 mod count."""

    index: int = 1
    count: int = 1

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            i, n = (int(x) for x in text.split("/"))
        except ValueError:
            raise ValueError(f"bad shard {text!r}: expected I/N, e.g. 1/4") from None
        if not 1 <= i <= n:
            raise ValueError(f"bad shard {text!r}: need 1 <= I <= N")
        return cls(i, n)

    def indices(self, limit: int | None) -> Iterator[int]:
        k = self.index - 1
        while limit is None or k < limit:
            yield k
            k += self.count

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass
class _Pending:
    batch: Batch
    keep_values: bool
    progress: Path
    started: float = 0.0  # time.monotonic() when a worker took it
    hung: bool = False  # killed for making no progress within the timeout


@dataclass
class Runner:
    """Isolated workers forked from a warm fork server (``harness.pool``); ``submit`` cases or batches
    of them, ``results`` as they finish. A worker that dies or hangs costs only the case(s) that cause
    it (``harness.batching``), and is replaced by a fork of the server in milliseconds."""

    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout_s: float = 30.0
    memory_limit: int | None = None  # bytes of heap per worker (RLIMIT_DATA); None: no limit
    preload: tuple[str, ...] = ()  # modules the fork server imports ahead (see harness.forkserver)
    warm: tuple[str, ...] = ()  # target specs whose warm_up the fork server runs after the imports (and warm_up_worker each worker)
    store: str | None = None  # a campaign's database: workers store plain passes of batches there (harness.stored_passes)
    _stored: list = field(default_factory=list)  # StoredPasses entries not yet taken
    _log_dir: tempfile.TemporaryDirectory | None = None
    _pool: WorkerPool | None = None
    _queue: deque = field(default_factory=deque)  # batches waiting for a worker
    _running: dict = field(default_factory=dict)  # slot -> _Pending
    _batches: int = 0

    def __enter__(self) -> Runner:
        self._log_dir = tempfile.TemporaryDirectory(prefix="layoutfuzz-workers-", dir=memory_root(LOG_ROOM))
        self._pool = WorkerPool(self.jobs, _init_worker, (self._log_dir.name, self.memory_limit, self.warm), self.preload,
                                self.warm)
        return self

    def __exit__(self, *_: Any) -> None:
        assert self._pool is not None and self._log_dir is not None
        self._pool.close()
        self._log_dir.cleanup()

    def take_stored(self) -> list[StoredPasses]:
        """The passes workers stored in the campaign's database themselves since the last call."""
        stored, self._stored = self._stored, []
        return stored

    @property
    def in_flight(self) -> int:
        """Batches submitted and not yet answered."""
        return len(self._queue) + len(self._running)

    def submit(self, spec: str, case: Case, family: str) -> None:
        """One case, answered with its expected and observed values whatever its outcome."""
        self.submit_batch(Batch(spec, case.seed, (case,), (family,)), keep_values=True)

    def submit_batch(self, batch: Batch, keep_values: bool = False) -> None:
        """Cases for one worker call; ``keep_values``: a pass keeps its expected and observed values."""
        self._queue.append(_Pending(batch, keep_values, self._progress_path()))
        self._dispatch()

    def _progress_path(self) -> Path:
        assert self._log_dir is not None
        self._batches += 1
        return Path(self._log_dir.name, f"batch-{self._batches}.jsonl")

    def _dispatch(self) -> None:
        assert self._pool is not None
        for slot in self._pool.idle():
            if not self._queue:
                return
            item = self._queue.popleft()
            item.started = time.monotonic()
            self._running[slot] = item
            batch = item.batch
            self._pool.dispatch(slot, run_batch, (batch.spec, batch.seed, batch.payload(), str(item.progress), item.keep_values,
                                                  self.store))

    def results(self, wait_s: float | None = None) -> list[Result]:
        """Results of the cases finished within ``wait_s`` seconds (all pending if None)."""
        assert self._pool is not None
        out: list[Result] = []
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while self.in_flight:
            left = HANG_POLL_S if deadline is None else max(0.0, min(HANG_POLL_S, deadline - time.monotonic()))
            answered = [(event, self._running.pop(event.slot)) for event in self._pool.poll(left)]  # before any dispatch
            for event, item in answered:
                if isinstance(event, Finished):
                    out.extend(self._finished(item, event.error))
                else:
                    out.extend(self._after_failure(item, event))
            self._stop_hung()
            self._dispatch()
            if out or (deadline is not None and time.monotonic() >= deadline):
                break
        return out

    def _stop_hung(self) -> None:
        """Kills the worker of each batch whose running call has made no progress for ``timeout_s``."""
        assert self._pool is not None
        now = time.monotonic()
        for slot, item in self._running.items():
            try:
                last = max(item.started, now - (time.time() - item.progress.stat().st_mtime))
            except FileNotFoundError:
                last = item.started
            if now - last > self.timeout_s and not item.hung:
                item.hung = True
                self._pool.kill(slot)

    def drop_queued(self) -> None:
        """Forgets the batches no worker has taken yet."""
        self._queue.clear()

    def salvage(self) -> list[Result]:
        """The results already finished inside the batches in flight (on an interrupt: nothing finished is lost)."""
        out = []
        for item in self._running.values():
            progress = Progress.read(item.progress)
            out.extend(self._results(item.batch, progress))
        self._running.clear()
        self._queue.clear()
        return out

    def _finished(self, item: _Pending, error: str) -> list[Result]:
        batch = item.batch
        progress = Progress.read(item.progress)
        item.progress.unlink(missing_ok=True)
        out = self._results(batch, progress)
        missing = progress.unfinished(len(batch))  # an exception escaped run_batch: a harness bug
        detail = clipped(f"worker failure:\n{error or 'no answer'}", DETAIL_LIMIT)
        return out + [self._lost(batch, k, Outcome.ERROR, detail, 0.0) for k in missing]

    def _after_failure(self, item: _Pending, died: Died) -> list[Result]:
        """A batch whose worker died or hung: finished cases keep their results, a call of several cases
        that was running is bisected, the rest runs again; a single case's crash or timeout is its outcome."""
        batch = item.batch
        progress = Progress.read(item.progress)
        item.progress.unlink(missing_ok=True)
        elapsed = time.monotonic() - item.started
        done = self._results(batch, progress)
        unfinished = progress.unfinished(len(batch))
        left = set(unfinished)
        suspects = [k for k in (progress.running or range(len(batch))) if k in left]
        rest = [k for k in unfinished if k not in suspects]
        if rest:
            self.submit_batch(batch.part(rest), item.keep_values)
        if len(suspects) > 1:
            for half in batch.part(suspects).halves():
                self.submit_batch(half, item.keep_values)
        elif suspects and item.hung:
            done.append(self._lost(batch, suspects[0], Outcome.TIMEOUT, f"no answer within {self.timeout_s:g} s", elapsed))
        elif suspects:
            done.append(self._lost(batch, suspects[0], Outcome.CRASH, self._crash_detail(died), elapsed))
        assert self._log_dir is not None
        Path(self._log_dir.name, f"worker-{died.pid}.log").unlink(missing_ok=True)
        return done

    def _lost(self, batch: Batch, k: int, outcome: Outcome, detail: str, elapsed: float) -> Result:
        """The result of a case whose worker gave none (it crashed, hung or failed): its case and family as the
        worker makes them (``cases_of``), here in the parent."""
        target = registry.load(batch.spec)
        _, case, family, _ = next(cases_of(target, batch.seed, batch.part([k]).payload()))
        cause = (target.timeout_cause(case) if outcome is Outcome.TIMEOUT else
                 target.crash_cause(case, detail) if outcome is Outcome.CRASH else "")
        return Result(case, batch.families[k] or family, outcome, detail, signature=cause, duration_s=elapsed)

    def _results(self, batch: Batch, progress: Progress) -> list[Result]:
        """The results a progress file holds, in batch order; the cases the worker made are read back all at once.
        Passes the worker stored itself are kept for ``take_stored``."""
        self._stored.extend(progress.stored)
        entries = sorted(progress.results.items())
        texts = [data["case_json"] for k, data in entries if not isinstance(batch.items[k], Case)]
        made = iter(Case.from_json_many(texts))
        return [self._result(batch, k, data, batch.items[k] if isinstance(batch.items[k], Case) else next(made))
                for k, data in entries]

    def _result(self, batch: Batch, k: int, data: dict[str, Any], case: Case) -> Result:
        return result_of(case, batch.families[k] if batch.families[k] is not None else data["family"], data)

    def _crash_detail(self, died: Died) -> str:
        code = died.exitcode
        if code is not None and code < 0:
            try:
                what = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"killed by signal {-code}"
        else:
            what = f"worker exited with code {code}"
        tail = ""
        assert self._log_dir is not None
        path = Path(self._log_dir.name, f"worker-{died.pid}.log")
        if path.exists():
            with open(path, "rb") as log:  # only the end: a worker may have printed gigabytes
                log.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
                lines = log.read().decode(errors="replace").strip().splitlines()
            fatal = native_fatal_lines(lines[:-WORKER_LOG_LINES])[:3]  # said before a long faulthandler dump
            tail = "\n".join(clipped(line, 1000) for line in [*fatal, *lines[-WORKER_LOG_LINES:]])
        return clipped(what + (f"\n{tail}" if tail else ""), DETAIL_LIMIT)


HANG_POLL_S = 0.25  # how often the runner looks for a hung batch


@dataclass
class Share:
    """One target's part of a run: the cases still to submit (indices, or explicit cases), how many per
    worker call, and the worker time its cases took so far (what the fair budget shares out)."""

    spec: str
    target: Target
    seed: int
    items: Iterator[int | Case]
    size: BatchSize
    seconds: float = 0.0  # worker time of its finished cases
    cases: int = 0  # finished cases
    in_flight: int = 0  # cases submitted and not finished
    exhausted: bool = False

    @property
    def time_used(self) -> float:
        """Worker time so far, with the cases in flight at the mean time per case."""
        per_case = self.seconds / self.cases if self.cases else 0.0
        return self.seconds + self.in_flight * per_case + 1e-9 * self.in_flight  # ties go round the targets

    def next_batch(self) -> Batch | None:
        items = list(itertools.islice(self.items, self.size.size))
        if not items:
            self.exhausted = True
            return None
        self.in_flight += len(items)
        return Batch(self.spec, self.seed, tuple(items))

    def account(self, cases: int, seconds: float) -> None:
        """``cases`` finished, taking ``seconds`` of worker time together."""
        self.seconds += seconds
        self.cases += cases
        self.in_flight = max(0, self.in_flight - cases)
        self.size.observe(cases, seconds)


def share(spec: str, target: Target, seed: int, items: Iterable[int | Case], batch: int | None = None) -> Share:
    """A target's share of a run; ``batch``: the most cases per worker call (None: the target's ``max_batch``)."""
    limit = max(1, batch if batch is not None else target.max_batch)
    return Share(spec, target, seed, iter(items), BatchSize(limit, min(limit, 4), getattr(target, "batch_seconds", BATCH_SECONDS)))


def run_cases(
    shares: Sequence[Share],
    record: Callable[[list[Result]], None],
    jobs: int,
    timeout_s: float,
    deadline: float | None = None,
    memory_limit: int | None = None,
    store: tuple[str, Callable[[list[StoredPasses]], None]] | None = None,
) -> bool:
    """Runs the shares' cases until done or past ``deadline`` (time.monotonic); records every result. With a
    ``store`` (a campaign's database and what counts the passes stored there), workers store batches' plain passes
    in the database themselves, and the second gets them as ``StoredPasses`` entries instead of ``record`` results.

    The next batch is always the share's with the least worker time so far: a time budget is shared
    between targets by time, not by turn. At ``deadline`` no batch starts, and those running have
    ``DEADLINE_GRACE_S`` to finish: a run ends near its budget, not a per-case time limit after it. Returns True if all
    of it ran. Ctrl-C propagates after recording what finished, in flight included.
    """
    by_name = {s.target.name: s for s in shares}
    preload = tuple(dict.fromkeys(m for s in shares for m in (s.spec.partition(":")[0], *s.target.preload)))
    warm = tuple(s.spec for s in shares)
    with Runner(jobs=jobs, timeout_s=timeout_s, memory_limit=memory_limit, preload=preload, warm=warm,
                store=store[0] if store else None) as runner:
        try:
            while True:
                out_of_time = deadline is not None and time.monotonic() >= deadline
                if out_of_time:
                    runner.drop_queued()  # not started: left to a resumed campaign, as the cases never submitted are
                    if time.monotonic() >= deadline + DEADLINE_GRACE_S:
                        _leave_running(runner, record, store)
                        return False
                while not out_of_time and runner.in_flight < 2 * jobs:
                    active = [s for s in shares if not s.exhausted]
                    if not active:
                        break
                    batch = min(active, key=lambda s: s.time_used).next_batch()
                    if batch is not None:
                        runner.submit_batch(batch)
                if not runner.in_flight:
                    return all(s.exhausted for s in shares)
                results = runner.results(wait_s=0.5 if deadline is None else max(0.0, min(0.5, deadline + DEADLINE_GRACE_S - time.monotonic())))
                stored = runner.take_stored()
                finished: dict[str, list[float]] = {}  # target -> [cases, seconds]
                for name, cases, seconds in itertools.chain(((r.case.target, 1, r.duration_s) for r in results),
                                                            ((p.target, p.cases, p.duration_s) for p in stored)):
                    tally = finished.setdefault(name, [0, 0.0])
                    tally[0] += cases
                    tally[1] += seconds
                for name, (cases, seconds) in finished.items():
                    if name in by_name:
                        by_name[name].account(cases, seconds)
                if stored and store:
                    store[1](stored)
                if results:
                    record(results)
        except KeyboardInterrupt:
            _leave_running(runner, record, store)
            raise


LOG_ROOM = 256 << 20  # memory-backed room for the workers' logs and progress files, else they go to the temporary folder
DEADLINE_GRACE_S = 2.0  # how long past a budget the batches running at its end have to finish; then they are stopped


def _leave_running(runner: Runner, record: Callable[[list[Result]], None],
                   store: tuple[str, Callable[[list[StoredPasses]], None]] | None) -> None:
    """Records what the batches in flight finished and gives up the rest (stopped with the workers when the runner
    closes): an interrupt, or a budget whose end a slow case would otherwise stretch to the per-case time limit.
    The cases given up have no outcome, so a resumed campaign runs them."""
    salvaged = runner.salvage()
    if salvaged:
        record(salvaged)
    stored = runner.take_stored()
    if stored and store:
        store[1](stored)
