"""The ``layoutfuzz`` command line: the parser, assembled from the command groups, and ``main``.

Each group owns its commands' parsers and handlers: ``run`` (run, table, html, targets, history, selftest), ``cases``
(reproduce, reduce), ``triage`` (nightly, buckets, diff, known), ``versions`` (matrix, kernels, bisect) and
``coverage``. The options several commands share are declared once, in ``options``."""

from __future__ import annotations

import argparse
import sys

from layoutfuzz.harness.campaign import UsageError
from layoutfuzz.harness.cli import cases, coverage, export, run, triage, versions
from layoutfuzz.harness.cli.run import cmd_run, resume_command

GROUPS = (run, triage, cases, versions, coverage, export)
COMMANDS = ("run", "nightly", "reproduce", "reduce", "history", "html", "selftest", "buckets", "diff", "known",
            "matrix", "kernels", "bisect", "coverage", "table", "targets", "export")  # the order `layoutfuzz --help` lists them in


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: no usage dump, a pointer to --help."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """Every command's parser, each from its group, in the order ``COMMANDS`` lists them."""
    parser = _Parser(
        prog="layoutfuzz",
        description="Differential testing of GPU tensor layouts: generated cases, an F2/PTX oracle, "
        "systems under test run in isolated workers, every divergence stored and reproducible.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    group_of = {name: group for group in GROUPS for name in group.PARSERS}
    assert sorted(group_of) == sorted(COMMANDS), "a command is missing from COMMANDS, or listed there twice"
    for name in COMMANDS:
        group_of[name].add_parsers(sub, only={name})
    return parser


def main(argv: list[str] | None = None) -> int:
    import sqlite3

    from layoutfuzz.harness.trust import UntrustedTarget
    from layoutfuzz.reports.ledger import LedgerError
    from layoutfuzz.reports.schema import SchemaError
    from layoutfuzz.reports.store import StoreError, ignore_file_size_signal, out_of_room
    from layoutfuzz.reports.triage import TriageError

    args = build_parser().parse_args(argv)
    ignore_file_size_signal()
    try:
        return args.func(args)
    except KeyboardInterrupt:  # what was recorded is kept; a campaign says how to continue it
        hint = f": continue with {resume_command(args)}" if args.func is cmd_run and getattr(args, "out", None) else ""
        print(f"layoutfuzz: interrupted{hint}", file=sys.stderr)
        return 130
    except (UsageError, UntrustedTarget, SchemaError, StoreError, TriageError, LedgerError) as exc:  # bad input, or data that is not what it claims
        print(f"layoutfuzz: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.OperationalError) as exc:  # out of disk or past the file size limit: what was recorded is kept
        room = out_of_room(exc)
        if room is None:
            raise
        print(f"layoutfuzz: error: {room[0]} ({exc}); what was recorded is kept: {room[1]}, then run "
              f"the same command again" + (f" (for a campaign: {resume_command(args)})" if getattr(args, "out", None) else ""), file=sys.stderr)
        return 2


__all__ = ["build_parser", "main"]
