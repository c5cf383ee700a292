"""Running cases in isolated worker processes, and campaigns of them.

Cases run in batches in worker processes forked from a warm fork server (``harness.pool``,
``harness.forkserver``): an abort, a segfault or a hang of the system under test kills or stalls
only that worker, is recorded as ``crash`` (with the signal and the last lines the worker printed)
or ``timeout`` of the case(s) causing it (``harness.batching``), and the campaign goes on.
"""

from __future__ import annotations

import faulthandler
import itertools
import json
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import source_for
from layoutfuzz.harness import registry
from layoutfuzz.harness.batching import BATCH_SECONDS, Batch, BatchSize, Progress, ProgressFile, StoredPasses, cases_of
from layoutfuzz.harness.compare import clipped, summarised, to_jsonable
from layoutfuzz.harness.pool import Died, Finished, WorkerPool
from layoutfuzz.harness.profiling import profiled
from layoutfuzz.harness.scratch import memory_root
from layoutfuzz.harness.stored_passes import store_passes
from layoutfuzz.harness.target import Outcome, Target, Unsupported, batched

WORKER_LOG_LINES = 20
LOG_TAIL_BYTES = 64 * 1024  # of a crashed worker's output, read back
DETAIL_LIMIT = 16 * 1024  # characters of a result's detail (crash output, traceback) kept
MISMATCH_LIMIT = 500  # characters of each first-mismatch line kept
VALUE_LIMIT = 1 << 20  # characters of JSON of an expected or observed value sent back from a worker


@dataclass(frozen=True)
class Result:
    """The outcome of one case, with what a report needs to show and reproduce it."""

    case: Case
    family: str
    outcome: Outcome
    detail: str = ""
    expected: Any = None
    observed: Any = None
    mismatch_count: int = 0
    mismatches: tuple[str, ...] = ()
    signature: str = ""
    duration_s: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)  # per-case measurements (PTX counts, ...)


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


def make_case(target: Target, seed: int, index: int) -> Case:
    """Case ``index`` of ``target`` in the campaign with ``seed`` (deterministic)."""
    params = target.generate(source_for(target.case_model or target.name, seed, index))
    return Case(target.name, seed, index, params if target.plain_params or _plain(params) else json.loads(json.dumps(params)))


_PLAIN_SCALARS = (str, int, bool, type(None))


def _plain(value: Any) -> bool:
    """Whether ``value`` is already what its JSON reads back as (dicts of str keys, lists, str, int, bool, None: no tuple,
    float or subclass), so that a case's params need no round trip through JSON to be their canonical form."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    return kind in _PLAIN_SCALARS


# ---- inside a worker ----------------------------------------------------------------------


def _init_worker(log_dir: str, memory_limit: int | None = None, warm: tuple[str, ...] = ()) -> None:
    """Sends the worker's stdout and stderr to a file of its own, read back if it crashes, and starts what the
    targets ``warm`` names begin in each worker (``Target.warm_up_worker``).

    Ctrl-C is the parent's to handle: workers ignore it and are stopped by the pool. Each worker
    leads a process group of its own, so that whatever the system under test starts (a compiler,
    a hung child) is ended with it (``Runner`` kills the group of every worker that is gone).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgrp()
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))  # an abort is a row, not a core dump
    if memory_limit:  # the heap (RLIMIT_DATA), not the address space that CUDA and Triton reserve
        resource.setrlimit(resource.RLIMIT_DATA, (memory_limit, memory_limit))
    fd = os.open(os.path.join(log_dir, f"worker-{os.getpid()}.log"), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    faulthandler.enable()  # a fatal signal leaves the Python frames in the log: the crash's top frames
    for spec in warm:
        try:
            registry.load(spec).warm_up_worker()
        except Exception:  # noqa: BLE001  the first case meets it, and says so
            pass


EXIT_DURING_CASE = 71  # the status a worker ends with when target code calls os._exit(0) mid-case


def _exit_during_case(code: int = 0) -> None:
    """``os._exit`` while a case runs: says so in the worker's log, and never ends with status 0."""
    sys.stderr.flush()
    os.write(2, f"\nerror: os._exit({code}) called while the case ran\n".encode())
    _REAL_EXIT(code or EXIT_DURING_CASE)


_REAL_EXIT = os._exit


def _clear_worker_log() -> None:
    try:
        os.ftruncate(2, 0)
        os.lseek(2, 0, os.SEEK_SET)
    except OSError:
        pass


def _failed(outcome: Outcome, detail: str, start: float) -> dict[str, Any]:
    return {"outcome": outcome.value, "detail": clipped(str(detail), DETAIL_LIMIT), "duration_s": time.perf_counter() - start}


def _raised(exc: BaseException, phase: str, text: str) -> tuple[Outcome, str]:
    """The outcome and detail of a case whose ``phase`` raised ``exc`` (``text``: its traceback)."""
    if isinstance(exc, Unsupported):
        return Outcome.UNSUPPORTED, str(exc)
    if isinstance(exc, MemoryError):  # under --memory-limit: the case's, like any other way of running out of memory
        return Outcome.CRASH, f"MemoryError in {phase}: the worker's memory limit was exceeded"
    if isinstance(exc, Exception):
        return Outcome.ERROR, f"exception in {phase}:\n{text}"
    # SystemExit, KeyboardInterrupt, ... raised by target code: this case's, not the campaign's
    outcome = Outcome.CRASH if phase == "the system under test" else Outcome.ERROR
    return outcome, f"{type(exc).__name__}({exc!r}) raised in {phase}:\n{text}"


def _verdict(target: Target, case: Case, expected: Any, observed: Any, verdict: Any, start: float) -> dict[str, Any]:
    """The result of a case whose oracle and system under test answered (its values become JSON in ``_write``)."""
    result: dict[str, Any] = {"_values": (expected, observed)}
    try:
        result["metrics"] = {str(k): float(v) for k, v in target.metrics(case, observed).items()}
    except BaseException as exc:
        return result | _failed(*_raised(exc, "the target's metrics", traceback.format_exc(limit=8)), start)
    return result | {
        "outcome": (Outcome.PASS if verdict.ok else Outcome.DIVERGE).value,
        "detail": clipped(str(verdict.note), DETAIL_LIMIT),
        "mismatch_count": verdict.mismatch_count,
        "mismatches": [clipped(str(m), MISMATCH_LIMIT) for m in verdict.mismatches],
        "signature": verdict.signature,
        "duration_s": time.perf_counter() - start,
    }


def evaluate(target: Target, case: Case) -> dict[str, Any]:
    """Runs one case in this process: oracle, system under test, comparison."""
    start = time.perf_counter()
    phase = "the oracle"
    try:
        expected = target.expected(case)
        phase = "the system under test"
        observed = target.observed(case)
        phase = "the comparison"
        verdict = target.compare(case, expected, observed)
    except BaseException as exc:
        return _failed(*_raised(exc, phase, traceback.format_exc(limit=8)), start)
    return _verdict(target, case, expected, observed, verdict, start)


class _Raised:
    """An answer of a batch that is an exception, with its traceback."""

    def __init__(self, exc: BaseException, text: str) -> None:
        self.exc, self.text = exc, text


def _answers(batch_method: Callable, single: Callable, cases: list[Case], *more: list[Any]) -> list[Any]:
    """``batch_method(cases, *more)``, each exception entry as ``_Raised``; if the call raises, or answers
    the wrong number of cases, each case alone through ``single``."""
    try:
        answers = list(batch_method(cases, *more))
        if len(answers) != len(cases):
            raise ValueError(f"{batch_method.__qualname__} answered {len(answers)} of {len(cases)} cases")
        return [_Raised(a, "".join(traceback.format_exception(a, limit=8))) if isinstance(a, BaseException) else a
                for a in answers]
    except BaseException:
        out = []
        for i, case in enumerate(cases):
            try:
                out.append(single(case, *(m[i] for m in more)))
            except BaseException as exc:
                out.append(_Raised(exc, traceback.format_exc(limit=8)))
        return out


def evaluate_many(target: Target, cases: list[Case]) -> list[dict[str, Any]]:
    """Runs cases in this process through the target's batch methods: one oracle call, one system under test
    call and one comparison for all of them, with each case's outcome as ``evaluate`` gives it."""
    start = time.perf_counter()
    results: list[dict[str, Any] | None] = [None] * len(cases)

    def fail(live: list[int], answers: list[Any], phase: str) -> list[int]:
        for i, answer in zip(live, answers):
            if isinstance(answer, _Raised):
                results[i] = _failed(*_raised(answer.exc, phase, answer.text), start)
        return [i for i, answer in zip(live, answers) if not isinstance(answer, _Raised)]

    live = list(range(len(cases)))
    expected = _answers(target.expected_batch, target.expected, cases)
    live = fail(live, expected, "the oracle")
    observed_live = _answers(target.observed_batch, target.observed, [cases[i] for i in live])
    observed = dict(zip(live, observed_live))
    live = fail(live, observed_live, "the system under test")
    verdicts = _answers(target.compare_batch, target.compare, [cases[i] for i in live], [expected[i] for i in live],
                        [observed[i] for i in live])
    passed = set(fail(live, verdicts, "the comparison"))  # a set: thousands of cases a batch
    for i, verdict in zip(live, verdicts):
        if i in passed:
            results[i] = _verdict(target, cases[i], expected[i], observed[i], verdict, start)
    share = (time.perf_counter() - start) / max(len(cases), 1)
    for result in results:
        assert result is not None
        result["duration_s"] = share
    return results  # type: ignore[return-value]


def run_batch(spec: str, seed: int, payload: list[Any], progress_path: str, keep_values: bool, store: str | None = None) -> int:
    """A worker's task: the cases of one batch, each result written to the progress file as it finishes; with a
    ``store`` (a campaign's database), a batched call's plain passes go there instead (``harness.stored_passes``).
    Profiled where ``LAYOUTFUZZ_PROFILE`` asks for it (``harness.profiling``)."""
    return profiled(_run_batch, spec, seed, payload, progress_path, keep_values, store)


def _leave_if_forked(worker: int) -> None:
    """Ends a process the system under test forked that returned from the case (its child): only the worker writes
    the case's result and answers the parent."""
    if os.getpid() != worker:
        _REAL_EXIT(0)


def _run_batch(spec: str, seed: int, payload: list[Any], progress_path: str, keep_values: bool, store: str | None) -> int:
    worker = os.getpid()
    progress = ProgressFile(progress_path)
    progress.running(range(len(payload)))  # until each case is under way: loading and generating
    os._exit = _exit_during_case  # a status 0 mid-case would read as a normal end: say what happened
    try:
        _clear_worker_log()
        try:
            target = registry.load(spec)
        except BaseException as exc:
            detail = _raised(exc, "loading the target", traceback.format_exc(limit=8))[1]
            for k, item in enumerate(payload):
                case = Case.from_dict(item) if isinstance(item, dict) else Case(spec, seed, item, {})
                _write(progress, k, case, "all", _failed(Outcome.ERROR, detail, time.perf_counter()), keep_values)
            return len(payload)
        live = []
        for k, case, family, error in cases_of(target, seed, payload):
            if error:
                _write(progress, k, case, family, _failed(Outcome.ERROR, error, time.perf_counter()), keep_values)
            else:
                live.append((k, case, family))
        if batched(target) and len(live) > 1:  # one call for all: a crash in it is bisected by the parent
            progress.running([k for k, _, _ in live])
            _clear_worker_log()
            answers = evaluate_many(target, [case for _, case, _ in live])
            _leave_if_forked(worker)
            plain = [i for i, answer in enumerate(answers) if answer["outcome"] == Outcome.PASS.value]
            if store is not None and not keep_values and plain:
                store_passes(store, [(live[i][1], live[i][2], answers[i]) for i in plain])
                progress.stored(target.name, [live[i][0] for i in plain], sum(answers[i]["duration_s"] for i in plain))
                stored = set(plain)
                live, answers = [x for i, x in enumerate(live) if i not in stored], [a for i, a in enumerate(answers) if i not in stored]
            for (k, case, family), answer in zip(live, answers):
                _write(progress, k, case, family, answer, keep_values)
        else:
            for k, case, family in live:
                progress.running([k])
                _clear_worker_log()
                result = evaluate(target, case)
                _leave_if_forked(worker)
                _write(progress, k, case, family, result, keep_values)
        return len(payload)
    finally:
        os._exit = _REAL_EXIT
        progress.close()


def result_of(case: Case, family: str, data: dict[str, Any]) -> Result:
    """The Result of a case's answer as ``_write`` puts it in a progress file (or ``evaluate`` gives it)."""
    return Result(case, family, Outcome(data["outcome"]), data.get("detail", ""), data.get("expected"), data.get("observed"),
                  data.get("mismatch_count", 0), tuple(data.get("mismatches", ())), data.get("signature", ""),
                  data.get("duration_s", 0.0), data.get("metrics") or {})


def _write(progress: ProgressFile, k: int, case: Case, family: str, result: dict[str, Any], keep_values: bool) -> None:
    """Writes a case's result; its expected and observed values are made JSON only where they are kept: a
    campaign keeps none of a pass (a 24 KiB window a case, at thousands of cases a second, is most of the work)."""
    values = result.pop("_values", None)
    if values is not None and (keep_values or result["outcome"] != Outcome.PASS.value):
        result["expected"], result["observed"] = (summarised(to_jsonable(v), VALUE_LIMIT) for v in values)
    progress.result(k, {"case_json": case.to_json(), "family": family, **result})


# ---- in the parent ------------------------------------------------------------------------


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
        _, case, family, _ = next(cases_of(registry.load(batch.spec), batch.seed, batch.part([k]).payload()))
        return Result(case, batch.families[k] or family, outcome, detail, duration_s=elapsed)

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
        from layoutfuzz.harness.signatures import native_fatal_lines  # it imports this module

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
