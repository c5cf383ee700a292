"""Where a campaign's workers spend their time: with ``LAYOUTFUZZ_PROFILE=DIR`` in the environment, each worker runs
its batches under cProfile and leaves its totals in ``DIR/worker-PID.prof`` (rewritten after each batch, so a worker
that is killed keeps what it had). ``python -m layoutfuzz.harness.profiling DIR`` prints the workers' totals together.

A measuring aid for throughput work, off unless asked for: profiling slows every call it sees.
"""

from __future__ import annotations

import cProfile
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
ENV = "LAYOUTFUZZ_PROFILE"
_profile: cProfile.Profile | None = None


def profiled(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``, under this process's profile where ``LAYOUTFUZZ_PROFILE`` names a folder."""
    global _profile
    folder = os.environ.get(ENV)
    if not folder:
        return call(*args)
    if _profile is None:
        _profile = cProfile.Profile()
    _profile.enable()
    try:
        return call(*args)
    finally:
        _profile.disable()
        Path(folder).mkdir(parents=True, exist_ok=True)
        _profile.dump_stats(os.path.join(folder, f"worker-{os.getpid()}.prof"))


def main(argv: list[str] | None = None) -> int:
    import pstats

    args = argv if argv is not None else sys.argv[1:]
    if not args:
        print("usage: python -m layoutfuzz.harness.profiling DIR [LINES]", file=sys.stderr)
        return 2
    files = sorted(Path(args[0]).glob("worker-*.prof"))
    if not files:
        print(f"no worker profiles in {args[0]}", file=sys.stderr)
        return 2
    stats = pstats.Stats(*map(str, files))
    print(f"{len(files)} worker(s)")
    stats.sort_stats("tottime").print_stats(int(args[1]) if len(args) > 1 else 40)
    stats.sort_stats("cumulative").print_stats(int(args[1]) if len(args) > 1 else 40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
