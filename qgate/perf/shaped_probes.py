"""Perf probes at the prompt lengths the perf stage serves (issue 53 items 4 and 6).

A probe is a math item in its short form (~60 tokens). A fault that garbles only prompts
past some length never reaches it, though the perf scenario around it serves such prompts
all along. A *shaped* probe is the same item in the math suite's long form: the preamble
(evals/math/preamble.txt, repeated where a scenario is longer than it) cut to the scenario's
prompt length less `PROBE_MARGIN_TOKENS`, then the question. Both sides ask the same shaped
probes in the same scenario, so its probe gate pairs them as ever.

`perf.probes.shaped` says which scenarios shape theirs:

- `auto` (the default): a scenario whose prompts are longer than the longest prompt the
  quality suites grade (math.long's preamble, the recall contexts, the ladder's top): the
  lengths the perf stage serves are graded by default, at no cost where the suites already
  reach them (the demo's perf prompts are shorter than its math.long);
- `always`: every scenario long enough to hold a preamble;
- `never`: the short form everywhere.

`shape_budgets` is a pure function of the profile: the plan prints it and verify holds the
probe records to it (from perf derivation 13: a shaped scenario's probe that the server
counted shorter than its budget is refused). This module is pure, so that verify imports no
HTTP client: the cut itself asks the server's tokenizer (`preambles`, qgate/run/perf.py).
"""

from __future__ import annotations

from typing import Literal

from qgate.errors import BadInput
from qgate.perf.expand import expand_inputs
from qgate.profile import FixedScenario, MultiTurnScenario, Profile, Scenario
from qgate.profile.perf import run_names
from qgate.profile.side import side
from qgate.quality.math_set import long_budget

__all__ = [
    "MIN_SHAPED_TOKENS",
    "PROBE_MARGIN_TOKENS",
    "graded_tokens",
    "run_budgets",
    "served_tokens",
    "shape_budgets",
]

ShapeMode = Literal["auto", "always", "never"]

PROBE_MARGIN_TOKENS = 96
"""Room for the question, the bridge line, the instruction and the chat template around the
preamble of a shaped probe (the short form with its template is ~60-80 tokens)."""
MIN_SHAPED_TOKENS = 128
"""The shortest preamble worth shaping: below, the short form is as long as the traffic."""


def served_tokens(s: Scenario) -> int | None:
    """The longest prompt one (expanded) scenario serves, in tokens: a fixed scenario's input
    length, a conversation's last turn (its shared prefix and every earlier turn's input and
    output); None for a trace (its lengths are the file's)."""
    if isinstance(s, FixedScenario):
        lengths = s.input_tokens if isinstance(s.input_tokens, list) else [s.input_tokens]
        return max(lengths)
    if isinstance(s, MultiTurnScenario):
        return (
            s.shared_prefix_tokens + s.turns * s.turn_input_tokens + (s.turns - 1) * s.output_tokens
        )
    return None


def graded_tokens(profile: Profile) -> int:
    """The longest prompt the quality suites grade, in tokens (0: none of known length)."""
    spec = profile.quality
    out = 0
    if spec.math is not None and "long" in spec.math.prompts:
        limit = side(profile, "reference").max_model_len
        try:
            out = long_budget(spec.math.long_tokens, limit, spec.math.max_tokens)
        except BadInput:  # no room for the preamble: the run refuses it, nothing graded
            out = 0
    if spec.recall is not None:
        out = max(out, *spec.recall.context_tokens)
    if spec.context_ladder is not None:
        out = max(out, spec.context_ladder.up_to)
    return out


def shape_budgets(profile: Profile, mode: ShapeMode | None = None) -> dict[str, int]:
    """Per expanded scenario name (`name@inN` for an input matrix), the preamble tokens of its
    shaped probes under `mode` (default the profile's `perf.probes.shaped`); scenarios left
    out ask the short form."""
    perf = profile.perf
    mode = mode or (perf.probes.shaped if perf is not None else "never")
    if perf is None or perf.probes.items == 0 or mode == "never":
        return {}
    floor = graded_tokens(profile) if mode == "auto" else 0
    out: dict[str, int] = {}
    for s in (e for scenario in perf.scenarios for e in expand_inputs(scenario)):
        served = served_tokens(s)
        if served is None or served <= floor:
            continue
        budget = served - PROBE_MARGIN_TOKENS
        if budget >= MIN_SHAPED_TOKENS:
            out[s.name] = budget
    return out


def run_budgets(profile: Profile) -> dict[str, int]:
    """`shape_budgets` by run name (`name[@inN][@cN]`, as the records name their runs)."""
    budgets = shape_budgets(profile)
    perf = profile.perf
    if perf is None or not budgets:
        return {}
    out: dict[str, int] = {}
    for s in (e for scenario in perf.scenarios for e in expand_inputs(scenario)):
        if s.name in budgets:
            out |= {name: budgets[s.name] for name in run_names(s)}
    return out
