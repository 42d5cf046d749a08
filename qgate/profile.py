"""The precision profile: pydantic models, and loading with errors for people.

A profile names one checkpoint, the hardware it must run on, the engine and
its shared arguments, the reference and candidate overrides, the quality
suites with their gate policies, the perf scenarios and how to sign. The
models are strict (`extra="forbid"`): an unknown key is an error, never
silently ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from qgate.profile_perf import PerfGate, PublishedFigure, check_dummy, check_selectors

if TYPE_CHECKING:
    from qgate.profile_loader import LoadedProfile

Scalar = str | int | float | bool | None
KeyPath = tuple[str | int, ...]


class KeyIssue(ValueError):
    """Cross-field problems raised by a model validator, each tied to a key path.

    The path is relative to the model that raises it, so that the loader can
    point at the exact key and line (e.g. `candidate.endpoint`) instead of at
    the model as a whole. `str()` stays readable for callers that validate
    without the loader.
    """

    def __init__(self, issues: list[tuple[KeyPath, str]]) -> None:
        self.issues = issues
        super().__init__("; ".join(f"{'.'.join(map(str, p))}: {m}" if p else m for p, m in issues))


EngineArgValue = Scalar | list[str | int | float | bool]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


class Strict(BaseModel):
    """Base of every profile model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


class ModelSpec(Strict):
    """The checkpoint that both runtimes serve."""

    path: Path | None = Field(
        default=None, description="Local checkpoint folder; every file's sha256 is recorded."
    )
    embedded: Literal["smollm2"] | None = Field(
        default=None,
        description="A model qgate prepares itself (`qgate models prepare NAME`), not a path.",
    )
    served_name: str | None = Field(
        default=None, description="Name the server announces (`--served-model-name`)."
    )
    tokenizer: Path | None = Field(
        default=None, description="Tokenizer folder when it differs from the checkpoint."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.path is None and self.embedded is None:
            raise KeyIssue([((), "give one of 'path' or 'embedded'")])
        if self.path is not None and self.embedded is not None:
            raise KeyIssue([(("embedded",), "give only one of 'path' or 'embedded'")])
        return self


class Target(Strict):
    """The hardware the profile is meant for; checked against the fingerprint."""

    accelerator: str = Field(
        description="Accelerator kind: 'cpu', or a model such as 'MI325X', 'H200'."
    )
    count: int = Field(default=1, ge=1, description="How many accelerators the engine uses.")
    allow_mismatch: bool = Field(
        default=False,
        description="Run even if the machine differs; the report says so.",
    )


class EndpointSpec(Strict):
    """An already running OpenAI-compatible server that qgate probes but cannot restart."""

    base_url: str = Field(description="Base URL including /v1, e.g. http://host:8000/v1.")
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable that holds the API key (never the key).",
    )
    model: str | None = Field(
        default=None, description="Model name to request; defaults to the first in /v1/models."
    )

    @field_validator("base_url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")


class EngineSpec(Strict):
    """How runtimes are started; `args` and `env` are shared by reference and candidate."""

    kind: Literal["vllm", "endpoint"] = Field(
        default="vllm", description="'vllm': qgate starts servers; 'endpoint': they already run."
    )
    args: dict[str, EngineArgValue] = Field(
        default_factory=dict,
        description="vLLM engine arguments in snake_case; passed as --kebab-case flags.",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Environment for both servers.")
    host: str = Field(default="127.0.0.1", description="Address the started servers bind.")
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Fixed port; a free one when omitted."
    )
    launcher: list[str] | None = Field(
        default=None,
        description="Command that starts the server; detected when omitted "
        "(`vllm serve`, else `python -m vllm.entrypoints.openai.api_server`).",
    )
    startup_timeout_s: float = Field(default=900.0, gt=0, description="Wait for /health.")
    preflight: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="Start the candidate once (start, check applied config, stop) before the "
        "reference stage, so that a candidate that cannot start fails in about a minute, not "
        "after the reference: 'auto' when the reference is not cached.",
    )
    request_timeout_s: float = Field(default=600.0, gt=0, description="One HTTP request.")
    uncalibrated_kv_scales: Literal["warn", "fail"] = Field(
        default="warn",
        description="An FP8 KV cache whose k/v/q scales the engine left at 1.0 (no calibrated "
        "scales in the checkpoint): 'warn' records the engine's warning in the report, 'fail' "
        "also fails the gate `<role>.kv_scales_calibrated` (exit 1).",
    )


class WeightEmulation(Strict):
    """Weight precision the engine cannot do natively, emulated by a dequantized copy."""

    format: Literal["fp8_e4m3", "fp8_e5m2", "int8", "int4"] = Field(
        description="Target number format."
    )
    granularity: Literal["per_tensor", "per_channel", "group"] = Field(
        default="per_channel", description="Scale granularity ('group' for INT formats)."
    )
    group_size: int = Field(default=128, ge=8, description="Group size for 'group' granularity.")


class RuntimeFallback(Strict):
    """What a runtime runs instead where this machine's engine cannot run it natively."""

    args: dict[str, EngineArgValue] = Field(
        default_factory=dict, description="Engine args (replace the runtime's own)."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment overlay (replaces the runtime's own)."
    )
    emulate_weights: WeightEmulation | None = Field(
        default=None, description="Emulated weight precision (labelled emulated in the report)."
    )


class RuntimeSpec(Strict):
    """Overrides of one runtime (reference or candidate) on top of `engine`."""

    args: dict[str, EngineArgValue] = Field(default_factory=dict, description="Engine args.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment overlay.")
    endpoint: EndpointSpec | None = Field(
        default=None, description="Required when engine.kind is 'endpoint'."
    )
    emulate_weights: WeightEmulation | None = Field(
        default=None, description="Emulated weight precision (labelled emulated in the report)."
    )
    fallback: RuntimeFallback | None = Field(
        default=None,
        description="Used instead when qgate's capability table says this machine's engine "
        "cannot run `args` (e.g. FP8 KV cache on a CPU without AVX-512); the report says why.",
    )


class AccuracyPolicy(Strict):
    """Gate policy shared by every exact-answer suite."""

    min_accuracy: Fraction | None = Field(
        default=None, description="Floor on the candidate's accuracy."
    )
    max_drop: Fraction | None = Field(
        default=None, description="Largest allowed accuracy drop, reference minus candidate."
    )
    max_flips: int | None = Field(
        default=None, ge=0, description="Largest allowed count of reference-correct items lost."
    )
    significance: bool = Field(
        default=True,
        description="Fail when a one-sided exact McNemar test finds the candidate worse at alpha.",
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="Test level.")
    power: float = Field(default=0.8, gt=0, lt=1, description="Power for the detectable drop.")


def _both_prompt_forms() -> list[Literal["short", "long"]]:
    return ["short", "long"]


ANSWER_MAX_TOKENS = 48
"""Generation budget of one exact-answer reply (math items, perf probes)."""


class MathSuite(AccuracyPolicy):
    """Exact-answer arithmetic and word problems, short and long prompt forms."""

    set: Path | None = Field(
        default=None, description="JSONL set; the shipped core set if omitted."
    )
    prompts: list[Literal["short", "long"]] = Field(
        default_factory=_both_prompt_forms, min_length=1, description="Prompt forms."
    )
    limit: int | None = Field(default=None, ge=1, description="Use only the first N items.")
    max_tokens: int = Field(
        default=ANSWER_MAX_TOKENS, ge=1, description="Generation budget per answer."
    )
    long_tokens: int = Field(
        default=3072,
        ge=256,
        description="Preamble length in tokens for the long form; clipped to fit max_model_len.",
    )


class RecallSuite(AccuracyPolicy):
    """Symbols planted at several depths of a haystack; recall by exact match."""

    context_tokens: list[Annotated[int, Field(ge=64)]] = Field(
        default_factory=lambda: [1024], min_length=1, description="Haystack lengths in tokens."
    )
    depths: list[Fraction] = Field(
        default_factory=lambda: [0.1, 0.3, 0.5, 0.7, 0.9],
        min_length=1,
        description="Where symbols are planted, as a fraction of the haystack.",
    )
    haystacks: int = Field(default=4, ge=1, description="Haystacks per length.")
    seed: int = Field(default=1234, description="Seed of the generated haystacks.")
    max_tokens: int = Field(
        default=32,
        ge=1,
        description="Generation budget per answer; models restate the question "
        "('The access code for locker 497 is XW-1830.', about 18 tokens).",
    )


class DivergenceSuite(Strict):
    """Teacher-forced logit divergence of the candidate from the reference."""

    sequences: int = Field(default=64, ge=1, description="Prompts from the corpus.")
    tokens: int = Field(default=128, ge=1, description="Reference continuation length scored.")
    top_k: int = Field(default=20, ge=1, le=100, description="prompt_logprobs per position.")
    corpus: Path | None = Field(
        default=None, description="JSONL corpus; the shipped one if omitted."
    )
    max_mean_kld: float | None = Field(default=None, gt=0, description="Limit on mean KL.")
    max_p99_kld: float | None = Field(default=None, gt=0, description="Limit on p99 KL.")
    max_max_kld: float | None = Field(default=None, gt=0, description="Limit on the largest KL.")
    min_top1_agreement: Fraction | None = Field(
        default=None, description="Floor on top-1 token agreement."
    )


class LmEvalTask(AccuracyPolicy):
    """Any lm-eval task, run against the server through lm-eval's OpenAI-compatible backend."""

    task: str = Field(description="lm-eval task name.")
    metric: str = Field(
        default="exact_match", description="Metric and filter, e.g. 'exact_match,flexible-extract'."
    )
    include_path: Path | None = Field(default=None, description="Folder of task YAMLs.")
    limit: int | None = Field(default=None, ge=1, description="Use only the first N documents.")
    num_fewshot: int | None = Field(default=None, ge=0, description="Few-shot examples.")
    chat: bool = Field(default=False, description="Use the chat completions backend.")


class QualitySpec(Strict):
    """The quality suites; every configured suite gates the perf stage."""

    math: MathSuite | None = Field(default=None, description="Exact-answer math suite.")
    recall: RecallSuite | None = Field(default=None, description="Symbol recall suite.")
    divergence: DivergenceSuite | None = Field(
        default=None, description="Teacher-forced logit divergence suite."
    )
    lm_eval: list[LmEvalTask] = Field(
        default_factory=list, description="lm-eval tasks, each with its own gate policy."
    )
    concurrency: int = Field(default=8, ge=1, description="Requests in flight per suite.")
    seed: int = Field(default=0, description="Sampling seed sent with every request.")
    on_no_effect: Literal["warn", "fail"] = Field(
        default="warn",
        description="When every answer and every logprob of the candidate is bit-identical to "
        "the reference's (its change had no measurable effect: was it applied?): 'warn' in the "
        "report and on the console, or 'fail' the run (for CI).",
    )

    def has_suites(self) -> bool:
        """Whether any suite is configured (a profile needs one unless it is a preview)."""
        return bool(self.math or self.recall or self.divergence or self.lm_eval)


class ScenarioBase(Strict):
    name: str = Field(min_length=1, description="Unique scenario name.")
    warmup: int = Field(default=2, ge=0, description="Requests sent first and not measured.")
    requests: int | None = Field(default=None, ge=1, description="Measured requests.")
    duration_s: float | None = Field(default=None, gt=0, description="Or: measure this long.")

    @model_validator(mode="after")
    def _count_or_duration(self) -> Self:
        if self.requests is None and self.duration_s is None:
            self.requests = 5
        return self


class FixedScenario(ScenarioBase):
    """Fixed input/output token counts (exact: ignore_eos + min_tokens)."""

    kind: Literal["fixed"] = Field(default="fixed", description="Scenario kind.")
    input_tokens: int | list[Annotated[int, Field(ge=1)]] = Field(
        description="Prompt length in tokens, exact; a list is an input-length matrix: one run "
        "per length (named name@inN), each with its own warm-ups and measured requests."
    )
    output_tokens: int = Field(ge=1, description="Output length in tokens, exact.")
    concurrency: int | list[Annotated[int, Field(ge=1)]] = Field(
        default=1, description="Requests in flight; a list sweeps levels."
    )
    request_rate: float | None = Field(
        default=None, gt=0, description="Open loop: arrivals per second (Poisson/gamma)."
    )
    burstiness: float = Field(default=1.0, gt=0, description="Gamma shape; 1.0 is Poisson.")

    @field_validator("concurrency", "input_tokens")
    @classmethod
    def _positive(cls, v: int | list[int]) -> int | list[int]:
        if isinstance(v, int) and v < 1:
            raise ValueError("must be at least 1")
        if isinstance(v, list) and not v:
            raise ValueError("must list at least one level")
        return v


class MultiTurnScenario(ScenarioBase):
    """Agent-like conversations that reuse a long shared prefix and a growing history."""

    kind: Literal["multi_turn"] = Field(description="Scenario kind.")
    conversations: int = Field(default=4, ge=1, description="Concurrent conversations.")
    turns: int = Field(default=4, ge=1, description="Turns per conversation.")
    shared_prefix_tokens: int = Field(default=1024, ge=0, description="Shared system prefix.")
    turn_input_tokens: int = Field(default=64, ge=1, description="New user/tool tokens a turn.")
    output_tokens: int = Field(default=32, ge=1, description="Output tokens a turn, exact.")
    think_time_s: float = Field(default=0.0, ge=0, description="Pause between turns.")


class TraceScenario(ScenarioBase):
    """Replay of a JSONL trace of (timestamp, input_tokens, output_tokens)."""

    kind: Literal["trace"] = Field(description="Scenario kind.")
    path: Path = Field(description="JSONL trace file.")
    time_scale: float = Field(default=1.0, gt=0, description="Multiply trace timestamps.")


def _scenario_kind(v: Any) -> str:
    if isinstance(v, dict):
        return str(v.get("kind", "fixed"))
    return str(getattr(v, "kind", "fixed"))


Scenario = Annotated[
    Annotated[FixedScenario, Tag("fixed")]
    | Annotated[MultiTurnScenario, Tag("multi_turn")]
    | Annotated[TraceScenario, Tag("trace")],
    Discriminator(_scenario_kind),
]


class Slo(Strict):
    """Service-level objectives for goodput."""

    ttft_ms: float | None = Field(default=None, gt=0, description="Time to first token, ms.")
    tpot_ms: float | None = Field(default=None, gt=0, description="Time per output token, ms.")
    e2e_ms: float | None = Field(default=None, gt=0, description="End-to-end latency, ms.")


class PerfSpec(Strict):
    """The perf stage; it runs only when every quality gate passed."""

    scenarios: list[Scenario] = Field(min_length=1, description="Workloads, run in order.")
    compare_to: Literal["reference", "none"] = Field(
        default="reference", description="Run the same scenarios on the reference as baseline."
    )
    slo: Slo | None = Field(default=None, description="SLOs for goodput.")
    max_error_rate: Fraction = Field(
        default=0.0, description="Share of failed or short responses a scenario may have."
    )
    probe_share: Fraction = Field(
        default=0.05, description="Share of perf requests that are quality probes (TEST01)."
    )
    bootstrap: int = Field(default=2000, ge=100, description="Bootstrap resamples for ratio CIs.")
    gates: list[PerfGate] = Field(
        default_factory=list,
        description="Speed gates on candidate/reference ratios, judged on their bootstrap 95% "
        "interval (min_ratio: lower bound >= limit; max_ratio: upper bound <= limit); a "
        "failed one fails the run like a quality gate.",
    )
    published: list[PublishedFigure] = Field(
        default_factory=list,
        description="Published figures shown beside the measured ones, with the ratio "
        "(display only; conditions may differ).",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        seen: set[str] = set()
        issues: list[tuple[KeyPath, str]] = []
        for index, scenario in enumerate(self.scenarios):
            if scenario.name in seen:
                issues.append(
                    (("scenarios", index, "name"), f"duplicate scenario name {scenario.name!r}")
                )
            seen.add(scenario.name)
        issues += check_selectors(self.scenarios, self.gates, self.published, self.compare_to)
        if issues:
            raise KeyIssue(issues)
        return self


class SigningSpec(Strict):
    """Where the signing key comes from; a local development key when nothing is given."""

    key: Path | None = Field(default=None, description="PEM private key file.")
    key_env: str | None = Field(default=None, description="Env var holding the PEM.")
    kms_uri: str | None = Field(default=None, description="securesystemslib signer URI.")
    scheme: Literal["ecdsa-p256", "ed25519"] = Field(
        default="ecdsa-p256", description="Key type for keys qgate creates."
    )


class Profile(Strict):
    """One precision profile: what to compare, how to gate it, what to measure."""

    name: str = Field(min_length=1, description="Short name; used in run folder names.")
    description: str = Field(default="", description="Free text for people.")
    model: ModelSpec = Field(description="The checkpoint both runtimes serve.")
    target: Target = Field(
        default_factory=lambda: Target(accelerator="cpu"), description="Intended hardware."
    )
    engine: EngineSpec = Field(
        default_factory=EngineSpec, description="Engine and arguments shared by both runtimes."
    )
    reference: RuntimeSpec = Field(
        default_factory=RuntimeSpec, description="The baseline configuration."
    )
    candidate: RuntimeSpec = Field(description="The configuration under test.")
    quality: QualitySpec = Field(
        default_factory=QualitySpec,
        description="Quality suites and their gates; at least one suite, none with dummy "
        "weights (`load_format: dummy`: a speed-only PREVIEW, verdict never PASS).",
    )
    perf: PerfSpec | None = Field(
        default=None, description="Perf stage; skipped when omitted or when a gate fails."
    )
    signing: SigningSpec = Field(
        default_factory=SigningSpec, description="Where the report's signing key comes from."
    )
    secrets: list[str] = Field(
        default_factory=list, description="Env var names whose values are always redacted."
    )

    @model_validator(mode="after")
    def _endpoints(self) -> Self:
        issues: list[tuple[KeyPath, str]] = []
        for role in ("reference", "candidate"):
            spec: RuntimeSpec = getattr(self, role)
            if self.engine.kind == "endpoint" and spec.endpoint is None:
                issues.append(((role, "endpoint"), "required when engine.kind is 'endpoint'"))
            if self.engine.kind == "vllm" and spec.endpoint is not None:
                issues.append(((role, "endpoint"), "only valid when engine.kind is 'endpoint'"))
        preview, dummy_issues = check_dummy(
            self.engine.args, self.reference.args, self.candidate.args, self.quality.has_suites()
        )
        issues += dummy_issues
        if preview and self.perf is None:
            issues.append((("perf",), "a dummy-weights preview measures speed only: add perf"))
        if not preview and not self.quality.has_suites():
            issues.append(
                (
                    ("quality",),
                    "configure at least one suite (math, recall, divergence, lm_eval)",
                )
            )
        if issues:
            raise KeyIssue(issues)
        return self


def load_profile(path: str | Path, check_files: bool = True) -> Profile:
    """Load and validate a profile file; raise ProfileError listing every problem.

    Each problem is one line `FILE:LINE KEY.PATH: message`. Relative paths in
    the profile are resolved against the profile file's folder. Use
    `load_profile_file` to also get the absolute path, the sha256 of the exact
    bytes read and the text.
    """
    return load_profile_file(path, check_files).profile


def load_profile_file(path: str | Path, check_files: bool = True) -> LoadedProfile:
    """Like `load_profile`, plus the file's absolute path, sha256 and text (one read).

    `check_files=False` skips the checks that the local files it names exist.
    """
    from qgate.profile_loader import load_profile_file as _load

    return _load(path, check_files)
