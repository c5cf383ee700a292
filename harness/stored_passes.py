"""Passes a campaign's workers store themselves.

At tens of thousands of cases a second, one parent process turning every outcome into a row is the bottleneck.
So in a campaign a worker writes its batch's plain passes (no values kept) straight into the store, one
transaction a batch, as the same rows the parent would write (``reports.store.outcome_row``), then tells the
parent only what it needs to count them (``harness.batching.Progress``): position, family and time. A worker
that dies after its commit and before saying so runs those cases again, and a case recorded again replaces its
row. Everything that is not a plain pass still goes through the parent, which writes its report first.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.reports.outcome import result_of
from layoutfuzz.reports.signatures import root_cause_and_bucket
from layoutfuzz.reports.store import connect, insert_rows, outcome_row

_connections: dict[str, sqlite3.Connection] = {}  # per worker process: made after the fork, kept between batches


def store_passes(store_path: str, passes: Sequence[tuple[Case, str, dict[str, Any]]]) -> None:
    """Inserts (case, family, answer) passes into the store at ``store_path`` in one transaction."""
    if store_path not in _connections:
        _connections[store_path] = connect(store_path)
    rows, templates = [], {}
    for case, family, answer in passes:
        # passes of a batch differ only in their case and time: the row of the first of each kind, made by outcome_row,
        # is every other's with those two replaced (thousands of rows a batch, each a Result and a signature otherwise)
        kind = (case.target, case.seed, family, answer.get("detail", ""), answer.get("signature", ""),
                answer.get("mismatch_count", 0), repr(answer.get("metrics")))
        if kind not in templates:
            result = result_of(case, family, answer)
            signature, bucket = root_cause_and_bucket(result)
            templates[kind] = outcome_row(result, bucket, signature, None)
        row = templates[kind]
        rows.append((*row[:2], case.index, *row[3:9], answer.get("duration_s", 0.0), *row[10:]))
    insert_rows(_connections[store_path], rows)
