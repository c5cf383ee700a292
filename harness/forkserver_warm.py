"""Imported by the fork server alone, when it starts (see ``harness.forkserver``): the modules the
targets named, their targets loaded and warmed up (``Target.warm_up``), and Ctrl-C ignored, so that a worker
forked before it takes its own signal settings never prints a traceback of an interrupt that is the parent's to
handle; the server's own group and orphans (``forkserver.serve_here``) and its end (``forkserver.end_server``)."""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import signal
import sys
from importlib.machinery import ModuleSpec
from multiprocessing import spawn

from layoutfuzz.harness.forkserver import MAIN_ENV, PRELOAD_ENV, WARM_ENV, end_server, serve_here


def _in_fork_server() -> bool:
    return "multiprocessing.forkserver" in sys.modules and sys.argv == ["-c"]


if _in_fork_server():
    # the server's handlers, saved after this import, are what each forked worker starts with
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve_here()
    how, _, main = os.environ.get(MAIN_ENV, "").partition(":")
    try:  # as each child would (multiprocessing.spawn.prepare), so that the children find it done
        if how == "cli-name":  # marked as run, not run: the command line defines nothing a worker needs
            sys.modules["__main__"].__spec__ = ModuleSpec(main, None)
        elif how == "cli-path":
            sys.modules["__main__"].__file__ = main
        elif how == "name" and main and main != "__main__" and not main.endswith(".__main__"):
            spawn._fixup_main_from_name(main)
        elif how == "path" and main:
            spawn.import_main_path(main)
    except BaseException:  # noqa: BLE001  each child then runs it itself, as without a server
        pass
    for name in filter(None, os.environ.get(PRELOAD_ENV, "").split(",")):
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001  a module that fails here is imported (and fails) in the worker instead
            pass
    for spec in filter(None, os.environ.get(WARM_ENV, "").split(",")):
        try:  # what each worker would do before its first case, done once: it forks warm
            from layoutfuzz.harness import registry

            registry.load(spec).warm_up()
        except BaseException:  # noqa: BLE001  the worker does it (and fails there, in a case) instead
            pass
    # what the server made (modules, warmed targets) lives as long as each worker: out of the collector's reach, a
    # worker's collections do not walk it again and again (nor write to its pages, which stay shared with the server)
    gc.freeze()
    atexit.register(end_server)  # after the imports' own handlers: it runs first, and they never do
