"""The version matrix's figures per Triton release, on this machine: the cost of a cached environment, a CPU campaign of
triton.layouts (cases/s), and compiling GPU kernels ahead (kernels/s), each with its ratio to 3.6.0 in the same run.

    python benchmarks/version_matrix.py [--versions 3.6.0,3.7.1,3.8.0,3.9.0] [--cases 300] [--kernels 60]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd

from layoutfuzz.harness import environments


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return time.monotonic() - started, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--versions", default="3.6.0,3.7.1,3.8.0,3.9.0")
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--kernels", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for version in environments.release_range(args.versions):
            started = time.monotonic()
            env = environments.for_release(version)
            ready_s = time.monotonic() - started
            run_s, out = timed(env.command("run", "--targets", "triton.layouts", "--cases", str(args.cases), "--jobs",
                                           str(args.jobs), "-q", "--out", f"{tmp}/run-{version}"), env.env(), Path(tmp))
            recorded = int(re.search(r"(\d+) cases in", out)[1])
            compile_s, out = timed(env.command("kernels", "--targets", "triton.convert_layout", "--cases", str(args.kernels),
                                               "--jobs", str(args.jobs), "-q", "--out", f"{tmp}/k"), env.env(), Path(tmp))
            rows.append({"triton": version, "environment ready (s)": round(ready_s, 2),
                         "triton.layouts cases/s": round(recorded / run_s, 1),
                         "kernels compiled/s": round(args.kernels / compile_s, 2)})
    table = pd.DataFrame(rows)
    base = table.iloc[0]
    for column in ("triton.layouts cases/s", "kernels compiled/s"):
        table[f"{column} vs {base['triton']}"] = (table[column] / base[column]).round(2)
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()
