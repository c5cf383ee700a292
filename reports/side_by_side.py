"""Systems side by side: targets that draw one case model (``Target.case_model``: two implementations of CuTe's
algebra, say) ran the same cases, so per family the table says how many each passed and on how many cases their
outcomes differ (systems compared with each other as well as each with the oracle)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

import pandas as pd

COLUMNS = ("case model", "family", "cases", "systems", "ran by all", "passes", "outcomes differ")


def model_groups(case_models: Mapping[str, str | None]) -> list[tuple[str, tuple[str, ...]]]:
    """(case model, its targets) for each model that two or more of a campaign's targets draw."""
    groups: dict[str, list[str]] = {}
    for target, model in case_models.items():
        groups.setdefault(model or target, []).append(target)
    return [(model, tuple(sorted(names))) for model, names in sorted(groups.items()) if len(names) > 1]


def side_by_side(db: sqlite3.Connection, groups: Sequence[tuple[str, tuple[str, ...]]]) -> pd.DataFrame:
    """Per case model and family: the cases every system of the group recorded, those none of them called unsupported
    (a system whose API has no such case did not run it), each system's passes, and the cases all of them ran on
    which their outcomes differ (counted in SQLite)."""
    rows = []
    for model, targets in groups:
        first, *others = targets
        joins = " ".join(f"JOIN outcomes t{k} ON t{k}.target = ? AND t{k}.seed = t0.seed AND t{k}.idx = t0.idx"
                         for k in range(1, len(targets)))
        ran = " AND ".join(f"t{k}.outcome != 'unsupported'" for k in range(len(targets)))
        passes = ", ".join(f"sum(t{k}.outcome = 'pass')" for k in range(len(targets)))
        differ = " OR ".join(f"t{k}.outcome != t0.outcome" for k in range(1, len(targets)))
        query = (f"SELECT t0.family, count(*), sum({ran}), {passes}, sum(({ran}) AND ({differ})) FROM outcomes t0 {joins} "
                 "WHERE t0.target = ? GROUP BY t0.family ORDER BY t0.family")
        for family, cases, ran_count, *counts in db.execute(query, (*others, first)):
            *each, differ_count = counts
            rows.append((model, family, cases, " / ".join(targets), ran_count, " / ".join(str(n) for n in each), differ_count))
    return pd.DataFrame(rows, columns=COLUMNS)
