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
from collections.abc import Iterable
from multiprocessing import spawn
from multiprocessing.context import BaseContext

PRELOAD_ENV = "LAYOUTFUZZ_PRELOAD"  # the modules the server imports, read by harness.forkserver_warm
WARM_ENV = "LAYOUTFUZZ_WARM"  # the target specs whose ``warm_up`` the server runs, after the imports
MAIN_ENV = "LAYOUTFUZZ_MAIN"  # the parent's main module, "name:MODULE" or "path:FILE"


def context(preload: Iterable[str] = (), warm: Iterable[str] = ()) -> BaseContext:
    """The start method workers use: the fork server, importing ``preload`` ahead when it starts and then running
    the ``warm_up`` of the targets ``warm`` names (the server of this process starts with its first worker; later
    lists add nothing)."""
    ctx = multiprocessing.get_context("forkserver")
    os.environ[PRELOAD_ENV] = ",".join(dict.fromkeys(("layoutfuzz.harness.runner", *preload)))
    os.environ[WARM_ENV] = ",".join(dict.fromkeys(warm))
    # multiprocessing runs the parent's main module again in every child (the ``layoutfuzz`` script:
    # harness.cli and pandas, seconds per worker); the server runs it once instead (its own "__main__"
    # preload never does: it looks for a key that get_preparation_data does not write)
    data = spawn.get_preparation_data("layoutfuzz")
    main = ("name:" + data["init_main_from_name"] if "init_main_from_name" in data
            else "path:" + data.get("init_main_from_path", ""))
    os.environ[MAIN_ENV] = main
    ctx.set_forkserver_preload(["layoutfuzz.harness.forkserver_warm"])
    return ctx
