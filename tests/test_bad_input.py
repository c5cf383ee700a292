"""Every bad command-line value is one line on stderr and exit 2, found before any work starts: never a traceback,
a hang, or a silent acceptance. Each invocation runs in-process (``cli.main``) in a folder of bad paths and data."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness import cli
from layoutfuzz.harness.target import Target

CRASHY = "tests.crashy_target:CrashyTarget"
GENERATE_FAILS = "tests.test_bad_input:GenerateFails"
NIGHT = ["--targets", "triton.bank_conflicts", "--budget", "1s", "--jobs", "1", "-q", "--date", "2026-01-02"]
STRAY = "feedc0ffee00"  # a root cause whose ROOT/reproducers/STRAY.json is a folder


class GenerateFails(Target):
    """Every case's generate raises KeyError; a case with no params has no family either."""

    name = "test.generate_fails"

    def generate(self, source):
        return {}["missing"]

    def family(self, case):
        return case.params["kind"]

    def expected(self, case):
        return 0

    def observed(self, case):
        return 0


def _nightly_roots(root: Path) -> None:
    """``nhist``: a history database whose nights table lacks a column; ``nrepro``: a root cause whose reproducer
    file is a folder (each written only after a night's campaign)."""
    (root / "nhist").mkdir()
    with contextlib.closing(sqlite3.connect(root / "nhist" / "history.sqlite")) as db:
        db.execute("CREATE TABLE nights (night TEXT, target TEXT, family TEXT, cases INTEGER, pass INTEGER, problems INTEGER)")
        db.commit()
    from layoutfuzz.reports.triage import SCHEMA

    (root / "nrepro" / "reproducers" / f"{STRAY}.json").mkdir(parents=True)
    with contextlib.closing(sqlite3.connect(root / "nrepro" / "history.sqlite")) as db:
        db.executescript(SCHEMA)
        case = Case("test.elsewhere", 0, 0, {"value": 1}).to_json()
        db.execute("INSERT INTO root_causes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   (STRAY, "test.elsewhere", "diverge", "value", "all", "x:Y", case, 0, "2026-01-01", "", "2026-01-01", "",
                    "open", None, None))
        db.commit()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of bad paths (a file, a fifo, a non-executable file, kernel folders with a bad version name), a
    malformed ledger, case files, two bad nightly roots and a small campaign (a crash, cases that failed to generate)."""
    root = tmp_path_factory.mktemp("bad_input")
    (root / "afile").write_text("x\n")
    os.mkfifo(root / "fifo")
    (root / "adir").mkdir()
    (root / "notexec").write_text("#!/bin/sh\n")
    for folder in ("kbad/triton-abc", "kbad/triton-3.9.0", "kgood/triton-3.9.0"):
        (root / folder).mkdir(parents=True)
    (root / "bad.toml").write_text("[[problem]]\nbogus = 1\n")
    (root / "crashy.json").write_text(Case("test.crashy", 0, 4, {"value": 1}).to_json())
    pytest.importorskip("triton._C.libtriton")
    from layoutfuzz.harness import registry
    from layoutfuzz.harness.target import make_case

    (root / "cpu-case.json").write_text(make_case(registry.load("triton.layouts"), 0, 0).to_json())
    _nightly_roots(root)
    assert cli.main(["run", "--target", CRASHY, "--target", GENERATE_FAILS, "--cases", "2", "--jobs", "1", "-q",
                     "--timeout", "20", "--out", str(root / "camp")]) == 0
    return root


def _bucket(world: Path) -> str:
    with contextlib.closing(sqlite3.connect(world / "camp" / "layoutfuzz.sqlite")) as db:
        return db.execute("SELECT bucket FROM outcomes WHERE outcome = 'crash' LIMIT 1").fetchone()[0]


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[list[str]]:
    """Raises TimeoutError in the command when it runs past ``seconds`` (a hang fails, it does not stall), and says so
    in the list it yields (a command may catch the exception)."""
    expired: list[str] = []

    def expire(*_):
        expired.append(f"no answer within {seconds} s")
        raise TimeoutError(expired[0])

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield expired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


OUT_PATHS = ["afile", "fifo", "/dev/null", "afile/under", ""]
OUT_COMMANDS = {
    "run": ["run", "--target", CRASHY, "--cases", "1", "--jobs", "1", "-q"],
    "reproduce": ["reproduce", "test.crashy/0/0", "--target", CRASHY],
    "reduce": ["reduce", "test.crashy/0/1", "--target", CRASHY, "--max-tries", "1", "--jobs", "1"],
    "kernels": ["kernels", "--targets", "triton.convert_layout", "--cases", "1", "--jobs", "1", "-q"],
    "matrix": ["matrix", "--kernels", "kgood", "--cases", "1", "--jobs", "1"],
    "table": ["table"],
    "buckets": ["buckets"],
    "html": ["html"],
}

INVOCATIONS = {
    **{f"{name} --out {path or repr(path)}": [*args, "--out", path]
       for name, args in OUT_COMMANDS.items() for path in OUT_PATHS},
    "run --junit a folder": ["run", "--target", CRASHY, "--cases", "1", "-q", "--out", "j1", "--junit", "adir"],
    "run --junit ''": ["run", "--target", CRASHY, "--cases", "1", "-q", "--out", "j2", "--junit", ""],
    "run --junit under a file": ["run", "--target", CRASHY, "--cases", "1", "-q", "--out", "j3", "--junit", "afile/j.xml"],
    "reduce --write a folder": ["reduce", "test.crashy/0/1", "--target", CRASHY, "--write", "adir", "--max-tries", "1",
                                "--jobs", "1"],
    "reduce --write ''": ["reduce", "test.crashy/0/1", "--target", CRASHY, "--write", "", "--max-tries", "1", "--jobs", "1"],
    "reproduce --json a folder": ["reproduce", "test.crashy/0/0", "--target", CRASHY, "--json", "adir"],
    "reproduce --json ''": ["reproduce", "test.crashy/0/0", "--target", CRASHY, "--json", ""],
    "nightly --root a file": ["nightly", "--root", "afile", *NIGHT],
    "nightly --root under a file": ["nightly", "--root", "afile/root", *NIGHT],
    "nightly: history table lacks a column": ["nightly", "--root", "nhist", *NIGHT],
    "nightly: a reproducer file is a folder": ["nightly", "--root", "nrepro", *NIGHT],
    **{f"{command} --target {spec}": [command, *(["test.crashy/0/0"] if command == "reproduce" else ["--cases", "1", "-q"]),
                                      "--target", spec, "--out", "t"]
       for command in ("run", "reproduce") for spec in (":", ":X", "..bad:X", ".:X", "x:", "a b:X")},
    "reproduce: generate raised (case id)": ["reproduce", "test.generate_fails/0/0", "--target", GENERATE_FAILS],
    "reproduce: generate raised (report)": ["reproduce", "camp/reports/test.generate_fails-0-0.json", "--target",
                                            GENERATE_FAILS],
    "reduce: generate raised (report)": ["reduce", "camp/reports/test.generate_fails-0-0.json", "--target", GENERATE_FAILS],
    "known add: malformed ledger": ["known", "add", "BUCKET", "--title", "t", "--known", "bad.toml", "--out", "camp"],
    "known add --known under a file": ["known", "add", "BUCKET", "--title", "t", "--known", "afile/k.toml", "--out", "camp"],
    "known list --known a fifo": ["known", "list", "--known", "fifo"],
    "buckets --known a device": ["buckets", "--out", "camp", "--known", "/dev/null"],
    "kernels --case of a CPU target": ["kernels", "--case", "cpu-case.json", "--jobs", "1", "-q", "--out", "k"],
    "kernels --targets a CPU target": ["kernels", "--targets", "triton.layouts", "--cases", "1", "-q", "--out", "k"],
    "kernels --cases absurd": ["kernels", "--targets", "triton.convert_layout", "--cases", "1000000000000", "--out", "k"],
    "matrix --triton-python not executable": ["matrix", "--triton-python", "notexec", "--cases", "1", "--out", "m"],
    "matrix --triton-python a folder": ["matrix", "--triton-python", "adir", "--cases", "1", "--out", "m"],
    "matrix --kernels with a bad version name": ["matrix", "--kernels", "kbad", "--cases", "1", "--out", "m"],
    "bisect --kernels with a bad version name": ["bisect", "crashy.json", "--kernels", "kbad", "--no-record"],
}


@pytest.fixture
def here(world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working folder of links to the world's entries: what one command writes no other command sees."""
    for entry in world.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("argv", list(INVOCATIONS.values()), ids=list(INVOCATIONS))
def test_bad_input_is_one_line_and_exit_2_before_any_work(world, here, argv, capsys):
    argv = [_bucket(world) if a == "BUCKET" else a for a in argv]
    before = sorted(p.name for p in here.iterdir())
    with deadline(30) as expired:
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse's one-line refusal
            code = exc.code
    err = capsys.readouterr().err
    assert not expired
    assert code == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in here.iterdir()) == before  # refused before anything was written
