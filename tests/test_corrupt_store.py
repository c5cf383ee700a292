"""A damaged or tampered campaign store (or report) is refused in one line (exit 2) by the reading commands, or read
correctly: never a traceback, never a silently wrong answer."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from layoutfuzz.harness import cli
from layoutfuzz.reports import schema
from layoutfuzz.reports.store import Store, StoreError

ROOT = Path(__file__).resolve().parent.parent
CRASHY = "tests.crashy_target:CrashyTarget"
DB = "layoutfuzz.sqlite"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """A real campaign of 12 crashy cases (4 pass, 2 diverge, 4 crash, 2 timeout), built once."""
    out = tmp_path_factory.mktemp("campaign") / "out"
    assert cli.main(["run", "--target", CRASHY, "--cases", "12", "--timeout", "1s", "--jobs", "2", "-q", "--out", str(out)]) == 0
    db = sqlite3.connect(out / DB)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every row in the database file, which the tests damage
    db.close()
    return out


@pytest.fixture
def store(campaign, tmp_path) -> Path:
    """A copy of the campaign, for one test to damage."""
    return Path(shutil.copytree(campaign, tmp_path / "damaged"))


def execute(directory: Path, *statements: str) -> None:
    db = sqlite3.connect(directory / DB)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def without_constraints(directory: Path) -> None:
    """The outcomes table rebuilt as a tamperer might: the same columns without NOT NULL or a primary key."""
    execute(directory, "CREATE TABLE loose AS SELECT * FROM outcomes", "DROP TABLE outcomes",
            "ALTER TABLE loose RENAME TO outcomes")


def refused(capsys, *argv: str) -> str:
    """The one line a refused command prints (exit 2, nothing else on stderr)."""
    code = cli.main(list(argv))
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("layoutfuzz: error: "), (code, lines)
    return lines[0]


def reading_commands(campaign: Path, damaged: Path) -> list[list[str]]:
    """Every command that reads a whole campaign (html only where matplotlib is installed)."""
    commands = [["table", "--out", str(damaged)], ["buckets", "--out", str(damaged)],
                ["diff", str(campaign), str(damaged)], ["diff", str(damaged), str(campaign)]]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return commands
    return [*commands, ["html", "--out", str(damaged)]]


def test_the_undamaged_campaign_reads(campaign, capsys):
    assert cli.main(["table", "--out", str(campaign), "--format", "csv"]) == 0
    assert "test.crashy,(all),12,4,2,4,2,0,0,33.33" in capsys.readouterr().out


def test_a_malformed_database_is_refused(campaign, store, capsys):
    db = sqlite3.connect(store / DB)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'outcomes'").fetchone()[0]
    page = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with open(store / DB, "r+b") as handle:  # the outcomes table's first page: its header garbage
        handle.seek((root - 1) * page)
        handle.write(b"\x0d\xff\xff\xff\xff\xff\xff\xff" * 8)
    for argv in reading_commands(campaign, store):
        assert "malformed" in refused(capsys, *argv)
    line = refused(capsys, "reproduce", "test.crashy/0/4", "--out", str(store), "--target", CRASHY)
    assert "malformed" in line


def test_a_missing_column_is_refused(campaign, store, capsys):
    execute(store, "ALTER TABLE outcomes DROP COLUMN bucket")
    for argv in reading_commands(campaign, store):
        assert "no bucket column" in refused(capsys, *argv)


def test_garbage_metrics_are_refused(campaign, store, capsys):
    execute(store, "UPDATE outcomes SET metrics = '{garbage' WHERE idx = 0")
    for argv in reading_commands(campaign, store):
        assert "metrics" in refused(capsys, *argv)


def test_metrics_that_are_not_numbers_are_refused(campaign, store, capsys):
    execute(store, """UPDATE outcomes SET metrics = '{"ptx": "many"}' WHERE idx = 0""")
    assert "metrics" in refused(capsys, "table", "--out", str(store))


def test_an_unknown_outcome_is_refused_not_dropped(campaign, store, capsys):
    execute(store, "UPDATE outcomes SET outcome = 'weird' WHERE idx = 0")
    for argv in reading_commands(campaign, store):
        assert "unknown outcome(s) 'weird'" in refused(capsys, *argv)


def test_a_null_family_is_refused_not_dropped(campaign, store, capsys):
    without_constraints(store)
    execute(store, "UPDATE outcomes SET family = NULL WHERE idx IN (0, 4)")  # a pass and a divergence
    for argv in reading_commands(campaign, store):
        assert "family is not text" in refused(capsys, *argv)


def test_a_null_bucket_is_refused_not_dropped(campaign, store, capsys):
    without_constraints(store)
    execute(store, "UPDATE outcomes SET bucket = NULL WHERE idx = 4")
    for argv in reading_commands(campaign, store)[1:]:  # all but `table`, which reads no bucket: its answer is right
        assert "bucket is not text" in refused(capsys, *argv)
    assert cli.main(["table", "--out", str(store), "--format", "csv"]) == 0
    assert "test.crashy,(all),12,4,2,4,2,0,0,33.33" in capsys.readouterr().out


def test_rows_of_another_seed_are_refused_not_counted(campaign, store, capsys):
    execute(store, "INSERT INTO outcomes (target, seed, idx, family, outcome, detail, signature, bucket, mismatch_count,"
                   " duration_s, case_json, report, metrics) SELECT target, 7, idx, family, outcome, detail, signature,"
                   " bucket, mismatch_count, duration_s, case_json, report, metrics FROM outcomes")
    for argv in reading_commands(campaign, store):
        assert "seed(s) 7, not only of its campaign's seed 0" in refused(capsys, *argv)


def test_a_text_index_is_refused(campaign, store, capsys):
    execute(store, "UPDATE outcomes SET idx = 'zero' WHERE idx = 0")
    for argv in reading_commands(campaign, store):
        assert "not an integer" in refused(capsys, *argv)
    recorded = Store(store, create=False)
    with pytest.raises(StoreError, match="not a name and two integers"):  # what a resume skips: never a text index
        recorded.recorded()
    recorded.close()


def test_a_duration_that_is_not_a_number_is_refused(campaign, store, capsys):
    execute(store, "UPDATE outcomes SET duration_s = 'slow' WHERE idx = 4")
    for argv in reading_commands(campaign, store):
        assert "not a number" in refused(capsys, *argv)


def test_a_report_of_another_crash_is_not_reproduced(campaign, store, capsys):
    abort, segfault = (store / "reports" / f"test.crashy-0-{i}.json" for i in (1, 2))
    assert cli.main(["reproduce", str(abort), "--target", CRASHY]) == 1
    assert "reported outcome: crash -> reproduced" in capsys.readouterr().out
    report = json.loads(abort.read_text())
    report["root_cause"] = json.loads(segfault.read_text())["root_cause"]  # a segfault's report; the case aborts
    abort.write_text(json.dumps(report))
    assert cli.main(["reproduce", str(abort), "--target", CRASHY]) == 1
    out = capsys.readouterr().out
    assert "reported outcome: crash -> NOT reproduced" in out and "SIGSEGV" in out and "SIGABRT" in out


def test_a_huge_shape_is_refused_before_any_target_sees_it(tmp_path, capsys):
    layout = {"kind": "blocked", "size_per_thread": [2, 4], "threads_per_warp": [2, 16], "warps_per_cta": [2, 4], "order": [1, 0]}
    params = {"kind": "blocked", "layout": layout, "shape": [1 << 40, 256]}  # case 26's, [2, 256], made 2^47 elements
    case = {"target": "triton.layouts", "seed": 0, "index": 26, "params": params}
    report = {"schema": schema.REPORT_VERSION, "case": case, "target": "triton.layouts", "outcome": "diverge"}
    for name, data in (("report.json", report), ("case.json", case)):
        path = tmp_path / name
        path.write_text(json.dumps(data))
        assert "shape spans more than" in refused(capsys, "reproduce", str(path), "--timeout", "5s")
    nested = {**case, "params": {"a": {"shape": [[1 << 20, 1 << 20], 2]}, "global_shape": [4, 4]}}
    with pytest.raises(schema.SchemaError, match="at params/a/shape"):
        schema.check(nested, "case", "a case")


def test_the_largest_shapes_the_generators_draw_are_valid():
    drawn = {"target": "t", "seed": 0, "index": 0, "params": {"shape": [1 << 12, 128], "global_shape": [1 << 9] * 2}}
    assert schema.check(drawn, "case", "a case") is drawn
    assert schema.check({**drawn, "params": {"shape": [1 << 24]}}, "case", "a case")  # the bound itself


@pytest.mark.parametrize("xfsz", ["SIG_IGN", "SIG_DFL"])  # Python's own setting, and a host that restored the default
def test_a_file_size_limit_ends_like_a_full_disk(tmp_path, xfsz):
    """Past ``ulimit -f`` a write fails (SIGXFSZ ignored, even where the caller restored its default, which kills):
    one line that says how to resume, exit 2, and the store resumes once the limit is raised."""
    pytest.importorskip("triton._C.libtriton")
    import resource

    out = tmp_path / "out"
    program = (f"import signal, sys; signal.signal(signal.SIGXFSZ, signal.{xfsz}); from layoutfuzz.harness.cli import main; "
               "sys.exit(main(sys.argv[1:]))")
    argv = [sys.executable, "-c", program, "run", "--targets", "triton.linear_layout", "--cases", "1500", "--jobs", "2",
            "-q", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.RLIM_INFINITY))

    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, preexec_fn=limited)
    errors = [line for line in done.stderr.splitlines() if line.startswith("layoutfuzz: error")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert len(errors) == 1 and "file size limit of 65,536 bytes" in errors[0] and f"--out {out} --resume" in errors[0]
    resumed = subprocess.run(argv[:3] + ["run", "--out", str(out), "--resume", "-q"], env=env, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert sqlite3.connect(out / DB).execute("SELECT count(DISTINCT idx) FROM outcomes").fetchone() == (1500,)
