"""Commands on one case: ``reproduce`` (re-run it, expected vs observed) and ``reduce`` (shrink it
while it fails the same way), their parsers and their handlers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layoutfuzz.generators.case import Case, parse_case_id
from layoutfuzz.harness import registry, trust
from layoutfuzz.harness.batching import GENERATE_FAILED
from layoutfuzz.harness.campaign import (
    UsageError,
    load_target,
    open_store,
    reduced_path,
    replay_command,
    save_reduction,
)
from layoutfuzz.harness.cli.options import (
    add_commands,
    add_jobs,
    add_out,
    add_timeout,
    add_verbose,
    output_file,
    positive_int,
    target_argument,
)
from layoutfuzz.harness.runner import Runner
from layoutfuzz.harness.target import MALFORMED, Outcome, Target, make_case
from layoutfuzz.reports import schema
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.outcome import Result
from layoutfuzz.reports.store import DB_NAME, StoreError


@dataclass(frozen=True)
class NamedCase:
    """The case CASE names, its target spec and loaded target, and where it came from."""

    case: Case
    spec: str
    target: Target
    report: dict[str, Any] | None  # the report it was taken from, if any
    report_path: Path | None
    case_file: Path | None  # the case file it was read from, if any
    store_dir: Path | None  # the campaign it was found in, if any


def _trusted(recorded: str, where: str, name: str, args: argparse.Namespace) -> str:
    """The spec to load for a target a file or store names: ``--target`` when given (the user's choice), else an
    installed target's; any other spec in data is refused, not imported."""
    if args.target:
        return args.target
    try:
        return trust.trusted_spec(recorded, where, name)
    except trust.UntrustedTarget as exc:
        raise UsageError(str(exc)) from None


def _from_argument(args: argparse.Namespace) -> tuple[Case, str, dict[str, Any] | None, Path | None, Path | None, Path | None]:
    path = Path(args.case)
    if path.is_file():
        case, report = schema.read_case_file(path)
        recorded = (report or {}).get("target_spec") or case.target
        spec = _trusted(recorded, f"{path}", case.target, args)
        return case, spec, report, (path if report else None), (None if report else path), None
    key = parse_case_id(args.case)
    if key is None:
        raise UsageError(f"{args.case!r} is neither a file nor a case id TARGET/SEED/INDEX")
    target_name, seed, index = key
    spec = args.target or target_name
    if (Path(args.out) / DB_NAME).exists():
        store = open_store(args.out)
        try:
            if not args.target:  # an installed target of this name; else the refusal names the store's foreign spec
                foreign = [s for s in store.meta().get("targets", []) if trust.installed_spec(s) is None]
                installed = trust.installed_spec(target_name) is not None
                recorded = target_name if installed or len(foreign) != 1 else foreign[0]
                spec = _trusted(recorded, f"the campaign in {args.out}", target_name, args)
            found = store.find(args.case)
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        finally:
            store.close()
        if found:
            case, report_path = found
            case = case or generated(load_target(spec), seed, index)  # a pass (or unsupported case) kept without its parameters
            report_file = Path(report_path) if report_path and Path(report_path).exists() else None
            report = None
            if report_file is not None:
                try:
                    report = schema.load_report(report_file)
                except schema.SchemaError as exc:
                    raise UsageError(str(exc)) from None
            return case, spec, report, report_file, None, Path(args.out)
    if not args.target:
        spec = _trusted(target_name, f"case id {args.case}", target_name, args)
    return generated(load_target(spec), seed, index), spec, None, None, None, None


def generated(target: Target, seed: int, index: int) -> Case:
    """Case ``index`` of ``target`` with ``seed``; a target that raises generating it is a usage error naming why
    (a campaign records such a case as an error of family ``generate``, with no params to replay)."""
    try:
        return make_case(target, seed, index)
    except Exception as exc:  # the target's own code: any exception it raises
        raise UsageError(f"{target.name} cannot generate case {target.name}/{seed}/{index}: its generate raised "
                         f"{type(exc).__name__}: {str(exc)[:300]}") from None


def named_case(args: argparse.Namespace) -> NamedCase:
    """The case CASE names (a report, a case file or TARGET/SEED/INDEX); a case its target rejects
    is a usage error."""
    case, spec, report, report_path, case_file, store_dir = _from_argument(args)
    target = load_target(spec)
    if target.name != case.target:
        raise UsageError(f"case {case.case_id} is a case of {case.target!r}, not of {target.name!r} ({spec})")
    if (report or {}).get("family") == GENERATE_FAILED and not case.params:  # its campaign could not draw it
        case = generated(target, case.seed, case.index)
    try:
        target.validate(case)
        target.family(case)
    except MALFORMED as exc:
        raise UsageError(f"malformed case {case.case_id}: {str(exc)[:300]}") from None
    return NamedCase(case, registry.resolve(spec), target, report, report_path, case_file, store_dir)


def run_one(spec: str, case: Case, target: Target, timeout: float) -> Result:
    """One case in an isolated worker (or ``unsupported`` where its target cannot run here)."""
    family = target.family(case)
    availability = target.availability()
    if not availability.available:
        return Result(case, family, Outcome.UNSUPPORTED, availability.reason)
    results: list[Result] = []
    with Runner(jobs=1, timeout_s=timeout) as runner:
        runner.submit(spec, case, family)
        while runner.in_flight:
            results += runner.results()
    return results[0]


def cmd_reproduce(args: argparse.Namespace) -> int:
    named = named_case(args)
    case = named.case
    print(f"case {case.case_id} ({named.target.name}, family {named.target.family(case)})")
    print(f"params: {json.dumps(case.params)[:2000]}")
    result = run_one(named.spec, case, named.target, args.timeout)
    print(f"outcome: {result.outcome.value}")
    if result.detail:
        print(f"detail: {result.detail}")
    if result.outcome is Outcome.DIVERGE:
        print(f"{result.mismatch_count} mismatch(es); first:")
        for line in result.mismatches:
            print(f"  {line}")
    if args.verbose:
        print(f"expected: {json.dumps(result.expected)[:4000]}")
        print(f"observed: {json.dumps(result.observed)[:4000]}")
    if named.report is not None:
        same, why = reproduced(named.report, result)
        print(f"reported outcome: {named.report.get('outcome')} -> {'reproduced' if same else f'NOT reproduced ({why})'}")
    if args.json:
        write_atomically(Path(args.json), json.dumps(verdict(result), indent=1) + "\n")
    return 0 if result.outcome is Outcome.PASS else 1


def reproduced(report: dict[str, Any], result: Result) -> tuple[bool, str]:
    """Whether a replay reproduced a report: the same outcome and the same root cause (its signature: another crash of
    the same signal is another problem), with what differs where it did not."""
    from layoutfuzz.reports.signatures import root_cause

    if report.get("outcome") != result.outcome.value:
        return False, f"this run: {result.outcome.value}"
    if result.outcome is Outcome.PASS or "root_cause" not in report:  # a report without one: its outcome is all it says
        return True, ""
    cause = root_cause(result)
    return cause == report["root_cause"], f"root cause {report['root_cause'][:160]!r}, this run's {cause[:160]!r}"


def verdict(result: Result) -> dict[str, Any]:
    """What a replay gave, for tools (``bisect`` reads it): outcome, root cause, bucket, versions."""
    from layoutfuzz.reports.report import environment_versions
    from layoutfuzz.reports.signatures import bucket_key, root_cause

    failed = result.outcome is not Outcome.PASS
    return {"case": result.case.case_id, "target": result.case.target, "outcome": result.outcome.value,
            "signature": root_cause(result) if failed else "", "bucket": bucket_key(result) if failed else "",
            "versions": environment_versions()}


def _reduced_file(args: argparse.Namespace, named: NamedCase) -> Path:
    """Where the reduced case goes: ``--write``, else beside its report or case file, else in the
    campaign's ``reports/`` (never the working directory)."""
    if args.write:
        return Path(args.write)
    if named.report_path is not None:
        return reduced_path(named.report_path)
    if named.case_file is not None:
        return reduced_path(named.case_file)
    case = named.case
    return Path(args.out) / "reports" / f"{case.target}-{case.seed}-{case.index}.reduced.json"


def cmd_reduce(args: argparse.Namespace) -> int:
    from layoutfuzz.harness.reduce import reduce_case

    named = named_case(args)
    case, target = named.case, named.target
    if not target.availability().available:
        raise UsageError(f"{target.name} cannot run here: {target.availability().reason}")
    with Runner(jobs=args.jobs, timeout_s=args.timeout) as runner:
        done = reduce_case(named.spec, target, case, runner, args.max_tries, progress=lambda line: print(line, file=sys.stderr))
    if done is None:
        print(f"{case.case_id} passes: nothing to reduce")
        return 1
    written = _reduced_file(args, named)
    replay = replay_command(written, case.target, named.spec)
    save_reduction(done, written, named.report_path, replay)
    state = "a fixpoint: no single shrink fails the same way" if done.fixpoint else f"stopped after --max-tries {args.max_tries}"
    print(f"{done.outcome.value} ({done.signature or 'no signature'}) kept through {done.steps} shrinking step(s), "
          f"{done.tries} tries; {state}")
    print(f"original: {json.dumps(case.params)[:2000]}")
    print(f"reduced:  {json.dumps(done.reduced.params)[:2000]}")
    print(f"written: {written}")
    print(f"reproduce: {replay}")
    return 0


# ---- parsers ----------------------------------------------------------------------------------------


def _case_arguments(parser: argparse.ArgumentParser) -> None:
    """CASE and how to find and run it (reproduce, reduce)."""
    parser.add_argument("case", metavar="CASE")
    add_out(parser, "campaign directory to look case ids up in", writes=True)
    parser.add_argument("--target", type=target_argument, metavar="MODULE:ATTR",
                        help="the target, if it is not a built-in or plug-in")
    add_timeout(parser, "per-run limit (60s)", default=60.0)


def _add_reproduce(sub: argparse._SubParsersAction) -> None:
    rep = sub.add_parser("reproduce", help="re-run one case and show expected vs observed",
                         description="Re-run one case in an isolated worker and show what the oracle and the "
                         "system under test say. CASE is a report (OUT/reports/*.json), a case JSON file, or a case "
                         "id TARGET/SEED/INDEX. Exit 0 if it passes, 1 if it still diverges (or crashes, ...).")
    _case_arguments(rep)
    add_verbose(rep, "print expected and observed in full")
    rep.add_argument("--json", type=output_file, metavar="FILE",
                     help="also write the verdict as JSON: outcome, root-cause signature, bucket, versions")
    rep.set_defaults(func=cmd_reproduce)


def _add_reduce(sub: argparse._SubParsersAction) -> None:
    red = sub.add_parser("reduce", help="shrink a failing case while it fails the same way",
                         description="Reduce a failing case (a report, a case file or TARGET/SEED/INDEX) while it keeps "
                         "the same outcome and root-cause signature: first the target's own shrinks (drop a basis "
                         "vector, halve a dimension, fewer warps, a narrower element), then generic edits, each kept "
                         "only if the target's validation (the generators' rules) accepts it, each try in an isolated "
                         "worker, until no single shrink fails the same way. Writes the reduced case beside its report "
                         "or case file (or in OUT/reports/), which `layoutfuzz reproduce FILE` replays; a report gains "
                         "it as `reduced_case`. Exit 0 when reduced, 1 when the case passes, 2 on bad input.")
    _case_arguments(red)
    red.add_argument("--max-tries", type=positive_int, default=500, help="give up shrinking after this many tries")
    add_jobs(red, "candidates tried at once, each in its own worker (default: one per core)")
    red.add_argument("--write", type=output_file, metavar="FILE",
                     help="where the reduced case goes (default: beside its report or case file, NAME.reduced.json)")
    red.set_defaults(func=cmd_reduce)


PARSERS = {"reproduce": _add_reproduce, "reduce": _add_reduce}


def add_parsers(sub: argparse._SubParsersAction, only: Collection[str] | None = None) -> None:
    """The parsers of reproduce and reduce (``only``: of those named)."""
    add_commands(sub, PARSERS, only)
