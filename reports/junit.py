"""JUnit XML of a campaign for CI systems: a test case per (target, family) that ran clean, and one
per root cause (bucket); a bucket fails only when it is new, and is skipped when it is known."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd


def junit_xml(table: pd.DataFrame, buckets: pd.DataFrame, known: set[str] | None, name: str) -> str:
    """``known``: the buckets that are not new (persisting, in the ledger); None: every bucket fails."""
    known = known or set()
    suites = ET.Element("testsuites", name=name)
    for target, rows in table[table["family"] != "(all)"].groupby("target", sort=True):
        suite = ET.SubElement(suites, "testsuite", name=str(target))
        failures = skipped = tests = 0
        problems = buckets[buckets["target"] == target]
        hit = {f for families in problems["families"] for f in str(families).split(", ")}
        for row in rows.itertuples():
            if row.family not in hit:
                tests += 1
                ET.SubElement(suite, "testcase", classname=str(target), name=f"{row.family} ({row.cases} cases)")
        for bucket in problems.itertuples():
            tests += 1
            case = ET.SubElement(suite, "testcase", classname=str(target), name=f"{bucket.outcome}: {bucket.signature}")
            text = f"{bucket.cases} case(s) in {bucket.families}; reproduce: layoutfuzz reproduce {bucket.representative}"
            if bucket.bucket in known:
                skipped += 1
                ET.SubElement(case, "skipped", message=f"known; {text}")
            else:
                failures += 1
                ET.SubElement(case, "failure", message=text, type=str(bucket.outcome)).text = text
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
