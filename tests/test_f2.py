"""The F2 kernel cross-checked against galois (an independent GF(2) implementation)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutfuzz.oracles import f2
from layoutfuzz.oracles.linear_layout import LinearLayout

galois = pytest.importorskip("galois", reason="galois, the independent GF(2) reference, comes with the [crosscheck] extra (CI installs it)")

GF2 = galois.GF(2)


def _matrices(max_rows: int = 12, max_cols: int = 12):
    return st.integers(0, max_rows).flatmap(
        lambda r: st.integers(0, max_cols).flatmap(
            lambda c: st.lists(st.integers(0, (1 << r) - 1), min_size=c, max_size=c).map(lambda cols: (r, cols))
        )
    )


def _dense(rows: int, columns: list[int]) -> np.ndarray:
    return np.array([[(c >> r) & 1 for c in columns] for r in range(rows)], dtype=np.uint8).reshape(rows, len(columns))


@settings(max_examples=200)
@given(_matrices())
def test_rank_matches_galois(matrix):
    rows, columns = matrix
    assert f2.rank(columns) == np.linalg.matrix_rank(GF2(_dense(rows, columns)))


@settings(max_examples=200)
@given(_matrices(10, 14), st.data())
def test_solve_matches_galois_solvability_and_solves(matrix, data):
    rows, columns = matrix
    target = data.draw(st.integers(0, (1 << rows) - 1))
    solution = f2.solve(columns, [target])
    a = GF2(_dense(rows, columns))
    augmented = GF2(np.concatenate([_dense(rows, columns), _dense(rows, [target])], axis=1))
    solvable = np.linalg.matrix_rank(augmented) == np.linalg.matrix_rank(a)
    assert (solution is not None) == solvable
    if solution is not None:
        x = GF2(_dense(len(columns), solution))
        assert np.array_equal(a @ x, GF2(_dense(rows, [target])))


@settings(max_examples=100)
@given(st.integers(1, 10).flatmap(lambda n: st.lists(st.integers(0, (1 << n) - 1), min_size=n, max_size=n)
                                  .map(lambda cols: (n, cols))))
def test_inverse_matches_galois(matrix):
    n, columns = matrix
    a = GF2(_dense(n, columns))
    layout = LinearLayout.from_columns([("in", 1 << n)], [("out", 1 << n)], columns)
    if np.linalg.matrix_rank(a) < n:
        assert not layout.is_invertible()
        return
    assert np.array_equal(layout.invert().matrix(), np.linalg.inv(a).view(np.ndarray))


@settings(max_examples=100)
@given(_matrices(8, 8), _matrices(8, 8))
def test_multiply_matches_galois(outer, inner):
    rows, outer_cols = outer
    inner_rows, inner_cols = inner
    inner_cols = [c & ((1 << len(outer_cols)) - 1) for c in inner_cols]
    product = f2.multiply(outer_cols, inner_cols)
    want = GF2(_dense(rows, outer_cols)) @ GF2(_dense(len(outer_cols), inner_cols))
    assert np.array_equal(_dense(rows, product), want.view(np.ndarray))

