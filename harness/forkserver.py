"""The fork server that workers start from: warm, so that replacing a crashed worker costs a fork.

A spawned worker starts a Python and imports the target's libraries (Triton: about 0.36 s) before its
first case; a target that aborts often spent most of a campaign there. Python's ``forkserver`` start
method starts one single-threaded server that imports them once, and forks each worker from it. The
server never initialises CUDA (a process that did cannot fork safely): it only imports modules, and the
modules a target names in ``preload`` must not touch the device on import.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Iterable
from multiprocessing import spawn
from multiprocessing.context import BaseContext
from types import ModuleType

PRELOAD_ENV = "LAYOUTFUZZ_PRELOAD"  # the modules the server imports, read by harness.forkserver_warm
WARM_ENV = "LAYOUTFUZZ_WARM"  # the target specs whose ``warm_up`` the server runs, after the imports
MAIN_ENV = "LAYOUTFUZZ_MAIN"  # the parent's main module, "name:MODULE" or "path:FILE" ("cli-..." for the command line)
CLI = "layoutfuzz.harness.cli"


def context(preload: Iterable[str] = (), warm: Iterable[str] = ()) -> BaseContext:
    """The start method workers use: the fork server, importing ``preload`` ahead when it starts and then running
    the ``warm_up`` of the targets ``warm`` names (the server of this process starts with its first worker; later
    lists add nothing)."""
    ctx = multiprocessing.get_context("forkserver")
    os.environ[PRELOAD_ENV] = ",".join(dict.fromkeys(("layoutfuzz.harness.runner", *preload)))
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
