"""``layoutfuzz coverage``: which parts of each target's legal parameter space a campaign's cases draw."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from layoutfuzz.harness import registry
from layoutfuzz.harness.campaign import UsageError, load_target
from layoutfuzz.harness.coverage import measure, pair_coverage, pair_table, value_table
from layoutfuzz.reports.tables import FORMATS, render

DEFAULT_CASES = 10_000


def cmd_coverage(args: argparse.Namespace) -> int:
    names = [n.strip() for n in (args.targets or "").split(",") if n.strip()] or sorted(registry.available_specs())
    targets = [load_target(name) for name in names]
    undeclared = []
    for target in targets:
        space = target.parameter_space()
        if space is None:
            undeclared.append(target.name)
            continue
        print(f"drawing {args.cases} cases of {target.name} (seed {args.seed})...", file=sys.stderr)
        coverage = measure(target, space, args.seed, args.cases)
        values, pairs = value_table(space, coverage), pair_table(space, coverage)
        drawn, legal = pair_coverage(pairs)
        full = int((values["coverage %"] == 100).sum())
        print(f"## {target.name}: {args.cases} cases (seed {args.seed})\n")
        print(f"{full} of {len(values)} parameters drew every wanted value; pairs of values drawn together: {drawn} of "
              f"{legal} ({100 * drawn / max(legal, 1):.1f} %)\n")
        print(render(values, args.format) + "\n")
        if not args.all_pairs:
            pairs = pairs[pairs["coverage %"] < 100]
        if not pairs.empty:
            print(render(pairs, args.format) + "\n")
    if undeclared:
        print(f"declare no parameter space yet: {', '.join(undeclared)}", file=sys.stderr)
        if len(undeclared) == len(targets):
            verb = "declares" if len(undeclared) == 1 else "declare"
            raise UsageError(f"no parameter space to report: {', '.join(undeclared)} {verb} none (Target.parameter_space)")
    return 0


def add_coverage_parser(sub: argparse._SubParsersAction, case_count: Callable[[str], int], seed_int: Callable[[str], int]) -> None:
    coverage = sub.add_parser(
        "coverage", help="which legal parameter values and pairs of values a campaign's cases draw, per target",
        description="Draws a campaign's first N cases of each target (no system under test runs: a CPU is enough, "
        "GPU targets included) and prints, per parameter the target declares (Target.parameter_space), its legal "
        "values from the PTX text, the driver's API or the specification, how many of them were drawn, which never "
        "were, and which the generator leaves out on purpose, with why; then every pair of parameters whose legal "
        "pairs of values were not all drawn together. Values of wide fields are counted in ranges.")
    coverage.add_argument("--targets", metavar="NAMES", help="comma-separated target names (default: every target)")
    coverage.add_argument("--cases", type=case_count, default=DEFAULT_CASES, metavar="N",
                          help=f"cases per target, indices 0..N-1 as a campaign draws them (default {DEFAULT_CASES})")
    coverage.add_argument("--seed", type=seed_int, default=0, help="campaign seed (default 0)")
    coverage.add_argument("--all-pairs", action="store_true", help="also list the pairs of parameters fully covered")
    coverage.add_argument("--format", choices=FORMATS, default="md")
    coverage.set_defaults(func=cmd_coverage)
