"""The glossary: the house words, each in one sense, with the module that owns it.

Rendered into docs/reference/glossary.md by `make docs` (qgate/cli/docgen.py; the docgen test
fails when the page is stale); tests/unit/core/test_glossary.py fails when a term's module is
gone, so the page cannot point at code that moved.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TERMS", "Term", "render"]


@dataclass(frozen=True)
class Term:
    """One word and what it means here."""

    word: str
    meaning: str
    """In Markdown; links are relative to docs/reference/."""
    owner: str
    """The module that owns the notion (a path from the repository root)."""


INTRO = "Words the code, the reports and these pages use in one sense each."

TERMS: tuple[Term, ...] = (
    Term(
        word="side",
        meaning=(
            "One of the two configurations being compared: the *reference* (what is served today) "
            "or the *candidate* (the change). A side's effective engine, arguments, environment and"
            " engine version have one owner in the code, `side(profile, role)`."
        ),
        owner="qgate/profile/side.py",
    ),
    Term(
        word="life",
        meaning=(
            "One start-to-stop of a side's server. A run plans its lives first (`qgate plan` prints"
            " them): the reference's, each candidate's, a preflight, later perf rounds' fresh "
            "lives, attribution trials. An *executor* decides where each life runs (this machine, "
            "a node of a Ray cluster, or a plug-in's)."
        ),
        owner="qgate/runtime/lives.py",
    ),
    Term(
        word="suite",
        meaning=(
            "A set of quality items with its own way of asking and scoring them (math, recall, "
            "divergence, lm-eval, tool calls, structured output, context ladder); configured under "
            "`quality:` and registered in qgate/profile/suites.py. A suite produces one or more "
            "*results* (`math.short`, `recall.4096`), each gated on its own."
        ),
        owner="qgate/profile/suites.py",
    ),
    Term(
        word="gate",
        meaning=(
            "One pass/fail rule over the records, with its observed value, limit and reason; see "
            "[Gate families](gates.md)."
        ),
        owner="qgate/core/verdict.py",
    ),
    Term(
        word="pass",
        meaning=(
            "A reuse pass (`quality.reuse`): the same items asked again after the cold pass, `warm`"
            " (from the prefix cache), `restored` (from a host or external KV tier after the device"
            " cache was reset) or `load` (inside filler traffic). Not to be confused with a gate "
            "that passed."
        ),
        owner="qgate/quality/reuse_pass.py",
    ),
    Term(
        word="exercised",
        meaning=(
            "Whether a pass (or speculative decoding) actually ran the path it names, read from the"
            " server's counters; a pass that was not is NOT EXERCISED, never a PASS."
        ),
        owner="qgate/gates/reuse_exercised.py",
    ),
    Term(
        word="round",
        meaning=(
            "One repetition of the perf stage in fresh lives (`perf.rounds`); rounds alternate the "
            "order of the sides (ABBA) so that speed ratios hold across restarts. Also a step of "
            "the attribution search."
        ),
        owner="qgate/run/rounds.py",
    ),
    Term(
        word="block",
        meaning=(
            "One pass of a side over every perf scenario (`perf.blocks`); with both sides up at "
            "once their blocks interleave (reference, candidate, reference, ...) so that the "
            "machine's drift falls on both alike, and each speed ratio's interval widens to cover "
            "the spread across blocks."
        ),
        owner="qgate/perf/blocks.py",
    ),
    Term(
        word="wave",
        meaning=(
            "Lives an executor runs at once: candidates, or attribution trials, `at_once` at a "
            "time."
        ),
        owner="qgate/cluster/waves.py",
    ),
    Term(
        word="board",
        meaning=(
            "Where both sides post their items as they finish, so that a suite can stop once every "
            "outcome of its remaining items would give the same verdict."
        ),
        owner="qgate/gates/board.py",
    ),
    Term(
        word="settle",
        meaning=(
            "A gate is settled when the items asked so far decide it whatever the rest answer "
            "(`quality.stop`); it is NOT SETTLED when the run stopped before that."
        ),
        owner="qgate/quality/settle.py",
    ),
    Term(
        word="probe",
        meaning=(
            "A graded item asked inside a perf scenario (`perf.probes`), paired with the "
            "reference's answer at the same load, so that speed is only credited to a candidate "
            "that still answers right."
        ),
        owner="qgate/perf/probes.py",
    ),
    Term(
        word="bucket",
        meaning=(
            "A range of prompt lengths: a context-ladder step (`context.<centre>`), or a time "
            "bucket of a perf series."
        ),
        owner="qgate/profile/context_ladder.py",
    ),
    Term(
        word="attribution",
        meaning=(
            "When a candidate fails, the search for the smallest set of its changes that still "
            "fails, each set tried in a life of its own."
        ),
        owner="qgate/run/attribute.py",
    ),
    Term(
        word="derivation",
        meaning=(
            "The version of the rules a report's verdicts were derived with; `qgate verify` re-"
            "derives a report by the rules of its own derivation."
        ),
        owner="qgate/report/verify/derivation.py",
    ),
    Term(
        word="executor",
        meaning=(
            "What makes each server life of a run and says where it runs: this machine (the "
            "default), the Ray cluster `--cluster` names, or a plug-in's (`qgate run --executor "
            "NAME`); its contract is `Lives` ([Extending qgate](../extending.md))."
        ),
        owner="qgate/runtime/lives.py",
    ),
    Term(
        word="plug-in",
        meaning=(
            "A suite, engine or executor an installed distribution adds through the entry-point "
            "groups `qgate.suites`, `qgate.engines` and `qgate.executors` ([Extending "
            "qgate](../extending.md))."
        ),
        owner="qgate/core/registry.py",
    ),
)


def render() -> str:
    """The glossary page (docs/reference/glossary.md) below its generated notice."""
    out = ["# Glossary", "", INTRO, ""]
    out += [f"- **{t.word}**: {t.meaning} Code: `{t.owner}`." for t in TERMS]
    return "\n".join(out) + "\n"
