"""Per-item records of the quality suites (their verdicts: qgate/core/verdict.py).

These are the raw data that `qgate verify` recomputes every verdict from, so
they hold everything a gate reads and nothing a gate does not need.
"""

from __future__ import annotations

from pydantic import Field

from qgate.core.records import Record, Role


class GeneratedLogprobs(Record):
    """The top-k logprobs of every generated position of one answer (the context ladder asks
    for them: qgate/quality/ladder_divergence.py compares the two sides' where their contexts
    were identical)."""

    prompt_ids_sha256: str | None = Field(
        description="sha256 of the prompt token ids the server reported it ran (the chat "
        "template applied; JSON list), None when it reported none."
    )
    token_ids: list[int] = Field(description="The generated token ids, in order.")
    top_ids: list[list[int]] = Field(
        description="Per generated position: the token ids the server reported (its top-k, "
        "plus the generated token when it ranked lower), ascending."
    )
    top_logprobs: list[list[float]] = Field(
        description="Per generated position: the logprobs of those ids."
    )


class ItemRecord(Record):
    """One exact-answer item as one runtime answered it."""

    id: str = Field(description="Stable item id within its suite.")
    prompt_sha256: str = Field(description="sha256 of the exact prompt text sent.")
    output: str = Field(description="Raw model output.")
    answer: str | None = Field(description="Answer extracted from the output, if any.")
    expected: str = Field(description="The checked correct answer.")
    correct: bool = Field(description="Whether the extracted answer equals the expected one.")
    output_tokens: int | None = Field(default=None, description="Completion tokens (usage).")
    finish_reason: str | None = Field(default=None, description="Server's finish reason.")
    score: float | None = Field(
        default=None,
        description="The item's metric value where the metric can be fractional (an lm-eval "
        "metric such as LongBench's `score`); a suite with a score strictly between 0 and 1 is "
        "gated on paired score differences (qgate/gates/score.py). None: exact-answer.",
    )

    failure: str | None = Field(
        default=None,
        description="Why a tool-call or structured-output item was not correct (`content`, "
        "`malformed_arguments`, `wrong_name`, `wrong_arguments`, `http_error`, "
        "`unconstrained`, ...: qgate/quality/agent_data.py); None for other suites.",
    )
    generated: GeneratedLogprobs | None = Field(
        default=None,
        description="Top-k logprobs of the answer's generated tokens (the context ladder, when "
        "the server returned token ids); None for other suites and in older reports.",
    )


class SuiteRun(Record):
    """One exact-answer suite (e.g. 'math.short', 'recall.4096') on one runtime."""

    suite: str = Field(description="Suite id, e.g. 'math.short', 'recall.1024', 'lm_eval.gsm8k'.")
    role: Role = Field(description="Which runtime answered.")
    data_sha256: str = Field(description="sha256 of the suite's data (or task config).")
    params: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict, description="Generation parameters used."
    )
    items: list[ItemRecord] = Field(description="Per-item records, in data order.")
    wall_s: float = Field(default=0.0, description="Wall time of the suite.")
    cached: bool = Field(default=False, description="Served from the reference cache.")
    planned: int | None = Field(
        default=None,
        description="Items the suite planned per side when it may stop early (quality.stop); "
        "None: `items` is the whole suite.",
    )
    stopped: str | None = Field(
        default=None, description="Why it ended before its planned items (None: it did not)."
    )

    @property
    def partial(self) -> bool:
        """Whether it stopped before its planned items."""
        return self.planned is not None and len(self.items) < self.planned


class DivergenceSequence(Record):
    """Teacher-forced comparison of one reference continuation, position by position."""

    id: str = Field(description="Corpus prompt id.")
    prompt_sha256: str = Field(description="sha256 of the prompt text.")
    token_ids: list[int] = Field(description="Reference greedy continuation that both scored.")
    kld: list[float] = Field(description="KL(reference || candidate) per scored position.")
    top1_agree: list[bool] = Field(description="Top-1 tokens equal, per position.")
    delta_p: list[float] = Field(
        description="p_candidate - p_reference of the reference's token, per position."
    )
    # The raw data the three lists above are computed from (report schema 2), so that
    # `qgate verify` re-derives them; None in reports made before they were stored.
    reference_top_ids: list[list[int]] | None = Field(
        default=None, description="Per position: token ids the reference reported."
    )
    reference_top_logprobs: list[list[float]] | None = Field(
        default=None, description="Per position: the reference's logprobs of those ids."
    )
    candidate_top_ids: list[list[int]] | None = Field(
        default=None, description="Per position: token ids the candidate reported."
    )
    candidate_top_logprobs: list[list[float]] | None = Field(
        default=None, description="Per position: the candidate's logprobs of those ids."
    )


class CrossSequence(Record):
    """A second scoring path of one divergence prompt on the candidate (issue 55 item 4): its
    own greedy generation with the top-k logprobs of each generated position (the decode
    path), set beside its teacher-forced scores (the prefill path). Raw observations: verify
    checks their shape, the cross-check gate (qgate/gates/cross_check.py) reads them."""

    id: str = Field(description="Corpus prompt id.")
    token_ids: list[int] = Field(description="The candidate's own greedy continuation.")
    top_ids: list[list[int]] = Field(description="Per generated position: token ids reported.")
    top_logprobs: list[list[float]] = Field(
        description="Per generated position: the logprobs of `top_ids`, same order."
    )


class DivergenceRun(Record):
    """The divergence suite: every sequence's per-position values."""

    suite: str = Field(default="divergence", description="Suite id.")
    data_sha256: str = Field(description="sha256 of the corpus.")
    top_k: int = Field(description="Top-k logprobs requested per position.")
    tokens: int = Field(description="Continuation length requested.")
    sequences: list[DivergenceSequence] = Field(description="Per-sequence values.")
    wall_s: float = Field(default=0.0, description="Wall time of the suite.")
    cross_check: list[CrossSequence] | None = Field(
        default=None,
        description="The candidate's second scoring path, per sequence (quality.divergence."
        "cross_check; None: not asked).",
    )
