"""What a system under test must provide to be fuzzed: the target interface.

A target generates cases from a ``Source``, computes the expected result with an oracle and
the observed result with its system under test, and compares them. Subclass ``Target`` (or
provide the same attributes) and register it under the entry-point group
``layoutfuzz.targets``, or pass ``--target module:attr``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source, source_for
from layoutfuzz.generators.space import Space
from layoutfuzz.harness.compare import Comparison, compare_values
from layoutfuzz.reports.outcome import Attribution, Outcome  # noqa: F401  (the target interface's)

MALFORMED = (ValueError, KeyError, TypeError, IndexError, AttributeError)  # what a ``validate`` of bad params raises


@dataclass(frozen=True)
class Availability:
    """Whether a target can run on this machine, and if not, why."""

    available: bool
    reason: str = ""


class Unsupported(Exception):
    """Raised by a target for a case (or all cases) it cannot run here; the message says why."""


class Target:
    """Base class of targets; override ``generate``, ``expected`` and ``observed`` at least."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    layer: ClassVar[str] = ""  # the layer of the system under test its findings are blamed on by default
    # modules the fork server imports once, so that every worker (and each one replacing a crashed worker)
    # starts with them loaded; never one that initialises a GPU when imported
    preload: ClassVar[tuple[str, ...]] = ()
    # modules each worker imports on its main thread before any warm_up_worker thread starts and before its first case
    # (with its preload, and every other target's of the campaign: one union, sorted; ``harness.worker``): what the
    # target's warm_up_worker thread or its cases import that another thread could be importing at the same time
    # (a module read while another thread imports it is half-initialised); may name what the fork server must not import
    imports: ClassVar[tuple[str, ...]] = ()
    # whose case stream it draws (default: its own name): targets of one system-independent case model (two CuTe
    # implementations) share it, so the same seed and index give them the same case, side by side
    case_model: ClassVar[str | None] = None
    # the most cases one worker call takes (the runner sizes batches to about batch_seconds of work below it)
    max_batch: ClassVar[int] = 256
    # the work one worker call aims at: longer amortises a launch and a transaction, shorter keeps a deadline, Ctrl-C
    # and the bisection of a crashed batch cheap
    batch_seconds: ClassVar[float] = 0.1
    # generate returns only what JSON reads back as (dicts of str keys, lists, str, int, bool, None): its params are
    # taken as they are, without the check and JSON round trip every case otherwise gets (a test checks the claim)
    plain_params: ClassVar[bool] = False

    def warm_up(self) -> None:
        """What every worker would otherwise do before its first case (caches, contexts), done once in the fork server
        that forks them, so that a worker replacing a crashed one starts warm. Never a GPU context, a thread left running
        or a case: a fork of a process with either is unsafe, and a crash here would take the server."""

    def warm_up_worker(self) -> None:
        """What a new worker may begin at once, beside its first batch, that the fork server cannot do for it (a GPU
        context): started in a daemon thread, never waited for, its failure left to the first case to meet. The worker
        has imported every target's ``preload`` and ``imports`` by then: the thread imports nothing else."""

    def availability(self) -> Availability:
        """Whether what ``requires`` names is present; checked once per campaign."""
        return Availability(True)

    def versions(self) -> Mapping[str, str]:
        """Versions of the system under test, recorded in every report."""
        return {}

    def generate(self, source: Source) -> Mapping[str, Any]:
        """The JSON-serialisable parameters of one case, drawn from ``source`` alone."""
        raise NotImplementedError

    def validate(self, case: Case) -> None:
        """Raises ValueError if the case's params are malformed (for cases a user hands in)."""

    def family(self, case: Case) -> str:
        """The group this case is counted in by the pass-rate tables."""
        return "all"

    def timeout_cause(self, case: Case) -> str:
        """What a case that ran out of time was doing, where a target's operations differ in cost so much that two
        slow ones are two root causes (a timeout's signature is then "timeout: <this>"); "" for one root cause."""
        return ""

    def crash_cause(self, case: Case, detail: str) -> str:
        """What a case whose worker died was doing, where the crash (``detail``) names no cause of its own and the
        target's operations are different root causes (a device fault in one operation's kernel and in another's): the
        crash's signature then ends in ": <this>"; "" for none."""
        return ""

    def parameter_space(self) -> Space | None:
        """Every parameter ``generate`` draws, with its legal range (``layoutfuzz coverage``); None: not declared."""
        return None

    def expected(self, case: Case) -> Any:
        """The oracle's answer."""
        raise NotImplementedError

    def observed(self, case: Case) -> Any:
        """The system under test's answer (runs in an isolated worker process)."""
        raise NotImplementedError

    def expected_batch(self, cases: Sequence[Case]) -> Sequence[Any]:
        """The oracle's answers for many cases at once (a vectorised oracle overrides this). An entry that
        is an exception instance is that case's raise; if the call itself raises, each case runs alone."""
        return [_answer(self.expected, case) for case in cases]

    def observed_batch(self, cases: Sequence[Case]) -> Sequence[Any]:
        """The system under test's answers for many cases at once (one launch for all of them), entries as
        in ``expected_batch``. A crash or hang in it is bisected by the runner down to the case(s) causing it."""
        return [_answer(self.observed, case) for case in cases]

    def compare_batch(self, cases: Sequence[Case], expected: Sequence[Any], observed: Sequence[Any]) -> Sequence[Comparison]:
        """``compare`` for many cases at once (a vectorised comparison overrides this)."""
        return [self.compare(c, e, o) for c, e, o in zip(cases, expected, observed, strict=True)]

    def metrics(self, case: Case, observed: Any) -> Mapping[str, float]:
        """Numbers measured on this case (e.g. instruction counts), averaged per family in tables."""
        return {}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """Whether they agree; the default is exact equality, element by element."""
        return compare_values(expected, observed)

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        """Who is responsible for a root cause of this target, where the target knows better than
        "its system under test" (a lower layer replayed, a documented hardware behaviour); None: the default."""
        return None

    def shrink(self, case: Case) -> Iterator[Mapping[str, Any]]:
        """Smaller params of ``case`` in the target's own terms (drop a basis vector, halve a dimension,
        fewer warps, a narrower element...), each valid by construction; the reducer tries them first."""
        return iter(())

    def reproducer_script(self, case: Case) -> str | None:
        """A script for an upstream issue (``layoutfuzz export``): it imports only the system under test (and NumPy),
        builds ``case`` with the system's public API, prints expected and observed and exits 1 while the problem
        shows, 0 once it is gone, 2 where the release cannot express the case; None: no reproducer for it."""
        return None

    def problem_script(self, case: Case, signature: str) -> str | None:
        """``reproducer_script`` for the known problem of ``signature`` that ``case`` reproduces: a target whose
        answers tell apart problems one case can show overrides it, so that the script exits 0 once this one is gone."""
        return self.reproducer_script(case)


def make_case(target: Target, seed: int, index: int) -> Case:
    """Case ``index`` of ``target`` in the campaign with ``seed`` (deterministic)."""
    params = target.generate(source_for(target.case_model or target.name, seed, index))
    return Case(target.name, seed, index, params if target.plain_params or _plain(params) else json.loads(json.dumps(params)))


_PLAIN_SCALARS = (str, int, bool, type(None))


def _plain(value: Any) -> bool:
    """Whether ``value`` is already what its JSON reads back as (dicts of str keys, lists, str, int, bool, None: no tuple,
    float or subclass), so that a case's params need no round trip through JSON to be their canonical form."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    return kind in _PLAIN_SCALARS


def package_versions(*names: str) -> dict[str, str]:
    """The installed version of each named distribution (those not installed left out), for a target's ``versions``."""
    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def _answer(method: Callable[[Case], Any], case: Case) -> Any:
    """``method(case)``, or the exception it raised (an entry of a batch's answers)."""
    try:
        return method(case)
    except Exception as exc:
        return exc


def only_answer(answers: Sequence[Any]) -> Any:
    """The answer of a batch of one, raised where the batch gave its exception instead (a per-case method written as
    its batch method: ``observed`` from ``observed_batch``)."""
    (answer,) = answers
    if isinstance(answer, BaseException):
        raise answer
    return answer


def batched(target: Target) -> bool:
    """Whether ``target`` overrides a batch method, so that a batch of its cases is worth one call."""
    kind = type(target)
    return any(getattr(kind, m, None) is not getattr(Target, m) for m in ("expected_batch", "observed_batch", "compare_batch"))
