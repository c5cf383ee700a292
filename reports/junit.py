"""JUnit XML of a campaign for CI systems: a test case per (target, family) that ran clean, and one
per bucket; a bucket fails unless a baseline already had it (then it is skipped as known)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd


def junit_xml(table: pd.DataFrame, buckets: pd.DataFrame, changes: pd.DataFrame | None, name: str) -> str:
    known = set() if changes is None else set(changes.loc[changes["status"] == "persisting", "bucket"])
    suites = ET.Element("testsuites", name=name)
    for target, rows in table[table["family"] != "(all)"].groupby("target", sort=True):
        suite = ET.SubElement(suites, "testsuite", name=str(target))
        failures = skipped = tests = 0
        for row in rows.itertuples():
            problems = buckets[(buckets["target"] == target) & (buckets["family"] == row.family)]
            if problems.empty:
                tests += 1
                ET.SubElement(suite, "testcase", classname=str(target), name=f"{row.family} ({row.cases} cases)")
            for bucket in problems.itertuples():
                tests += 1
                case = ET.SubElement(suite, "testcase", classname=str(target),
                                     name=f"{row.family} {bucket.outcome}: {bucket.signature}")
                text = f"{bucket.cases} case(s); reproduce: layoutfuzz reproduce {bucket.representative}"
                if bucket.bucket in known:
                    skipped += 1
                    ET.SubElement(case, "skipped", message=f"known since the baseline; {text}")
                else:
                    failures += 1
                    ET.SubElement(case, "failure", message=text, type=str(bucket.outcome)).text = text
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
