"""The fork server that workers start from: warm, so that replacing a crashed worker costs a fork.

A spawned worker starts a Python and imports the target's libraries (Triton: about 0.36 s) before its
first case; a target that aborts often spent most of a campaign there. Python's ``forkserver`` start
method starts one single-threaded server that imports them once, and forks each worker from it. The
server never initialises CUDA (a process that did cannot fork safely): it only imports modules, and the
modules a target names in ``preload`` must not touch the device on import.

No process outlives the campaign: the pool stops the server when it closes (``stop``); the server leads a process
group of its own, adopts what the workers' systems under test orphan (``harness.processes``) and, when it ends (its
parent closed the pipe it watches, or died), kills all of it and leaves with ``os._exit``, so that nothing of the
libraries it imported (nanobind's leak report) prints after the command. Each worker dies with the server and no
longer holds the server's pipe, so killing the parent, or its process group, ends everything.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import sys
import warnings
from collections.abc import Iterable
from multiprocessing import spawn
from multiprocessing.context import BaseContext
from types import ModuleType

from layoutfuzz.harness import processes

PRELOAD_ENV = "LAYOUTFUZZ_PRELOAD"  # the modules the server imports, read by harness.forkserver_warm
WARM_ENV = "LAYOUTFUZZ_WARM"  # the target specs whose ``warm_up`` the server runs, after the imports
MAIN_ENV = "LAYOUTFUZZ_MAIN"  # the parent's main module, "name:MODULE" or "path:FILE" ("cli-..." for the command line)
CLI = "layoutfuzz.harness.cli"
WORKER_MODULES = ("layoutfuzz.harness.pool", "layoutfuzz.harness.worker")  # what every worker runs: the server imports it first
UNEXPECTED_PID = "forkserver: waitpid returned unexpected pid"  # the server's warning for an orphan it adopted and reaped

_server_pid: int | None = None  # in the fork server and its workers: the server's pid (see ``serve_here``)


def context(preload: Iterable[str] = (), warm: Iterable[str] = ()) -> BaseContext:
    """The start method workers use: the fork server, importing ``preload`` ahead when it starts (after what every
    worker runs, sorted: in an order no target's place in the campaign changes) and then running the ``warm_up`` of the
    targets ``warm`` names (the server starts with the first worker after ``stop``; while it runs, later lists add
    nothing)."""
    ctx = multiprocessing.get_context("forkserver")
    os.environ[PRELOAD_ENV] = ",".join(dict.fromkeys((*WORKER_MODULES, *sorted(set(preload)))))
    os.environ[WARM_ENV] = ",".join(dict.fromkeys(warm))
    # multiprocessing runs the parent's main module again in every child (for a script of the user's, whose targets
    # the workers may need); the server runs it once instead (its own "__main__" preload never does: it looks for a
    # key that get_preparation_data does not write). Layoutfuzz's own command line defines nothing a worker needs: the
    # server only marks it as run (its import, pandas included, took the server 1.5 s on an H100 machine)
    data = spawn.get_preparation_data("layoutfuzz")
    how, main = (("name", data["init_main_from_name"]) if "init_main_from_name" in data
                 else ("path", data.get("init_main_from_path", "")))
    os.environ[MAIN_ENV] = f"{'cli-' if is_the_cli(sys.modules.get('__main__')) else ''}{how}:{main}"
    ctx.set_forkserver_preload(["layoutfuzz.harness.forkserver_warm"])
    return ctx


def is_the_cli(main: ModuleType | None) -> bool:
    """Whether ``main`` (a process's ``__main__``) is layoutfuzz's command line: ``python -m layoutfuzz.harness.cli``,
    or the ``layoutfuzz`` script, whose ``main`` is the command line's."""
    entry = getattr(main, "main", None)
    return getattr(getattr(main, "__spec__", None), "name", None) == CLI or getattr(entry, "__module__", None) == CLI


def serve_here() -> None:
    """Called in the fork server as it starts (``harness.forkserver_warm``): a process group of its own (a kill of the
    command's group leaves it to end the rest), a subreaper of what its workers orphan, reaped quietly."""
    global _server_pid
    _server_pid = os.getpid()
    try:
        os.setpgrp()
    except OSError:
        pass
    processes.adopt_orphans()
    warnings.filterwarnings("ignore", message=UNEXPECTED_PID)


def end_server() -> None:
    """The fork server's last act (an ``atexit`` handler, registered after the imports' own): kills its workers and
    every process they left, then leaves without the interpreter's finalisation, which the libraries it imported
    would print through (nanobind's leak report). A worker that inherited the handler ignores it."""
    if os.getpid() != _server_pid:
        return
    try:
        processes.end_children()
        sys.stderr.flush()
    finally:
        os._exit(0)


def detach_worker() -> bool:
    """Called in each worker as it starts: closes its copy of the end of the pipe whose closing ends the server (held,
    it kept a server whose parent died alive as long as the worker hung) and has the worker die with the server.
    False if the server is already gone."""
    server = multiprocessing.forkserver._forkserver  # type: ignore[attr-defined]
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None and _server_pid is not None:
        server._forkserver_alive_fd = None
        try:
            os.close(fd)
        except OSError:
            pass
    return processes.die_with_parent(_server_pid)


def stop() -> None:
    """Ends this process's fork server and reaps it, once it has ended whatever its workers left (``end_server``); the
    next worker starts a new one."""
    server = multiprocessing.forkserver._forkserver  # type: ignore[attr-defined]
    try:
        server._stop()
    except ChildProcessError:  # reaped elsewhere: forget it
        server._forkserver_pid = server._forkserver_address = None
    except (AttributeError, OSError):
        pass
