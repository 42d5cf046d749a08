"""Perf probes at the prompt length a scenario serves (issue 53 items 4 and 6): which
scenarios shape theirs, and the shaped probe itself (the item behind a preamble cut to the
scenario's length)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from qgate.perf.shaped_probes import (
    PROBE_MARGIN_TOKENS,
    graded_tokens,
    run_budgets,
    served_tokens,
    shape_budgets,
)
from qgate.profile import Profile
from qgate.quality.math_set import LONG_BRIDGE, long_prompt, math_items, short_prompt
from qgate.run.life_probes import math_probes
from qgate.run.perf import preambles

ROOT = Path(__file__).resolve().parents[3]


def _profile(quality: dict[str, Any], scenarios: list[dict[str, Any]], **probes: Any) -> Profile:
    return Profile.model_validate(
        {
            "name": "shaped",
            "model": {"embedded": "smollm2"},
            "engine": {"args": {"max_model_len": 4096}},
            "candidate": {"args": {"max_num_seqs": 4}},
            "quality": {"math": {"prompts": ["short"], "rule": "point"}, **quality},
            "perf": {"scenarios": scenarios, "probes": {"items": 4, **probes}},
        }
    )


LONG = {"name": "long", "input_tokens": [64, 3000], "output_tokens": 8, "concurrency": [1, 4]}
AGENT = {
    "name": "agent",
    "kind": "multi_turn",
    "conversations": 2,
    "turns": 3,
    "shared_prefix_tokens": 1024,
    "turn_input_tokens": 48,
    "output_tokens": 24,
}


def test_the_lengths_a_scenario_serves() -> None:
    profile = _profile({}, [LONG, AGENT])
    fixed, agent = profile.perf.scenarios  # type: ignore[union-attr]
    assert served_tokens(fixed) == 3000  # the longest of its input matrix
    assert served_tokens(agent) == 1024 + 3 * 48 + 2 * 24  # the last turn's prompt


def test_the_longest_graded_prompt_follows_the_suites() -> None:
    assert graded_tokens(_profile({}, [LONG])) == 0  # math.short alone: no length graded
    recall = {"recall": {"context_tokens": [512, 1024], "rule": "point"}}
    assert graded_tokens(_profile(recall, [LONG])) == 1024
    long = {"math": {"prompts": ["short", "long"], "long_tokens": 8192, "rule": "point"}}
    # clipped to max_model_len 4096 less the answer and the question's room, as the suite is
    assert 3000 < graded_tokens(_profile(long, [LONG])) < 4096


def test_auto_shapes_only_what_the_suites_do_not_reach() -> None:
    budgets = shape_budgets(_profile({}, [LONG, AGENT]))
    # the 64-token length is the short form's own; the 3,000 one and the conversation are not
    assert budgets == {
        "long@in3000": 3000 - PROBE_MARGIN_TOKENS,
        "agent": 1216 - PROBE_MARGIN_TOKENS,
    }
    recall = {"recall": {"context_tokens": [2048], "rule": "point"}}
    assert shape_budgets(_profile(recall, [LONG, AGENT])) == {"long@in3000": 2904}
    # the demo: its perf prompts are shorter than its math.long, so nothing is shaped
    demo = yaml.safe_load((ROOT / "precision_profiles" / "smollm2-cpu-int8.yaml").read_text())
    assert shape_budgets(Profile.model_validate(demo)) == {}


def test_always_and_never_and_no_probes() -> None:
    recall = {"recall": {"context_tokens": [4000], "rule": "point"}}
    assert shape_budgets(_profile(recall, [LONG], shaped="always")) == {"long@in3000": 2904}
    assert shape_budgets(_profile({}, [LONG], shaped="never")) == {}
    assert shape_budgets(_profile({}, [LONG], items=0)) == {}


def test_run_names_carry_their_scenarios_budget() -> None:
    got = run_budgets(_profile({}, [LONG]))
    assert got == {"long@in3000@c1": 2904, "long@in3000@c4": 2904}


class _Tokenizer:
    """A server's /tokenize and /detokenize: one token per 4 characters."""

    def __init__(self) -> None:
        self.text = ""

    async def tokenize(self, text: str) -> list[int]:
        self.text = text
        return list(range(len(text) // 4))

    async def detokenize(self, tokens: list[int]) -> str:
        return self.text[: 4 * len(tokens)]


def test_a_shaped_probe_is_the_item_behind_a_preamble_of_its_budget() -> None:
    client = _Tokenizer()
    cut = asyncio.run(preambles(client, {"long": 20_000, "short": 300, "again": 300}))  # type: ignore[arg-type]
    assert sorted(cut) == [300, 20_000]  # one preamble a budget
    for budget, preamble in cut.items():
        # cut to the budget at a line boundary (repeated past the preamble's ~15K tokens)
        assert budget - 50 <= len(preamble) // 4 <= budget, (budget, len(preamble) // 4)
    profile = _profile({}, [LONG])
    (short,) = math_probes(profile, None, None, 1)
    (shaped,) = math_probes(profile, None, None, 1, preamble=cut[300])
    assert (shaped.id, shaped.truth) == (short.id, short.truth)
    question = next(i.question for i in math_items(profile.quality.math) if i.id == short.id)  # type: ignore[arg-type]
    assert short.body[-1]["content"] == short_prompt(question)  # type: ignore[index]
    assert shaped.body[-1]["content"] == long_prompt(cut[300], question)  # type: ignore[index]
    assert LONG_BRIDGE in shaped.body[-1]["content"]  # type: ignore[index]
