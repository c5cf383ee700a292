"""Compiling GPU cases' kernels ahead, on a CPU: each case's Gluon kernel compiled by this process's
Triton into a folder of prebuilt kernels (``gpu.prebuilt``), each compile in a worker process (a
compiler that aborts takes only its worker), cached by content hash so that a re-run compiles only
what is new. The GPU machine then runs them with no Triton (``$LAYOUTFUZZ_KERNELS``)."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.prebuilt import CompiledKernel, kernel_path
from layoutfuzz.harness import registry
from layoutfuzz.reports.files import write_atomically


@dataclass(frozen=True)
class Job:
    """One case whose kernel is to be compiled."""

    spec: str
    case: Case


def filed_case(target: Any, case: Case) -> Case:
    """The case a target's kernel is compiled and filed for: its ``kernel_case`` (a case model's case as its system
    takes it, or ``Unsupported``), else the case itself."""
    kernel_case = getattr(target, "kernel_case", None)
    return kernel_case(case) if kernel_case else case


def _compile(spec: str, case: dict, folder: str) -> str:
    """In a worker: compile one case's kernel (unless filed already) and file it, under the case the target runs
    (``kernel_case``: a case model's case as its system takes it); "unsupported" where the system takes no such case."""
    from layoutfuzz.gpu.kernel_cache import scratch_triton_cache
    from layoutfuzz.gpu.prebuilt import variant_params
    from layoutfuzz.harness.target import Unsupported
    from layoutfuzz.harness.triton_compat.lowering import supports

    _log_to(_crash_log(folder, os.getpid()))  # what the compiler prints before it dies names the crash
    target = registry.load(spec)
    try:
        case = filed_case(target, Case.from_dict(case))
    except Unsupported:
        return "unsupported"
    states = []
    for variant in target.variants:
        if not supports(variant):
            continue  # this release has no such lowering: the campaign says unsupported
        path = kernel_path(folder, target.name, variant_params(case.params, variant))
        if path.exists():
            states.append("cached")
            continue
        with scratch_triton_cache():  # the folder keeps the kernel; Triton's own copy would only fill the disk
            kernel = target.compile(case, variant)
        write_atomically(path, kernel.to_json())
        states.append("rejected" if kernel.rejected else "compiled")
    return min(states, key=["rejected", "compiled", "cached"].index) if states else "unsupported"


def _crash_log(folder: str | Path, pid: int) -> Path:
    return Path(folder) / f".compile-{pid}.log"


def _log_to(path: Path) -> None:
    """Sends this worker's fd 2 to ``path``, emptied for the case about to compile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)


def _crash_message(folder: Path, pid: int | None) -> str:
    """The fatal error a crashed worker printed (an LLVM fatal error, an assertion), if its log holds one."""
    from layoutfuzz.reports.signatures import native_fatal_lines

    path = _crash_log(folder, pid or 0)
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    fatal = native_fatal_lines(lines)
    return fatal[0].strip() if fatal else ""


def compile_all(jobs: Iterable[Job], folder: Path, workers: int, timeout: float, quiet: bool = False) -> Counter:
    """Compiles every job's kernel into ``folder``; counts of compiled, cached, rejected and crashed.
    A compiler crash or hang is filed as a rejection that says so."""
    import triton
    from pebble import ProcessExpired, ProcessPool
    from tqdm import tqdm

    from layoutfuzz.gpu.prebuilt import variant_params

    jobs = list(jobs)
    counts: Counter = Counter()
    context = multiprocessing.get_context("spawn")
    with ProcessPool(max_workers=workers, context=context) as pool, \
            tqdm(total=len(jobs), unit=" kernels", disable=quiet, file=sys.stderr) as progress:
        futures = [(job, pool.schedule(_compile, (job.spec, job.case.to_dict(), str(folder)), timeout=timeout)) for job in jobs]
        for job, future in futures:
            try:
                counts[future.result()] += 1
            except (ProcessExpired, FutureTimeout) as exc:
                if isinstance(exc, ProcessExpired):
                    message = _crash_message(folder, exc.pid)
                    why = f"the compiler crashed (exit {exc.exitcode})" + (f": {message}" if message else "")
                else:
                    why = f"the compile took over {timeout:g} s"
                target = registry.load(job.spec)
                case = filed_case(target, job.case)
                for variant in target.variants:
                    write_atomically(kernel_path(folder, target.name, variant_params(case.params, variant)),
                                     CompiledKernel("?", triton.__version__, rejected=why).to_json())
                counts["crashed"] += 1
            progress.update()
    for log in Path(folder).glob(".compile-*.log"):
        log.unlink(missing_ok=True)
    return counts
