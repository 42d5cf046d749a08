"""Settings that act on nothing and flip limits that can never fail: `qgate validate` exits 2
naming the file, the line and the key (qgate/profile/vacuous.py, and the probe rules of
qgate/profile/inert.py); the same profiles with the setting fixed validate."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli.main import main

MATH = "  math: {prompts: [short], max_drop: 0.2, limit: 16}\n"  # 14 items show 20 pts (bound)
BASE = (
    "name: t\n"
    "model: {embedded: smollm2}\n"
    "target: {accelerator: cpu}\n"
    "candidate:\n"
    "  emulate_weights: {format: fp8_e4m3}\n"
    "quality:\n" + MATH
)
# line 8 onwards: the case's own lines
RECALL = BASE.replace(MATH, "  recall: {max_drop: 0.2}\n")
DIVERGENCE = BASE.replace(MATH, "  divergence: {max_mean_kld: 0.1}\n")
PERF = "perf:\n  scenarios:\n    - {name: chat, input_tokens: 64, output_tokens: 8}\n"
NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3}'
SPECULATIVE = BASE.replace(
    "  emulate_weights: {format: fp8_e4m3}\n", f"  args: {{speculative_config: '{NGRAM}'}}\n"
)

# (id, whole profile, "LINE KEY.PATH:", message part)
REFUSED: list[tuple[str, str, str, str]] = [
    # 1. settings that act on nothing
    ("lives-without-math", RECALL + "lives: {probes: 4}\n", ":8 lives.probes:", "no math suite"),
    (
        "envelope-without-math",
        RECALL + "envelope: {max_broken: 0.1}\n",
        ":8 envelope:",
        "the envelope gate pools probe answers and quality has no math suite",
    ),
    (
        "envelope-with-every-probe-off",
        BASE + "lives: {probes: 0}\nenvelope: {max_broken: 0.1}\n",
        ":9 envelope:",
        "every probe is turned off: it would judge nothing",
    ),
    (
        "lives-idle-without-math",
        RECALL + "lives: {idle_s: 30}\n",
        ":8 lives:",
        "life probes are math items",
    ),
    (
        "lives-without-short-form",
        BASE.replace("[short]", "[long]") + "lives: {probes: 2}\n",
        ":8 lives.probes:",
        "has no 'short'",
    ),
    (
        "perf-probes-without-math",
        RECALL + PERF + "  probes: {items: 4}\n",
        ":11 perf.probes.items:",
        "no math suite",
    ),
    (
        "floor-without-exact-suites",
        BASE.replace(MATH, "  lm_eval: [{task: gsm8k}]\n") + "  noise_floor: {}\n",
        ":8 quality.noise_floor:",
        "quality has none of them",
    ),
    (
        "floor-divergence-off",
        DIVERGENCE + "  noise_floor: {divergence: false}\n",
        ":8 quality.noise_floor:",
        "divergence: false",
    ),
    (
        "speculative-without-speculation",
        BASE + "  speculative: {min_acceptance_length: 1.5}\n",
        ":8 quality.speculative:",
        "sets no speculative_config",
    ),
    (
        "acceptance-above-draft",
        SPECULATIVE + "  speculative: {min_acceptance_length: 4.5}\n",
        ":8 quality.speculative.min_acceptance_length:",
        "4.5 is above 4",
    ),
    # 2. gates that can never fail
    (
        "math-flips-at-limit",
        BASE.replace("limit: 16", "limit: 8, max_flips: 8"),
        ":7 quality.math.max_flips:",
        "allows 8 lost of the at most 8 items",
    ),
    (
        "recall-flips-over-cells",
        RECALL.replace(
            "max_drop: 0.2", "haystacks: 2, depths: [0.5], similar: [0, 1], max_flips: 4"
        ),
        ":7 quality.recall.max_flips:",
        "of the at most 4 items",
    ),
    (
        "ladder-flips-at-bucket",
        BASE + "  context_ladder: {up_to: 2048, per_bucket: 4, max_flips: 4}\n",
        ":8 quality.context_ladder.max_flips:",
        "can never fail",
    ),
    (
        "lm-eval-flips-at-limit",
        BASE + "  lm_eval: [{task: gsm8k, limit: 5, max_flips: 6}]\n",
        ":8 quality.lm_eval[0].max_flips:",
        "allows 6 lost of the at most 5 items",
    ),
    (
        "structured-flips-at-items",
        BASE + "  structured: {items: 3, max_flips: 3}\n",
        ":8 quality.structured.max_flips:",
        "can never fail",
    ),
    (
        "life-flips-at-probes",
        BASE + "lives: {probes: 2, max_flips: 2}\n",
        ":8 lives.max_flips:",
        "of the at most 2 probe items",
    ),
    (
        "life-flips-at-math-limit",
        BASE.replace("limit: 16", "limit: 3") + "lives: {probes: 8, max_flips: 3}\n",
        ":8 lives.max_flips:",
        "of the at most 3 probe items",
    ),
    (
        "perf-probe-flips-at-items",
        BASE + PERF + "  probes: {items: 2, max_flips: 2}\n",
        ":11 perf.probes.max_flips:",
        "of the at most 2 probe items",
    ),
    (
        "graded-turn-flips",
        BASE + "perf:\n  scenarios:\n    - {name: mt, kind: multi_turn, conversations: 1, "
        "graded: {turns: 4, max_flips: 2}}\n",
        ":10 perf.scenarios[0].graded.max_flips:",
        "of the at most 2 graded turns",
    ),
    (
        "bound-that-can-never-pass",
        BASE.replace("limit: 16", "limit: 8, rule: bound"),
        ":7 quality.math.max_drop:",
        "can never pass; give it at least 14 items",
    ),
    (
        "bound-at-a-zero-margin",
        BASE.replace("max_drop: 0.2", "max_drop: 0"),
        ":7 quality.math.max_drop:",
        "a max_drop of 0 can never pass",
    ),
    (
        "bound-without-max-drop",
        BASE.replace("max_drop: 0.2, limit: 16", "limit: 80, rule: bound"),
        ":7 quality.math.rule:",
        "max_drop is not set",
    ),
    # a pooled envelope gate that can never show its margin (issue 53 item 2): the most probe
    # answers a run can give it, fewer than the clean answers its bound needs
    (
        "envelope-margin-beyond-the-lives",
        BASE + "envelope: {max_broken: 0.3}\n",
        ":8 envelope.max_broken:",
        "the pooled envelope gate can never show its margin: at most 8 probe answers (0 perf, "
        "8 lives), fewer than the 9 clean answers that show at most 30% broken (95%)",
    ),
    (
        "envelope-over-too-few-life-probes",
        BASE + "lives: {probes: 2}\n",
        ":8 lives.probes:",
        "at most 4 probe answers (0 perf, 4 lives), fewer than the 29",
    ),
    (
        "envelope-perf-probes-in-sequence",  # one block: 4 + 8; side by side it would be 2
        BASE + "engine: {placement: sequence}\n" + PERF + "  probes: {items: 11}\n",
        ":12 perf.probes.items:",
        "at most 19 probe answers (11 perf, 8 lives), fewer than the 29",
    ),
    (
        "envelope-perf-probes-at-their-most",  # 2 blocks side by side, 2 sweep levels
        BASE
        + PERF.replace("output_tokens: 8", "output_tokens: 8, concurrency: [1, 2]")
        + "  probes: {items: 2}\n",
        ":11 perf.probes.items:",
        "at most 16 probe answers (8 perf, 8 lives), fewer than the 29",
    ),
    # settings of probes that are off (qgate/profile/inert.py)
    (
        "idle-without-probes",
        BASE + "lives: {probes: 0, idle_s: 30}\n",
        ":8 lives.idle_s:",
        "probes is 0",
    ),
    (
        "life-flips-without-probes",
        BASE + "lives: {probes: 0, max_flips: 1}\n",
        ":8 lives.max_flips:",
        "probes is 0",
    ),
    (
        "probe-flips-without-items",
        BASE + PERF + "  probes: {items: 0, max_flips: 1}\n",
        ":11 perf.probes.max_flips:",
        "items is 0",
    ),
]

ACCEPTED: list[tuple[str, str]] = [
    ("lives-off-without-math", RECALL + "lives: {probes: 0}\n"),
    ("envelope-exactly-shown-by-life-probes", BASE + "envelope: {max_broken: 0.32}\n"),  # 8 of 8
    # perf blocks counted at their most: 2 side by side (11 x 2 + 8 = 30 of 29)
    ("envelope-shown-side-by-side", BASE + PERF + "  probes: {items: 11}\n"),
    # rounds start fresh lives: 3 x (4 x 2 + 8) = 48
    ("envelope-shown-over-rounds", BASE + PERF + "  rounds: 3\n  probes: {items: 4}\n"),
    # a duration-bound scenario asks one probe per 1/share requests for as long as it runs
    (
        "envelope-over-a-duration-bound-scenario",
        BASE
        + PERF.replace("output_tokens: 8", "output_tokens: 8, duration_s: 60")
        + "  probes: {items: 1}\n",
    ),
    ("envelope-not-written", BASE + PERF),  # defaults alone are not judged
    ("lives-default-without-math", RECALL),
    ("idle-off-without-probes", BASE + "lives: {probes: 0, idle_s: 0}\n"),
    ("perf-probes-off-without-math", RECALL + PERF + "  probes: {items: 0}\n"),
    ("floor-over-divergence", DIVERGENCE + "  noise_floor: {}\n"),
    ("acceptance-at-draft-plus-one", SPECULATIVE + "  speculative: {min_acceptance_length: 4}\n"),
    ("math-flips-below-limit", BASE.replace("limit: 16", "limit: 16, max_flips: 15")),
    ("math-flips-without-limit", BASE.replace("limit: 16", "max_flips: 8")),
    ("sized-by-detect", BASE.replace("limit: 16", "max_flips: 2, detect: {drop: 0.2}")),
    (
        "life-flips-below-probes",
        BASE + "lives: {probes: 4, max_flips: 3}\nenvelope: {max_broken: 0.32}\n",
    ),
    ("bound-that-can-pass", BASE.replace("limit: 16", "limit: 16, rule: bound")),
    ("bound-sized-at-run-time", BASE.replace("limit: 16", "rule: bound")),
]


def _validate(tmp_path: Path, text: str) -> tuple[Path, int, str]:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["validate", str(path)])
    return path, result.exit_code, result.output


@pytest.mark.parametrize(("name", "text", "where", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_validate_refuses_it(
    tmp_path: Path, name: str, text: str, where: str, message: str
) -> None:
    path, code, output = _validate(tmp_path, text)
    assert code == 2, output
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if f"{path}{where}" in line]
    assert lines, output
    assert message in lines[0], output
    assert len(lines[0]) < 400, lines[0]


@pytest.mark.parametrize(("name", "text"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_validate_accepts_it(tmp_path: Path, name: str, text: str) -> None:
    _, code, output = _validate(tmp_path, text)
    assert code == 0, output


MINIMAL = """\
name: min
model: {embedded: smollm2}
candidate:
  args: {kv_cache_dtype: auto}
quality:
  math: {prompts: [short]}
"""


def test_a_pool_sized_by_defaults_alone_is_noted_not_refused(tmp_path: Path) -> None:
    """A profile that writes nothing of the pool (the default 4 life probes, no perf stage: 8
    answers against the 29 a 10% margin needs) is valid, and `qgate validate` says that every
    run of it ends INCONCLUSIVE and what to raise; written keys that size it are refused."""
    from qgate.profile.load import load_profile
    from qgate.profile.vacuous import unshowable_envelope

    path = tmp_path / "min.yaml"
    path.write_text(MINIMAL)
    line = unshowable_envelope(load_profile(path))
    assert line is not None and "at most 8 probe answers (0 perf, 8 lives)" in line
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert f"ok {path}\n  note: the pooled envelope gate can never show its margin" in result.output
    path.write_text(MINIMAL + "lives: {probes: 4}\n")  # the same pool, written: refused
    refused = CliRunner().invoke(main, ["validate", str(path)])
    assert refused.exit_code == 2 and "lives.probes: the pooled envelope gate" in refused.stderr
    path.write_text(MINIMAL + "lives: {probes: 15}\n")  # 30 answers show 10%: nothing to say
    assert unshowable_envelope(load_profile(path)) is None
    assert "note:" not in CliRunner().invoke(main, ["validate", str(path)]).output
