"""Triage signals that agree: the ledger holds what the findings page leaves open, `diff` and the nightly judge a
bucket by one rule, and writing the ledger changes only what changed."""

from __future__ import annotations

import difflib
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd

from layoutfuzz.generators.case import Case
from layoutfuzz.reports import ledger
from layoutfuzz.reports.buckets import diff_buckets
from layoutfuzz.reports.outcome import Outcome, Result
from layoutfuzz.reports.signatures import bucket_key, bucket_of, root_cause
from layoutfuzz.reports.store import Store
from layoutfuzz.reports.triage import Replay, Triage, night_replays

REPO = Path(__file__).resolve().parent.parent


# ---- the findings page and the ledger ---------------------------------------------------------


def _open_root_causes(text: str) -> list[tuple[str, str, str]]:
    """(target, outcome, signature) of each row of the findings page's table of open root causes."""
    section = text.split("\n## Open root causes\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) != 4 or cells[0] in ("target", "---"):
            continue
        target, outcome, signature = (re.fullmatch(r"(`+) ?(.*?) ?\1", c)[2] if c.startswith("`") else c for c in cells[:3])
        rows.append((target, outcome, signature))
    return rows


def test_the_shipped_ledger_holds_every_root_cause_the_findings_page_leaves_open():
    listed = _open_root_causes((REPO / "docs" / "findings.md").read_text())
    assert len(listed) >= 20 and ("triton.tma", "diverge", "store:granule-past-inner-bound") in listed  # the parse works
    known = ledger.load(REPO / "layoutfuzz-known.toml")  # each entry under its own bucket and its variants'
    missing = [row for row in listed if bucket_of(*row) not in known]
    assert not missing, f"open in docs/findings.md, not in layoutfuzz-known.toml: {missing}"
    for row in listed:  # open means open: none of them is recorded as fixed
        assert known[bucket_of(*row)].status != "fixed upstream", row


def test_the_rank_3_reorderings_are_one_root_cause_with_the_zero_offsets_with_their_reproducers_and_range():

    known = ledger.load(REPO / "layoutfuzz-known.toml")
    entry = known[bucket_of("triton.layouts", "diverge", "offset bases: not a memory layout (a zero offset basis)")]
    for target, signature, case in (("triton.layouts", "offset bases: different", "layouts-unswizzled-transposed-rank3-reordered.json"),
                                    ("triton.shared_layouts", "the same offsets in another order",
                                     "shared-layouts-unswizzled-transposed-rank3-reordered.json")):
        assert known[bucket_of(target, "diverge", signature)] is entry
        assert f"docs/results/cases/{case}" in entry.cases and (REPO / "docs/results/cases" / case).is_file()
    assert entry.first_bad == "3.8.0" and "3.7.1 good" in entry.bisected
    assert entry.targets == ("triton.layouts", "triton.shared_layouts", "triton.gluon_layouts")


def test_every_reduced_case_of_the_shipped_ledger_is_a_file():
    for problem in dict.fromkeys(ledger.load(REPO / "layoutfuzz-known.toml").values()):
        for case in problem.cases:
            assert (REPO / case).is_file(), (problem.title, case)


# ---- one rule for "fixed" ------------------------------------------------------------------------


def _store(path: Path, rows: list[tuple[int, str, str]]) -> pd.DataFrame:
    """A campaign of target 't' (seed 0): (index, outcome, signature) per case."""
    store = Store(path)
    for index, outcome, signature in rows:
        result = Result(Case("t", 0, index, {}), "f", Outcome(outcome), "detail", signature=signature)
        store.record(result, bucket_key(result), None, root_cause(result))
    frame = store.frame()
    store.close()
    return frame


def test_a_bucket_merely_absent_from_the_new_campaign_is_not_seen_not_fixed(tmp_path):
    old = _store(tmp_path / "old", [(1, "diverge", "gone"), (2, "diverge", "kept")])
    new = _store(tmp_path / "new", [(2, "diverge", "kept"), (7, "pass", "")])  # case 1 was not run again
    changes = diff_buckets(old, new).set_index("signature")
    assert changes.loc["gone", "status"] == "not seen" and changes.loc["kept", "status"] == "persisting"


def test_only_a_passing_reproducer_makes_a_bucket_fixed_in_a_diff(tmp_path):
    old = _store(tmp_path / "old", [(1, "diverge", "gone"), (3, "diverge", "other")])
    new = _store(tmp_path / "new", [(1, "pass", ""), (3, "diverge", "elsewhere")])  # both representatives ran again
    changes = diff_buckets(old, new).set_index("signature")
    assert changes.loc["gone", "status"] == "fixed"
    assert changes.loc["other", "status"] == "not seen"  # failing another way says nothing of this root cause
    assert changes.loc["elsewhere", "status"] == "new"


def test_diff_and_the_nightly_say_the_same_of_a_bucket_whose_reproducer_still_fails(tmp_path, capsys):
    # night 1 sees bucket X; night 2's random sample misses it, but its stored reproducer still fails the same way
    root = tmp_path / "nightly"
    first = _store(root / "2026-03-01", [(1, "diverge", "X"), (2, "pass", "")])
    second = _store(root / "2026-03-02", [(5, "pass", ""), (6, "diverge", "Y")])
    x = first[first["signature"] == "X"].iloc[0]
    triage = Triage(root)
    reproducer = {x.bucket: (Case("t", 0, 1, {}), False)}
    triage.judge("2026-03-01", {"t": "v1"}, _buckets(first), reproducer, {}, (), {"t": "t"})
    y = second[second["signature"] == "Y"].iloc[0]
    nightly = triage.judge("2026-03-02", {"t": "v1"}, _buckets(second), {y.bucket: (Case("t", 0, 6, {}), False)},
                           {x.bucket: Replay(x.bucket, "diverge", "X")}, (), {"t": "t"}).set_index("signature")["status"]
    triage.close()
    assert nightly["X"] == "persisting" and nightly["Y"] == "new"
    assert night_replays(root / "2026-03-02") == {x.bucket: "same"}
    changes = diff_buckets(first, second, night_replays(root / "2026-03-02")).set_index("signature")["status"]
    assert changes.to_dict() == nightly.to_dict()
    from layoutfuzz.harness.cli import main

    code = main(["diff", str(root / "2026-03-01"), str(root / "2026-03-02"), "--format", "csv"])
    shown = capsys.readouterr()
    assert code == 1  # Y is new
    assert "1 new, 1 persisting, 0 fixed" in shown.err and "\nfixed," not in shown.out


def _buckets(frame: pd.DataFrame) -> pd.DataFrame:
    from layoutfuzz.reports.buckets import bucket_table

    return bucket_table(frame)


# ---- writing the ledger ----------------------------------------------------------------------------


def _changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_one_changed_field_of_the_shipped_ledger_is_a_diff_of_a_few_lines(tmp_path):
    path = tmp_path / "layoutfuzz-known.toml"
    before = (REPO / "layoutfuzz-known.toml").read_text()
    path.write_text(before)
    problem = next(p for p in ledger.load(path).values() if p.bisected.endswith("(2026-11-23)"))
    ledger.add(path, replace(problem, bisected=problem.bisected.replace("2026-11-23", "2026-11-27")))
    changed = _changed_lines(before, path.read_text())
    assert changed == [f"-bisected = {_quoted(problem.bisected)}",
                       f"+bisected = {_quoted(problem.bisected.replace('2026-11-23', '2026-11-27'))}"]


def test_the_ledger_api_keeps_order_and_comments_and_appends_what_is_new(tmp_path):
    path = tmp_path / "known.toml"
    before = (REPO / "layoutfuzz-known.toml").read_text()
    path.write_text(before.replace("[[problem]]\n", "[[problem]]\n# reviewed by hand\n", 1))
    problems = ledger.load(path)
    first = next(iter(problems.values()))
    fresh = ledger.KnownProblem("t.x", "crash", "SIGSEGV", "a new one")
    problems[first.bucket] = replace(first, first_good="3.9.0", link="https://example.org/1")
    ledger.save(path, [*problems.values(), fresh])
    after = path.read_text()
    assert "# reviewed by hand" in after and len(_changed_lines(before, after)) <= 2 + 2 + 7  # the comment, 2 fields, 1 entry
    assert list(ledger.load(path)) == [*problems, fresh.bucket]  # the file's order, the new entry last
    assert ledger.load(path)[first.bucket].first_good == "3.9.0"
    ledger.save(path, [p for b, p in ledger.load(path).items() if b != fresh.bucket])  # removing an entry removes its lines
    assert "t.x" not in path.read_text() and list(ledger.load(path)) == list(problems)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def test_a_root_cause_with_variants_is_one_entry_known_under_each_bucket(tmp_path):
    path = tmp_path / "known.toml"
    path.write_text('[[problem]]\ntarget = "t.x"\noutcome = "crash"\nsignature = "SIGABRT: one"\ntitle = "one root cause"\n'
                    'variants = """\nSIGABRT: two\nSIGABRT: three"""\n')
    known = ledger.load(path)
    buckets = [bucket_of("t.x", "crash", s) for s in ("SIGABRT: one", "SIGABRT: two", "SIGABRT: three")]
    assert set(known) == set(buckets) and len(set(known.values())) == 1
    assert bucket_of("t.x", "crash", "SIGABRT: four") not in known
    ledger.save(path, known.values())  # written back once, variants kept
    assert path.read_text().count("[[problem]]") == 1 and set(ledger.load(path)) == set(buckets)


def test_a_variant_of_another_target_or_outcome_is_known_under_its_own_bucket(tmp_path):

    path = tmp_path / "known.toml"
    path.write_text('[[problem]]\ntarget = "t.x"\noutcome = "crash"\nsignature = "SIGABRT: one"\ntitle = "one root cause"\n'
                    'variants = """\n[t.y diverge] wrong values\n[t.y nonsense] kept as t.x\'s"""\n'
                    'reproducers = """\ncases/y.json"""\n')
    known = ledger.load(path)
    (problem,) = set(known.values())
    assert set(known) == {bucket_of("t.x", "crash", "SIGABRT: one"), bucket_of("t.y", "diverge", "wrong values"),
                          bucket_of("t.x", "crash", "[t.y nonsense] kept as t.x's")}  # an unknown outcome: a signature
    assert problem.targets == ("t.x", "t.y") and problem.cases == ("cases/y.json",)


def test_updating_an_entry_by_a_variants_bucket_keeps_its_identity_and_its_other_buckets(tmp_path):

    path = tmp_path / "known.toml"
    path.write_text('[[problem]]\ntarget = "t.x"\noutcome = "crash"\nsignature = "SIGABRT: one"\ntitle = "one root cause"\n'
                    'variants = """\n[t.y diverge] wrong values\nSIGABRT: two"""\n')
    before = set(ledger.load(path))
    variant = ledger.KnownProblem("t.y", "diverge", "wrong values", "the variant's title", first_good="3.9.0")
    assert ledger.add(path, variant) is False  # not new: the entry holds its bucket
    (problem,) = set(ledger.load(path).values())
    assert (problem.target, problem.signature, problem.first_good) == ("t.x", "SIGABRT: one", "3.9.0")
    assert set(ledger.load(path)) == before and path.read_text().count("[[problem]]") == 1
    assert bucket_of("t.y", "diverge", "wrong values") in before
