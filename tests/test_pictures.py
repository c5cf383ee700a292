"""Pictures and the offline HTML report: what they show is checked on the PNG's pixels and the page."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pytest

from layoutfuzz.harness import registry  # noqa: F401  (hands reports.pictures the targets that draw their own pictures)
from tests.test_cli import CRASHY, layoutfuzz

pytest.importorskip("matplotlib")


def _image(png: bytes) -> np.ndarray:
    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(png))


def _red_pixels(png: bytes) -> int:
    image = _image(png)
    return int(((image[..., 0] > 0.8) & (image[..., 1] < 0.2) & (image[..., 2] < 0.2)).sum())


def _tma_report(mismatches):
    params = {"elem_bits": 32, "swizzle": 128, "block": [8, 32], "global_shape": [8, 30], "coord": [0, 0], "row_pad": 2,
              "num_warps": 1}
    return {"target": "triton.tma", "case_id": "triton.tma/0/0", "outcome": "diverge", "case": {"params": params},
            "expected": {}, "observed": {}, "first_mismatches": mismatches}


def test_tma_picture_shows_the_wrong_cells_in_red_and_only_them():
    from layoutfuzz.reports.pictures import picture

    clean = _red_pixels(picture(_tma_report([])))
    wrong = _red_pixels(picture(_tma_report(["cell 0x00070: expected 00 got 11", "cell 0x000f0: expected 00 got 11"])))
    assert clean == 0 and wrong > 500


def test_holder_picture_marks_disagreeing_threads():
    from layoutfuzz.reports.pictures import picture

    holders = list(range(32)) * 4
    report = {"target": "triton.convert_layout", "case_id": "c/0/0", "outcome": "diverge",
              "case": {"params": {"shape": [8, 16]}}, "first_mismatches": [],
              "expected": {"holders_a": holders, "holders_b": holders, "data_mismatches": 0},
              "observed": {"holders_a": holders, "holders_b": holders[:-1] + [5], "data_mismatches": 0}}
    assert _red_pixels(picture(report)) > 0
    same = dict(report, observed=report["expected"])
    assert _red_pixels(picture(same)) == 0


def test_html_report_opens_offline_with_one_picture_per_bucket(tmp_path):
    run = layoutfuzz("run", "--target", CRASHY, "--cases", "5", "--timeout", "2", "--jobs", "2", "-q", "--out", "out",
                     cwd=tmp_path)
    assert run.returncode == 0
    done = layoutfuzz("html", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "out" / "report.html").read_text()
    assert "4 root cause(s)" in page and "<table" in page
    assert "http://" not in page and "https://" not in page  # nothing fetched: it opens offline
    images = re.findall(r"src='data:image/png;base64,([^']+)'", page)  # the divergence is drawn
    assert len(images) == 1 and _image(base64.b64decode(images[0])).shape[0] > 100
    assert page.count("<pre>") == 3 and "SIGABRT" in page and "SIGSEGV" in page  # crashes and the hang: their text


def _bank_report(params, exact, triton):
    return {"target": "triton.bank_conflicts", "case_id": "triton.bank_conflicts/0/0", "outcome": "diverge",
            "case": {"target": "triton.bank_conflicts", "seed": 0, "index": 0, "params": params}, "first_mismatches": [],
            "expected": {"bank_conflicts": exact, "lemma_c": 1, "vector": 1}, "observed": {"bank_conflicts": triton}}


def test_bank_picture_marks_the_conflicting_lanes_in_red_and_only_when_there_is_a_conflict():
    from layoutfuzz.oracles import triton_layouts as tl
    from layoutfuzz.reports.pictures import picture

    blocked = tl.to_dict(tl.BlockedLayout((1, 1), (1, 32), (1, 1), (1, 0)))
    # 32 lanes along a row of 32-bit words: one word per bank, no conflict
    clean = {"shared_kind": "swizzled_shared", "elem_bits": 32, "shape": [8, 32], "distributed": blocked,
             "shared": tl.to_dict(tl.SwizzledSharedLayout(1, 1, 1, (1, 0)))}
    assert _red_pixels(picture(_bank_report(clean, 0, 0))) == 0
    # 32 lanes down a column of a 32-word-wide unswizzled tile: every lane in bank 0, 32 different words
    column = dict(clean, distributed=tl.to_dict(tl.BlockedLayout((1, 1), (32, 1), (1, 1), (1, 0))), shape=[32, 32])
    assert _red_pixels(picture(_bank_report(column, 31, 0))) > 0


def test_layout_picture_marks_elements_held_by_another_thread():
    from layoutfuzz.oracles import triton_layouts as tl
    from layoutfuzz.reports.pictures import picture

    layout = tl.BlockedLayout((1, 1), (4, 8), (1, 1), (1, 0))
    bases = {n: [list(b) for b in bs] for n, bs in layout.linear_layout([8, 8]).in_dims}
    report = {"target": "triton.layouts", "case_id": "triton.layouts/0/0", "outcome": "diverge", "first_mismatches": [],
              "case": {"target": "triton.layouts", "seed": 0, "index": 0,
                       "params": {"kind": "blocked", "layout": tl.to_dict(layout), "shape": [8, 8]}},
              "expected": bases, "observed": bases}
    assert _red_pixels(picture(report)) == 0
    swapped = {**bases, "lane": [bases["lane"][1], bases["lane"][0], *bases["lane"][2:]]}
    assert _red_pixels(picture({**report, "observed": swapped})) > 0
