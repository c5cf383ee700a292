"""What a report, a case file and a campaign's settings may hold, as JSON Schemas checked before any field
is used: they travel between people as data. Types, sizes and the known fields are checked;
files are read as strict JSON with a size bound, and nothing in them is unpickled, evaluated or imported."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.reports.outcome import OUTCOMES

REPORT_VERSION = 1  # the report schema this layoutfuzz writes and reads ("schema" in every report)
MAX_FILE_BYTES = 64 << 20  # a report keeps bounded values (16 KiB each); a case file is its params
MAX_INT = (1 << 63) - 1  # a seed or an index: what SQLite stores as an INTEGER
TEXT = 1 << 16  # characters of a free-text field (crash output is clipped to 16 KiB when stored)
MAX_SHAPE_ELEMENTS = 1 << 24  # elements a case's shape (any params key naming a shape) may span: the generators draw at
# most 2^19, and a larger one would make the oracle or the system under test allocate without bound

_NAME = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"^[^\x00-\x1f]+$"}
_TEXT = {"type": "string", "maxLength": TEXT}
_LINES = {"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": TEXT}}
_COUNT = {"type": "integer", "minimum": 0, "maximum": MAX_INT}

CASE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["target", "seed", "index", "params"],
    "properties": {
        "target": _NAME,
        "seed": _COUNT,
        "index": _COUNT,
        "params": {"type": "object", "maxProperties": 1000},
    },
}

REPORT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schema", "case", "target", "outcome"],
    "properties": {
        "schema": {"const": REPORT_VERSION},
        "case_id": {"type": "string", "maxLength": 300},
        "case": CASE,
        "target": _NAME,
        "target_spec": {"type": "string", "maxLength": 400},
        "family": {"type": "string", "maxLength": 1000},
        "outcome": {"enum": list(OUTCOMES)},
        "detail": _TEXT,
        "mismatch_count": _COUNT,
        "first_mismatches": _LINES,
        "signature": {"type": ["string", "null"], "maxLength": TEXT},
        "root_cause": _TEXT,
        "bucket": {"type": "string", "pattern": "^[0-9a-f]{12}$"},
        "expected": {},
        "observed": {},
        "duration_s": {"type": "number", "minimum": 0},
        "versions": {"type": "object", "maxProperties": 200, "additionalProperties": {"type": "string", "maxLength": 1000}},
        "reproduce": _TEXT,
        "reduced_case": CASE,
        "reduced_case_file": {"type": "string", "maxLength": 300, "pattern": r"^[^/\\\x00]+\.json$"},  # a name beside the report
        "reduced_replay": _TEXT,
        "reduced_fixpoint": {"type": "boolean"},
        "reduced_signature": {"type": ["string", "null"], "maxLength": TEXT},
        "reduced_expected": {},
        "reduced_observed": {},
        "reduced_mismatches": _LINES,
        "reduced_detail": _TEXT,
    },
}

CAMPAIGN = {  # the settings a campaign's store keeps (table `campaign`), read by --resume and the reading commands
    "type": "object",
    "required": ["targets", "seed", "shard", "cases"],  # no "cases" would resume a bounded campaign as a budget one
    "additionalProperties": False,
    "properties": {
        "targets": {"type": "array", "minItems": 1, "maxItems": 200, "items": {"type": "string", "minLength": 1, "maxLength": 400}},
        "seed": _COUNT,
        "shard": {"type": "string", "pattern": r"^[1-9][0-9]{0,8}/[1-9][0-9]{0,8}$"},
        "cases": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_INT},
        "timeout_s": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "memory_limit": {"type": ["integer", "string", "null"]},
        "started": {"type": "string", "maxLength": 100},
    },
}


class SchemaError(ValueError):
    """A report, case file or store that is not what layoutfuzz writes: refused before any field is used."""


@cache
def _validator(kind: str):
    from jsonschema import Draft202012Validator

    return Draft202012Validator({"case": CASE, "report": REPORT, "campaign": CAMPAIGN}[kind])


def check(data: Any, kind: str, where: str) -> Any:
    """``data`` if it holds to the schema of ``kind`` ("case", "report", "campaign"), else SchemaError in one line."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(kind).iter_errors(data))
    if error is None:
        for params, at in _case_params(data, kind):
            bounded_shapes(params, f"{where} is not a valid layoutfuzz {kind}", at)
        return data
    at = "/".join(str(p) for p in error.absolute_path) or "the top level"
    message = error.message if len(error.message) <= 200 else f"{error.message[:80]}...{error.message[-80:]}"
    raise SchemaError(f"{where} is not a valid layoutfuzz {kind}: {message} (at {at})")


def _case_params(data: dict[str, Any], kind: str) -> list[tuple[Any, str]]:
    """The params of the case(s) a checked case or report holds, with where they are."""
    if kind == "case":
        return [(data["params"], "params")]
    if kind == "report":
        return [(data[key]["params"], f"{key}/params") for key in ("case", "reduced_case") if key in data]
    return []


def bounded_shapes(params: Any, what: str, at: str = "params") -> None:
    """SchemaError where a list under a key that names a shape (``shape``, ``global_shape``, ...) spans more than
    MAX_SHAPE_ELEMENTS elements (its integers multiplied, nested ones too): checked before any target sees it."""
    stack = [(params, at)]
    while stack:
        value, path = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            if isinstance(key, str) and "shape" in key.lower() and isinstance(item, list) and _elements(item) > MAX_SHAPE_ELEMENTS:
                raise SchemaError(f"{what}: its {key[:40]} spans more than {MAX_SHAPE_ELEMENTS:,} elements, more than "
                                  f"any layoutfuzz case (at {path}/{key[:40]})")
            stack.append((item, f"{path}/{str(key)[:40]}"))


def _elements(shape: list[Any]) -> int:
    """The product of the integers in ``shape`` and its nested lists (a 0 or a negative counts as its size at least 1),
    stopping past MAX_SHAPE_ELEMENTS."""
    count, stack = 1, [shape]
    while stack and count <= MAX_SHAPE_ELEMENTS:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            count *= max(abs(value), 1)
    return count


def strict_constant(constant: str) -> Any:
    """``json.loads``'s parse_constant: NaN and Infinity are not JSON (reports write them as strings)."""
    raise ValueError(f"{constant} is not JSON")


def read_json(path: Path) -> Any:
    """A file's strict JSON (no NaN or Infinity), at most MAX_FILE_BYTES; SchemaError otherwise."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SchemaError(f"{path} is {size:,} bytes: larger than any layoutfuzz report or case ({MAX_FILE_BYTES:,})")
        with open(path, "rb") as handle:
            return json.loads(handle.read(MAX_FILE_BYTES + 1), parse_constant=strict_constant)
    except (OSError, ValueError, RecursionError) as exc:
        if isinstance(exc, SchemaError):
            raise
        raise SchemaError(f"{path} is not a layoutfuzz report or case: {str(exc)[:200]}") from None


def load_document(path: Path) -> tuple[dict[str, Any], bool]:
    """A report or a case file, checked: (its data, whether it is a report)."""
    data = read_json(path)
    is_report = isinstance(data, dict) and "case" in data
    check(data, "report" if is_report else "case", str(path))
    if is_report:
        consistent(data, str(path))
    return data, is_report


def load_report(path: Path) -> dict[str, Any]:
    """A report file, checked."""
    data = read_json(path)
    check(data, "report", str(path))
    return consistent(data, str(path))


def consistent(report: dict[str, Any], where: str) -> dict[str, Any]:
    """A report whose case, target and case id agree (each is used in a different place)."""
    case = report["case"]
    if report["target"] != case["target"]:
        raise SchemaError(f"{where} is not a valid layoutfuzz report: its target {report['target']!r} is not its case's "
                          f"({case['target']!r})")
    if "case_id" in report and report["case_id"] != f"{case['target']}/{case['seed']}/{case['index']}":
        raise SchemaError(f"{where} is not a valid layoutfuzz report: case_id {report['case_id'][:100]!r} is not its case's")
    if "reduced_case" in report and report["reduced_case"]["target"] != case["target"]:
        raise SchemaError(f"{where} is not a valid layoutfuzz report: its reduced case is of another target")
    return report


def report_path(directory: Path, stored: str) -> Path:
    """Where a store's row says its report is: always ``DIRECTORY/reports/NAME.json``; a path that leaves the
    reports folder (``..``, absolute, nested) is refused rather than read."""
    parts = PurePosixPath(stored).parts
    if len(parts) != 2 or parts[0] != "reports" or parts[1] in (".", "..") or not parts[1].endswith(".json") \
            or "\\" in stored or "\x00" in stored:
        raise SchemaError(f"{directory} is not a valid layoutfuzz campaign: a report path {stored[:100]!r} "
                          "is outside its reports folder")
    return Path(directory) / "reports" / parts[1]


def read_case_file(path: Path) -> tuple[Case, dict[str, Any] | None]:
    """The case a report or case file holds, and the report if it is one, each checked against its schema before any
    field is used (a malformed file: SchemaError)."""
    data, is_report = load_document(path)
    return Case.from_dict(data["case"] if is_report else data), (data if is_report else None)
