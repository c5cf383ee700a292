"""Who is responsible for a root cause: the ledger's word where the team gave one, else the target's
own knowledge (a lower layer replayed, a documented hardware behaviour), else the defaults: an
``error`` is the harness's; anything else is the system under test's, in the layer its target names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from layoutfuzz.reports.ledger import KnownProblem
from layoutfuzz.reports.outcome import Attribution

if TYPE_CHECKING:  # a target's own knowledge is asked for; the reports import nothing of the harness
    from layoutfuzz.harness.target import Target

HARNESS = Attribution("harness", "layoutfuzz: an oracle, a target wrapper or the runner",
                      "an exception in layoutfuzz's own code (outcome error)")


def attribute(target: Target | None, outcome: str, signature: str, known: KnownProblem | None = None) -> Attribution:
    """The party and layer responsible for one root cause of ``target``, with the evidence."""
    if known is not None:
        evidence = f"ledger: {known.title}" + (f" ({known.link})" if known.link else "")
        return Attribution(known.attribution, known.layer, evidence)
    if outcome == "error":
        return HARNESS
    if target is not None:
        own = target.attribute(outcome, signature)
        if own is not None:
            return own
    layer = (target.layer or target.name) if target is not None else ""
    if outcome == "timeout":
        return Attribution("system under test", layer, "no answer within the per-case limit; not replayed one layer down")
    return Attribution("system under test", layer,
                       "the oracle disagrees (it reproduces every worked example of the seeds); no lower layer replayed")
