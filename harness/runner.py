"""Running cases in isolated worker processes, and campaigns of them.

Each case runs in a worker process (pebble's pool, spawn context): an abort, a segfault or a
hang of the system under test kills or stalls only that worker, is recorded as ``crash`` (with
the signal and the last lines the worker printed) or ``timeout``, and the campaign goes on.
"""

from __future__ import annotations

import faulthandler
import json
import multiprocessing
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebble import ProcessExpired, ProcessPool

from generators.case import Case
from generators.source import source_for
from harness import registry
from harness.compare import clipped, summarised, to_jsonable
from harness.target import Outcome, Target, Unsupported

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
    params = target.generate(source_for(target.name, seed, index))
    return Case(target.name, seed, index, json.loads(json.dumps(params)))


# ---- inside a worker ----------------------------------------------------------------------


def _init_worker(log_dir: str, memory_limit: int | None = None) -> None:
    """Sends the worker's stdout and stderr to a file of its own, read back if it crashes.

    Ctrl-C is the parent's to handle: workers ignore it and are stopped by the pool. Each worker
    leads a process group of its own, so that whatever the system under test starts (a compiler,
    a hung child) is ended with it (``Runner`` kills the group of every worker that is gone).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgrp()
    if memory_limit:  # the heap (RLIMIT_DATA), not the address space that CUDA and Triton reserve
        resource.setrlimit(resource.RLIMIT_DATA, (memory_limit, memory_limit))
    fd = os.open(os.path.join(log_dir, f"worker-{os.getpid()}.log"), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    faulthandler.enable()  # a fatal signal leaves the Python frames in the log: the crash's top frames


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


def evaluate(spec: str, case_json: str) -> dict[str, Any]:
    """Runs one case in this process: oracle, system under test, comparison."""
    _clear_worker_log()
    start = time.perf_counter()
    case = Case.from_dict(json.loads(case_json))
    result: dict[str, Any] = {}

    def finish(outcome: Outcome, detail: str = "", **extra: Any) -> dict[str, Any]:
        os._exit = _REAL_EXIT
        if "mismatches" in extra:
            extra["mismatches"] = [clipped(str(m), MISMATCH_LIMIT) for m in extra["mismatches"]]
        result.update(outcome=outcome.value, detail=clipped(str(detail), DETAIL_LIMIT), duration_s=time.perf_counter() - start,
                      **extra)
        return result

    phase = "loading the target"
    os._exit = _exit_during_case  # pebble reads a worker's exit status 0 as a normal end: the case would hang
    try:
        target = registry.load(spec)
        phase = "the oracle"
        expected = target.expected(case)
        result["expected"] = summarised(to_jsonable(expected), VALUE_LIMIT)
        phase = "the system under test"
        observed = target.observed(case)
        result["observed"] = summarised(to_jsonable(observed), VALUE_LIMIT)
        phase = "the target's metrics"
        result["metrics"] = {str(k): float(v) for k, v in target.metrics(case, observed).items()}
        phase = "the comparison"
        verdict = target.compare(case, expected, observed)
    except Unsupported as exc:
        return finish(Outcome.UNSUPPORTED, str(exc))
    except MemoryError:  # under --memory-limit: the case's, like any other way of running out of memory
        return finish(Outcome.CRASH, f"MemoryError in {phase}: the worker's memory limit was exceeded")
    except Exception:
        return finish(Outcome.ERROR, f"exception in {phase}:\n{traceback.format_exc(limit=8)}")
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, ... raised by target code: this case's, not the campaign's
        outcome = Outcome.CRASH if phase == "the system under test" else Outcome.ERROR
        return finish(outcome, f"{type(exc).__name__}({exc!r}) raised in {phase}:\n{traceback.format_exc(limit=8)}")
    return finish(
        Outcome.PASS if verdict.ok else Outcome.DIVERGE,
        verdict.note,
        mismatch_count=verdict.mismatch_count,
        mismatches=list(verdict.mismatches),
        signature=verdict.signature,
    )


# ---- in the parent ------------------------------------------------------------------------


@dataclass
class Runner:
    """A pool of isolated workers; ``submit`` cases, ``results`` as they finish.

    A pool that breaks (pebble's "All workers expired" when workers crash back to back, or an error
    inside the pool) is replaced by a fresh one and what was in flight runs again, at most
    ``RETRIES`` times per case; only then is the case an ``error``."""

    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout_s: float = 30.0
    memory_limit: int | None = None  # bytes of heap per worker (RLIMIT_DATA); None: no limit
    _log_dir: tempfile.TemporaryDirectory | None = None
    _pool: ProcessPool | None = None
    _pending: dict = field(default_factory=dict)
    _retries: dict = field(default_factory=dict)

    RETRIES = 2

    def __enter__(self) -> Runner:
        self._log_dir = tempfile.TemporaryDirectory(prefix="layoutfuzz-workers-")
        self._pool = self._new_pool()
        return self

    def _new_pool(self) -> ProcessPool:
        assert self._log_dir is not None
        return ProcessPool(
            max_workers=self.jobs,
            initializer=_init_worker,
            initargs=(self._log_dir.name, self.memory_limit),
            context=multiprocessing.get_context("spawn"),
        )

    def __exit__(self, exc_type, *_: Any) -> None:
        assert self._pool is not None and self._log_dir is not None
        if exc_type is None:
            self._pool.close()
        else:
            self._pool.stop()
        self._pool.join()
        self._end_groups(every=True)
        self._log_dir.cleanup()

    def _end_groups(self, every: bool = False) -> None:
        """Kills the process group of each worker that is gone (``every``: of all workers): what a
        crashed or timed-out system under test left running dies with its worker."""
        assert self._log_dir is not None
        for log in Path(self._log_dir.name).glob("worker-*.log"):
            pid = int(log.stem.split("-")[1])
            if not every and _alive(pid):
                continue
            _kill_group(pid)
            if not every:
                log.unlink(missing_ok=True)

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def submit(self, spec: str, case: Case, family: str) -> None:
        assert self._pool is not None
        try:
            future = self._pool.schedule(evaluate, args=(spec, case.to_json()), timeout=self.timeout_s)
        except RuntimeError:  # the pool is broken: a fresh one takes this case and what was in flight
            self._restart()
            future = self._pool.schedule(evaluate, args=(spec, case.to_json()), timeout=self.timeout_s)
        self._pending[future] = (spec, case, family, time.perf_counter())

    def _restart(self) -> None:
        """Replaces a broken pool; the cases in flight are submitted again."""
        assert self._pool is not None
        self._pool.stop()
        self._pool.join()
        self._pool = self._new_pool()
        pending, self._pending = list(self._pending.values()), {}
        for spec, case, family, _ in pending:
            self.submit(spec, case, family)

    def results(self, wait_s: float | None = None) -> list[Result]:
        """Results of the cases finished within ``wait_s`` seconds (all pending if None)."""
        if not self._pending:
            return []
        done, _ = wait(list(self._pending), timeout=wait_s, return_when=FIRST_COMPLETED)
        return [r for r in (self._collect(f) for f in done if f in self._pending) if r is not None]

    def _collect(self, future) -> Result | None:
        spec, case, family, started = self._pending.pop(future)
        elapsed = time.perf_counter() - started
        try:
            data = future.result()
        except FutureTimeout:
            self._end_groups()
            return Result(case, family, Outcome.TIMEOUT, f"no answer within {self.timeout_s:g} s", duration_s=elapsed)
        except ProcessExpired as exc:
            _kill_group(exc.pid)
            return Result(case, family, Outcome.CRASH, self._crash_detail(exc), duration_s=elapsed)
        except Exception as exc:  # the pool itself failed (a broken pool, pickling, ...)
            key = case.to_json()
            self._retries[key] = self._retries.get(key, 0) + 1
            if self._retries[key] <= self.RETRIES:
                self._pending[future] = (spec, case, family, started)  # back in flight, then all of it again
                self._restart()
                return None
            return Result(case, family, Outcome.ERROR, f"worker failure: {exc!r}", duration_s=elapsed)
        return Result(
            case,
            family,
            Outcome(data["outcome"]),
            data.get("detail", ""),
            data.get("expected"),
            data.get("observed"),
            data.get("mismatch_count", 0),
            tuple(data.get("mismatches", ())),
            data.get("signature", ""),
            data.get("duration_s", elapsed),
            data.get("metrics") or {},
        )

    def _crash_detail(self, exc: ProcessExpired) -> str:
        code = exc.exitcode
        if code is not None and code < 0:
            try:
                what = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"killed by signal {-code}"
        else:
            what = f"worker exited with code {code}"
        tail = ""
        assert self._log_dir is not None
        path = Path(self._log_dir.name, f"worker-{exc.pid}.log")
        if path.exists():
            with open(path, "rb") as log:  # only the end: a worker may have printed gigabytes
                log.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
                lines = log.read().decode(errors="replace").strip().splitlines()
            tail = "\n".join(clipped(line, 1000) for line in lines[-WORKER_LOG_LINES:])
            path.unlink(missing_ok=True)
        return clipped(what + (f"\n{tail}" if tail else ""), DETAIL_LIMIT)


def _kill_group(pid: int) -> None:
    """SIGKILL to the process group a worker led (it and whatever it started)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


@dataclass(frozen=True)
class Work:
    """One case to run, or a result already known without running it."""

    spec: str
    case: Case
    family: str
    known: Result | None = None


def plan(
    targets: Sequence[tuple[str, Target]], seed: int, shard: Shard, cases: int | None, skip: Callable[[str, int], bool]
) -> Iterator[Work]:
    """The campaign's cases, round-robin over targets, skipping those ``skip`` says are done."""
    for index in shard.indices(cases):
        for spec, target in targets:
            if skip(target.name, index):
                continue
            try:
                case = make_case(target, seed, index)
                family = target.family(case)
            except Exception:
                case = Case(target.name, seed, index, {})
                detail = f"exception generating the case:\n{traceback.format_exc(limit=8)}"
                yield Work(spec, case, "generate", Result(case, "generate", Outcome.ERROR, detail))
                continue
            yield Work(spec, case, family)


def run_cases(
    work: Iterator[Work],
    record: Callable[[Result], None],
    jobs: int,
    timeout_s: float,
    deadline: float | None = None,
    memory_limit: int | None = None,
) -> bool:
    """Runs ``work`` until done or past ``deadline`` (time.monotonic); records every result.

    Returns True if all of it ran. Ctrl-C propagates after recording what finished.
    """
    with Runner(jobs=jobs, timeout_s=timeout_s, memory_limit=memory_limit) as runner:
        exhausted = False
        while True:
            out_of_time = deadline is not None and time.monotonic() >= deadline
            while not exhausted and not out_of_time and runner.in_flight < 2 * jobs:
                item = next(work, None)
                if item is None:
                    exhausted = True
                elif item.known is not None:
                    record(item.known)
                else:
                    runner.submit(item.spec, item.case, item.family)
            if not runner.in_flight:
                return exhausted
            for result in runner.results(wait_s=0.5):
                record(result)
