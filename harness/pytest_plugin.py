"""Campaigns on pytest-xdist workers: one shard per worker, one GPU per worker.

    python -m pytest --pyargs layoutfuzz.gpu.scaleout -n 2 --layoutfuzz-targets tma.swizzle,triton.tma \\
        --layoutfuzz-budget 5m [--layoutfuzz-shards 2] [--layoutfuzz-host 1/3] [--layoutfuzz-out DIR]

Each test item runs ``layoutfuzz run --shard G/N`` in a subprocess: the shards of this host are its
``--layoutfuzz-shards`` (default: the xdist worker count), further split across hosts by
``--layoutfuzz-host I/H``, so H hosts with W workers each cover N = H * W disjoint parts of one
campaign. A worker gets ``CUDA_VISIBLE_DEVICES`` = its xdist index modulo the GPUs present. At the
end the controller prints the pass-rate table of every shard stored under the output directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from layoutfuzz.harness.runner import Shard


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("layoutfuzz", "layoutfuzz campaigns as tests (gpu.scaleout)")
    group.addoption("--layoutfuzz-targets", metavar="NAMES", help="comma-separated targets; enables gpu.scaleout")
    group.addoption("--layoutfuzz-budget", default="60s", metavar="DURATION", help="each shard's budget (default 60s)")
    group.addoption("--layoutfuzz-cases", default=None, metavar="N", help="cases per target (instead of a budget)")
    group.addoption("--layoutfuzz-seed", default="0", help="campaign seed (default 0)")
    group.addoption("--layoutfuzz-shards", type=int, default=None, help="shards on this host (default: xdist workers)")
    group.addoption("--layoutfuzz-host", default="1/1", metavar="I/H", help="this host's part of the campaign")
    group.addoption("--layoutfuzz-jobs", default=None, metavar="J", help="worker processes per shard")
    group.addoption("--layoutfuzz-out", default="layoutfuzz-scaleout", metavar="DIR", help="where shards are stored")


def shards(config: pytest.Config) -> list[Shard]:
    """The campaign shards this host runs, as global I/N."""
    host = Shard.parse(config.getoption("--layoutfuzz-host"))
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT") or getattr(config.option, "numprocesses", None) or 1
    per_host = config.getoption("--layoutfuzz-shards") or max(1, int(workers))
    total = host.count * per_host
    return [Shard((host.index - 1) * per_host + k + 1, total) for k in range(per_host)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "layoutfuzz_shard" in metafunc.fixturenames:
        config = metafunc.config
        found = shards(config) if config.getoption("--layoutfuzz-targets") else []
        metafunc.parametrize("layoutfuzz_shard", found, ids=[f"shard{s.index}of{s.count}" for s in found])


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not config.getoption("--layoutfuzz-targets") or hasattr(config, "workerinput"):
        return
    import pandas as pd

    from layoutfuzz.reports.store import DB_NAME, Store
    from layoutfuzz.reports.tables import pass_rate_table, render

    stores = sorted(Path(config.getoption("--layoutfuzz-out")).glob(f"shard*/{DB_NAME}"))
    if stores:
        frame = pd.concat([Store(p.parent, create=False).frame() for p in stores], ignore_index=True)
        terminalreporter.write_line(f"\nlayoutfuzz: {len(stores)} shard(s), {len(frame)} cases")
        terminalreporter.write_line(render(pass_rate_table(frame), "md"))
