"""``layoutfuzz coverage``: which parts of each target's legal parameter space a campaign's cases draw (its parser and
its handler)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection
from pathlib import Path

import pandas as pd

from layoutfuzz.harness import registry
from layoutfuzz.harness.campaign import UsageError, load_target
from layoutfuzz.harness.cli.options import (
    add_commands,
    add_format,
    add_out,
    add_seed,
    add_targets,
    bounded_int,
    target_names,
)
from layoutfuzz.harness.coverage import edge_table, edges_missed, measure, pair_coverage, pair_table, value_table
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.tables import render
from layoutfuzz.reports.terminal import show

DEFAULT_CASES = 10_000


def cmd_coverage(args: argparse.Namespace) -> int:
    names = list(target_names(args.targets)) or sorted(registry.available_specs())
    targets = [load_target(name) for name in names]
    undeclared, sections = [], []
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
        edges, missed = edge_table(space, coverage), edges_missed(space, coverage)
        count = sum(len(p.edge_values) for p in space.parameters)
        head = (f"## {target.name}: {args.cases} cases (seed {args.seed})\n\n{full} of {len(values)} parameters drew every "
                f"wanted value; pairs of values drawn together: {drawn} of {legal} ({100 * drawn / max(legal, 1):.1f} %)\n"
                f"edges: {count - len(missed)} of {count} edge values drawn; cases at an edge: "
                f"{100 * coverage.edge_share:.1f} %\n")
        sections.append(f"{head}\n{render(values, 'md')}\n\n{render(edges, 'md')}\n\n{render(pairs, 'md')}\n")
        print(head)
        if missed:
            print("edge values never drawn: " + ", ".join(f"{name} {value}" for name, value in missed) + "\n")
        print(_terminal_view(values, pairs, args.format, args.all_pairs))
    if undeclared:
        print(f"declare no parameter space yet: {', '.join(undeclared)}", file=sys.stderr)
        if len(undeclared) == len(targets):
            verb = "declares" if len(undeclared) == 1 else "declare"
            raise UsageError(f"no parameter space to report: {', '.join(undeclared)} {verb} none (Target.parameter_space)")
    path = Path(args.out) / "coverage.md"
    write_atomically(path, "\n".join(sections))
    print(f"every parameter and pair of parameters: {path}", file=sys.stderr)
    return 0


def informative(values: pd.DataFrame, pairs: pd.DataFrame, all_pairs: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What a terminal shows of a target's coverage: the parameters that missed, excluded or overshot a value, and
    the pairs of parameters with legal pairs not all drawn together (all pairs that have legal pairs with ``all_pairs``)."""
    missed = values[(values["coverage %"] < 100) | (values["excluded (why)"] != "-") | (values["drawn outside the legal range"] != "-")]
    legal = pairs[pairs["legal pairs"] > 0]
    return missed, legal if all_pairs else legal[legal["coverage %"] < 100]


def _terminal_view(values: pd.DataFrame, pairs: pd.DataFrame, fmt: str, all_pairs: bool) -> str:
    """The value and pair tables in full (CSV, HTML), or in Markdown only what informs, cut to a terminal's width."""
    if fmt != "md":
        shown = pairs if all_pairs else pairs[pairs["coverage %"] < 100]
        return render(values, fmt) + "\n" + (f"\n{render(shown, fmt)}\n" if not shown.empty else "")
    values, pairs = informative(values, pairs, all_pairs)
    columns = [c for c in values.columns if c != "legal range from" and (c != "drawn outside the legal range" or (values[c] != "-").any())]
    parts = [show(values[columns], fmt, keep=["parameter"]) if not values.empty else "every parameter drew every legal value"]
    parts.append(show(pairs, fmt, keep=["parameters"]) if not pairs.empty else "every legal pair of values was drawn")
    return "\n\n".join(parts) + "\n"


def _add_coverage(sub: argparse._SubParsersAction) -> None:
    coverage = sub.add_parser(
        "coverage", help="which legal parameter values and pairs of values a campaign's cases draw, per target",
        description="Draws a campaign's first N cases of each target (no system under test runs: a CPU is enough, "
        "GPU targets included) and prints, per parameter the target declares (Target.parameter_space), its legal "
        "values from the PTX text, the driver's API or the specification, how many of them were drawn, which never "
        "were, and which the generator leaves out on purpose, with why; the values at the domain's edges (a "
        "parameter's least and greatest, or those it declares), which ones were never drawn and the share of cases "
        "at an edge; then every pair of parameters whose legal pairs of values were not all drawn together. Values of "
        "wide fields are counted in ranges.")
    add_targets(coverage, "every target")
    coverage.add_argument("--cases", type=bounded_int(1, 10_000_000), default=DEFAULT_CASES, metavar="N",
                          help=f"cases per target, indices 0..N-1 as a campaign draws them (default {DEFAULT_CASES})")
    add_seed(coverage)
    coverage.add_argument("--all-pairs", action="store_true", help="also list the pairs of parameters fully covered")
    add_out(coverage, "where OUT/coverage.md, with every parameter and pair in full, goes")
    add_format(coverage)
    coverage.set_defaults(func=cmd_coverage)


PARSERS = {"coverage": _add_coverage}


def add_parsers(sub: argparse._SubParsersAction, only: Collection[str] | None = None) -> None:
    """The parser of coverage (``only``: if named)."""
    add_commands(sub, PARSERS, only)
