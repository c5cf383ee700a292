"""The command line's package: the parser assembled from its groups, and the settings objects a Python user builds
instead of a command line (no argparse.Namespace outside the CLI)."""

from __future__ import annotations

from pathlib import Path

from layoutfuzz.harness.cli import COMMANDS, GROUPS, build_parser
from layoutfuzz.harness.cli.triage import night_settings
from layoutfuzz.harness.cli.versions import BisectSettings
from layoutfuzz.harness.nightly import NightSettings
from layoutfuzz.harness.runner import Shard


def test_each_command_belongs_to_one_group_and_help_lists_them_in_order():
    names = [name for group in GROUPS for name in group.PARSERS]
    assert sorted(names) == sorted(COMMANDS) and len(set(names)) == len(names)
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == list(COMMANDS)


def test_the_nightly_options_become_night_settings_once():
    args = build_parser().parse_args(["nightly", "--root", "r", "--date", "2026-03-02", "--targets", "a, b,",
                                      "--shard", "2/4", "--budget", "5m", "-j", "3"])
    settings = night_settings(args)
    assert settings == NightSettings(night="2026-03-02", root=Path("r"), targets=("a", "b"), budget=300.0,
                                     shard=Shard(2, 4), jobs=3, known=args.known)
    assert settings.out == Path("r/2026-03-02-shard2of4")


def test_a_new_night_is_seeded_by_its_date_and_a_started_one_resumes(tmp_path):
    settings = NightSettings(night="2026-03-02", root=tmp_path, targets=("triton.layouts",), budget=60.0, jobs=2)
    fresh = settings.campaign()
    assert (fresh.out, fresh.seed, fresh.targets, fresh.shard) == (tmp_path / "2026-03-02", 20260302, ("triton.layouts",), Shard())
    assert fresh.reduce and not fresh.resume and (fresh.budget, fresh.jobs) == (60.0, 2)
    from layoutfuzz.reports.store import Store

    store = Store(fresh.out)
    store.db.execute("INSERT INTO campaign (key, value) VALUES ('seed', '20260302')")
    store.close()
    again = settings.campaign()
    assert again.resume and (again.seed, again.targets, again.shard) == (None, (), None)


def test_bisect_settings_default_as_the_command_line_does():
    args = build_parser().parse_args(["bisect", "abc"])
    assert BisectSettings(case="abc") == BisectSettings(case=args.case, triton=args.triton, kernels=args.kernels,
                                                        timeout=args.timeout, out=args.out, root=args.root,
                                                        known=args.known, record=args.record)
