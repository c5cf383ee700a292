"""Inside a worker process: one batch of cases at a time, each result written to the batch's progress file.

A worker is forked from the fork server (``harness.pool``, ``harness.forkserver``) and runs ``run_batch``; the parent
(``harness.runner``) reads the progress file back, so that a crash or a hang costs only the case(s) causing it.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness import registry
from layoutfuzz.harness.batching import ProgressFile, cases_of
from layoutfuzz.harness.profiling import profiled
from layoutfuzz.harness.stored_passes import store_passes
from layoutfuzz.harness.target import Target, Unsupported, batched
from layoutfuzz.reports.bounded import clipped, summarised, to_jsonable
from layoutfuzz.reports.outcome import Outcome

DETAIL_LIMIT = 16 * 1024  # characters of a result's detail (crash output, traceback) kept
MISMATCH_LIMIT = 500  # characters of each first-mismatch line kept
VALUE_LIMIT = 1 << 20  # characters of JSON of an expected or observed value sent back from a worker


def _init_worker(log_dir: str, memory_limit: int | None = None, warm: tuple[str, ...] = ()) -> None:
    """Sends the worker's stdout and stderr to a file of its own, read back if it crashes, imports what the targets
    ``warm`` names need (``worker_imports``) and starts what they begin in each worker (``Target.warm_up_worker``).

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
    targets = []
    for spec in warm:
        try:
            targets.append(registry.load(spec))
        except Exception:  # noqa: BLE001  its first case meets it, and says so
            pass
    import_ahead(worker_imports(targets))  # on this thread, before any other starts: none can race it on a module
    for target in targets:
        try:
            target.warm_up_worker()
        except Exception:  # noqa: BLE001  the first case meets it, and says so
            pass


def worker_imports(targets: Iterable[Target]) -> tuple[str, ...]:
    """The modules a worker imports before its first case: every target's ``preload`` and ``imports``, one union,
    sorted, so that the order is the same whichever target a campaign names first."""
    return tuple(sorted({module for target in targets for module in (*target.preload, *target.imports)}))


def import_ahead(modules: Iterable[str]) -> None:
    """Imports ``modules`` in order on this thread; a module that fails is left to the first case that needs it (which
    fails, and says why, in its own outcome). The fork server imported each ``preload`` already, where it could."""
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001  as the fork server's own imports (harness.forkserver_warm)
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


def _write(progress: ProgressFile, k: int, case: Case, family: str, result: dict[str, Any], keep_values: bool) -> None:
    """Writes a case's result; its expected and observed values are made JSON only where they are kept: a
    campaign keeps none of a pass (a 24 KiB window a case, at thousands of cases a second, is most of the work)."""
    values = result.pop("_values", None)
    if values is not None and (keep_values or result["outcome"] != Outcome.PASS.value):
        result["expected"], result["observed"] = (summarised(to_jsonable(v), VALUE_LIMIT) for v in values)
    progress.result(k, {"case_json": case.to_json(), "family": family, **result})
