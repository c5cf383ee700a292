"""Worker processes forked from the warm fork server, one batch each at a time.

Each worker is told its task over its own pipe and answers over it; the parent always knows which batch
each worker holds, so a worker that dies is that batch's crash, whenever it dies. (pebble's pool, used
before, loses that link when a worker dies before the pool has read its acknowledgement: it then
declares the whole pool broken, or leaves the task waiting for ever. At the millisecond worker
replacement the fork server gives, that happened every few hundred crashes.)
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from layoutfuzz.harness import forkserver


@dataclass(frozen=True)
class Finished:
    """A worker's answer to its task: ``error`` is the traceback of an exception that escaped the task."""

    slot: int
    error: str = ""


@dataclass(frozen=True)
class Died:
    """A worker that ended without answering: its pid and exit code (negative: the signal)."""

    slot: int
    pid: int
    exitcode: int | None


def _serve(conn: Connection, initializer: Callable[..., None], initargs: Sequence[Any]) -> None:
    """A worker's life: the initializer, then tasks (function, args) until ``None``. It dies with the fork server, and
    a process the task forked that returns from it ends there: only the worker answers."""
    if not forkserver.detach_worker():
        os._exit(1)
    worker = os.getpid()
    initializer(*initargs)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        function, args = task
        try:
            function(*args)
            answer = ""
        except Exception:
            answer = traceback.format_exc(limit=8)
        if os.getpid() != worker:
            os._exit(0)
        conn.send(answer)


class _Worker:
    def __init__(self, ctx: Any, initializer: Callable[..., None], initargs: Sequence[Any]) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, initializer, initargs), daemon=True)
        self.process.start()
        child.close()
        self.busy = False


class WorkerPool:
    """``size`` workers; ``dispatch`` a task to an idle one, ``poll`` for what finished or died (a dead
    worker is replaced at once), ``kill`` one that hangs."""

    def __init__(self, size: int, initializer: Callable[..., None], initargs: Sequence[Any], preload: Sequence[str] = (),
                 warm: Sequence[str] = ()) -> None:
        self._ctx = forkserver.context(preload, warm)
        self._initializer, self._initargs = initializer, tuple(initargs)
        self._workers = [self._start() for _ in range(size)]
        self._spare: _Worker | None = None  # started while the parent would wait anyway; takes a dead worker's slot
        self._open = True
        global _open_pools
        _open_pools += 1

    def _start(self) -> _Worker:
        return _Worker(self._ctx, self._initializer, self._initargs)

    def idle(self) -> list[int]:
        return [slot for slot, worker in enumerate(self._workers) if not worker.busy]

    def pid(self, slot: int) -> int:
        return self._workers[slot].process.pid or 0

    def dispatch(self, slot: int, function: Callable[..., Any], args: Sequence[Any]) -> None:
        worker = self._workers[slot]
        assert not worker.busy
        worker.busy = True
        try:
            worker.conn.send((function, tuple(args)))
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # it died idle: poll reports it, with this task

    def poll(self, timeout: float | None) -> list[Finished | Died]:
        """What the busy workers did within ``timeout`` seconds."""
        busy = {w.conn: slot for slot, w in enumerate(self._workers) if w.busy}
        sentinels = {self._workers[slot].process.sentinel: slot for slot in busy.values()}
        events: list[Finished | Died] = []
        if not busy:
            return events
        ready = wait([*busy, *sentinels], 0)
        if not ready:  # nothing to do but wait: start the next dead worker's replacement now (a fork server round trip)
            if self._spare is not None and not self._spare.process.is_alive():  # it died idle
                self._spare.process.join()
                self._spare.conn.close()
                self._spare = None
            if self._spare is None:
                self._spare = self._start()
            ready = wait([*busy, *sentinels], timeout)
        slots = sorted({busy[r] if r in busy else sentinels[r] for r in ready})
        for slot in slots:
            worker = self._workers[slot]
            try:
                if worker.conn.poll():
                    error = worker.conn.recv()
                    worker.busy = False
                    events.append(Finished(slot, error))
                    continue
            except (EOFError, OSError):  # its end of the pipe closed: it is exiting
                worker.process.join(5.0)
            if worker.process.is_alive():
                continue
            worker.process.join()
            pid = worker.process.pid or 0
            _kill_group(pid)  # what the system under test started dies with its worker
            events.append(Died(slot, pid, worker.process.exitcode))
            worker.conn.close()
            self._workers[slot], self._spare = self._spare or self._start(), None
        return events

    def kill(self, slot: int) -> None:
        """Ends a worker and everything it started (it leads its own process group); ``poll`` reports it."""
        pid = self.pid(slot)
        if pid:
            _kill_group(pid)

    def close(self, wait_s: float = 5.0) -> None:
        """Asks idle workers to end, ends the rest, and kills every worker's process group; the last pool open stops the
        fork server, which ends what the workers left (a child in a session of its own)."""
        if not self._open:
            return
        self._open = False
        try:
            self._close_workers(wait_s)
        finally:
            global _open_pools
            _open_pools -= 1
            if not _open_pools:
                forkserver.stop()

    def _close_workers(self, wait_s: float) -> None:
        if self._spare is not None:
            self._workers.append(self._spare)
            self._spare = None
        for worker in self._workers:
            if not worker.busy:
                try:
                    worker.conn.send(None)
                except OSError:
                    pass
        for worker in self._workers:
            worker.process.join(wait_s if not worker.busy else 0)
            if worker.process.pid:
                _kill_group(worker.process.pid)
            worker.process.join()
            worker.conn.close()


_open_pools = 0  # pools of this process not yet closed: they share its fork server


def _kill_group(pid: int) -> None:
    """SIGKILL to the process group a worker led (it and whatever it started)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
