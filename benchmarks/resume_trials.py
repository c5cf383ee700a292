"""Kill-and-resume trials: campaigns of 1, 2 and 5 targets killed (the whole process group, SIGKILL) at random
moments, then resumed; each compared with an uninterrupted campaign of the same seed. Prints, per trial, the rows
lost, run again, different from the uninterrupted run, and whether what the resume says it ran is what it stored.

    python benchmarks/resume_trials.py [--trials 3] [--cases 60]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the trials' targets: tests/resume_targets.py
from tests.test_cli import layoutfuzz  # noqa: E402
from tests.test_resume import ENV, kill_at, ran, rows, targets  # noqa: E402


def trial(count: int, cases: int, stop_after: int, where: Path) -> dict:
    whole = layoutfuzz("run", *targets(count), "--cases", str(cases), "--jobs", "2", "-q", "--out", "w", cwd=where, env=ENV)
    assert whole.returncode == 0, whole.stderr
    expected = {key: value[:2] for key, value in rows(where / "w").items()}
    killed = kill_at(where, count, cases, stop_after)
    resumed = layoutfuzz("run", "--out", "k", "--resume", *targets(count), "-q", cwd=where, env=ENV)
    final = rows(where / "k")
    return {
        "targets": count, "killed after rows": len(killed), "resume exit": resumed.returncode,
        "lost": len(set(expected) - set(final)),
        "run again": sum(1 for key in killed if final.get(key, (None, None, None))[2] != killed[key][2]),
        "different": sum(1 for key in expected if key in final and final[key][:2] != expected[key]),
        "says ran = stored": ran(resumed) == len(final) - len(killed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--cases", type=int, default=60)
    args = parser.parse_args()
    results = []
    for count in (1, 2, 5):
        for k in range(args.trials):
            stop_after = random.Random(f"trial/{count}/{k}").randrange(5, count * args.cases // 2)
            with tempfile.TemporaryDirectory() as tmp:
                results.append(trial(count, args.cases, stop_after, Path(tmp)))
    table = pd.DataFrame(results)
    print(table.to_markdown(index=False))
    print(f"\n{len(table)} trials: {int(table['lost'].sum())} rows lost, {int(table['run again'].sum())} run again, "
          f"{int(table['different'].sum())} different, {int((~table['says ran = stored']).sum())} summaries off")


if __name__ == "__main__":
    main()
