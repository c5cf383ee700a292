"""Processes that end with their campaign: a worker dies with the fork server it was forked from, and the fork server,
a subreaper, inherits whatever the workers' systems under test left behind (a child in a session of its own, a
daemon) and ends it when it ends itself. Linux only (``prctl``, ``/proc``); elsewhere these calls do nothing."""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _prctl(option: int, value: int) -> bool:
    prctl = getattr(_libc(), "prctl", None)
    return prctl is not None and prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0


def adopt_orphans() -> bool:
    """Makes this process a child subreaper: the orphaned descendants of its children become its children, not
    init's (``end_children`` can then end them). Whether it could."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(parent: int | None) -> bool:
    """Has this process killed (SIGKILL) when the process that forked it ends; False if ``parent`` (its pid, when
    known) is already gone."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    return parent is None or os.getppid() == parent


def children(pid: int) -> list[int]:
    """The children of ``pid`` (zombies included), read from ``/proc``."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()  # after the command name, which may hold anything
        except OSError:
            continue
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(name))
    return found


def end_children(wait_s: float = 5.0) -> None:
    """Kills (SIGKILL) every child of this process and reaps it, then those re-parented to it as they died (a
    subreaper's), until none is left or ``wait_s`` has passed."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        pids = children(os.getpid())
        if not pids:
            return
        for pid in pids:
            _kill(pid)
        _reap(pids, deadline)


def _kill(pid: int) -> None:
    """SIGKILL to ``pid``, and to the process group it leads if it leads one (a worker's)."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pids: list[int], deadline: float) -> None:
    left = set(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    left.discard(pid)
            except ChildProcessError:
                left.discard(pid)
        if left:
            time.sleep(0.005)
