"""The runtime protocol: one class per engine kind, two instances per run."""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol, Self

from pydantic import Field

from qgate.core.records import Record, Role

__all__ = ["EffectiveConfig", "Lifecycle", "MetricNames", "Runtime", "ServerStart"]


class MetricNames(Record):
    """An engine's Prometheus counter names for what qgate derives from /metrics.

    Declared by each engine (its class's `metrics`), recorded with every perf scenario it
    served, and read by the perf metrics from there (qgate/perf/metrics.py).
    """

    prefix_hits: str | None = Field(default=None, description="Prefix-cache hits, in tokens.")
    prefix_queries: str | None = Field(default=None, description="Prefix-cache lookups, in tokens.")
    preemptions: str | None = Field(default=None, description="Preempted requests.")
    prompt_tokens: str | None = Field(default=None, description="Prompt tokens processed.")
    generation_tokens: str | None = Field(default=None, description="Tokens generated.")


class StartFacts(Record):
    """What one server start cost (runtime/startup.py reads them from the engine's log)."""

    ready_s: float | None = Field(
        default=None, description="Seconds from spawning the server to its first healthy /health."
    )
    startup: dict[str, float] = Field(
        default_factory=dict,
        description="Seconds per start-up phase the engine logged (weights_s, compile_s, "
        "graphs_s, engine_init_s); a phase not logged is absent.",
    )
    compile_cache: Literal["hit", "miss"] | None = Field(
        default=None,
        description="torch.compile graphs read from the engine's cache ('hit'), compiled "
        "afresh ('miss'), or nothing compiled (None).",
    )


class EffectiveConfig(StartFacts):
    """What a running server reports about itself, not what was asked of it."""

    role: Role = Field(description="Runtime role.")
    kind: str = Field(
        description="The engine that ran this side (engine registry kind: 'vllm', 'sglang', "
        "'command', 'endpoint', ...)."
    )
    base_url: str = Field(description="OpenAI-compatible base URL, ending in /v1.")
    served_model: str = Field(description="Model name the server answers to.")
    engine_version: str | None = Field(default=None, description="From /version or the log.")
    dtype: str | None = Field(default=None, description="Model dtype the engine used.")
    quantization: str | None = Field(default=None, description="Weight quantization applied.")
    kv_cache_dtype: str | None = Field(default=None, description="KV cache dtype applied.")
    attention_backend: str | None = Field(default=None, description="Attention backend selected.")
    flash_attn_version: int | None = Field(
        default=None, description="FlashAttention version the engine announced (e.g. 3 on Hopper)."
    )
    linear_kernels: dict[str, str] = Field(
        default_factory=dict,
        description="Quantized linear method -> GEMM kernel the engine selected, e.g. "
        "Fp8PerTensorOnlineLinearMethod -> CutlassFP8ScaledMMLinearKernel.",
    )
    uncalibrated_scales: list[str] = Field(
        default_factory=list,
        description="FP8 KV-cache/attention scales the engine left at 1.0 ('k', 'v', 'q', 'prob').",
    )
    engine_warnings: list[str] = Field(
        default_factory=list,
        description="Engine warnings qgate surfaces in the report (e.g. uncalibrated FP8 scales).",
    )
    not_verified: list[str] = Field(
        default_factory=list,
        description="Requested settings the server stated nowhere qgate can read (e.g. its INFO "
        "log lines hidden by VLLM_LOGGING_LEVEL=WARNING), one line each: 'dtype: asked for "
        "'float32'; ...'. Their fields above stay None; the run goes on and the report says so.",
    )
    max_model_len: int | None = Field(default=None, description="Context length served.")
    tensor_parallel_size: int | None = Field(default=None)
    pipeline_parallel_size: int | None = Field(default=None)
    env_flags: dict[str, str] = Field(
        default_factory=dict, description="VLLM_*/engine env flags set for the server (redacted)."
    )
    args: dict[str, str | int | float | bool | None | list[str | int | float | bool]] = Field(
        default_factory=dict, description="Engine arguments qgate passed."
    )
    command: list[str] = Field(default_factory=list, description="Launch command (redacted).")
    emulated: list[str] = Field(
        default_factory=list, description="Components that are emulated, not native."
    )
    speculative_config: str | None = Field(
        default=None,
        description="The speculative decoding the engine logged it runs, as logged (vLLM: "
        "\"SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)\", or 'None' when "
        "it logged none); None: no log line stated it.",
    )


class ServerStart(StartFacts):
    """One server start of a run: whose, what for, and how long until it served."""

    side: str = Field(description="'reference', or the candidate's name ('candidate' alone).")
    purpose: Literal["preflight", "life"] = Field(
        description="A start-and-stop preflight, or the life that served the plan's work."
    )
    kind: str = Field(description="The engine (registry kind).")


class Runtime(Protocol):
    """A serving process (or endpoint) the suites talk to over HTTP."""

    role: Role

    @property
    def base_url(self) -> str: ...

    @property
    def served_model(self) -> str: ...

    @property
    def log_path(self) -> Path | None: ...

    def start(self) -> None: ...

    def wait_ready(self) -> None: ...

    def effective_config(self) -> EffectiveConfig: ...

    def check_alive(self) -> None:
        """Raise RuntimeFailure if the server has exited or stopped answering."""
        ...

    def stop(self) -> None: ...

    # What the run asks beyond serving, each with its default on `Lifecycle` (`metrics`: on
    # the engine class, qgate/profile/engines.py, None unless the engine names its counters):

    @property
    def metrics(self) -> MetricNames | None:
        """The names of its Prometheus counters qgate reads; None: none."""
        ...

    cores_chosen: list[int] | None
    """The cores a side-by-side run hands it (disjoint halves); an engine that pins reads them."""

    @property
    def node_name(self) -> str | None:
        """Where the life runs, as the report names it ('10.0.0.7 (ffffffffffff)'); None: on
        this machine."""
        ...

    def can_dry_check(self) -> bool:
        """Whether the engine's own parser can check its command line without a start."""
        ...

    def dry_check(self) -> None:
        """That check (RuntimeFailure with the engine's refusal)."""
        ...

    def paused(self) -> AbstractContextManager[None]:
        """The server frozen inside the block (the idle side of a side-by-side perf block)."""
        ...

    def headers(self) -> dict[str, str]:
        """Headers every request to it carries (an endpoint's API key, from its variable)."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Lifecycle(ABC):
    """The context-manager lifecycle every engine kind shares.

    `with runtime:` starts it and waits until it is ready; a start that fails
    half-way stops what was started; leaving the block always stops it.
    """

    @abstractmethod
    def start(self) -> None:
        """Launch (or find) the server."""

    @abstractmethod
    def wait_ready(self) -> None:
        """Block until the server answers, or raise RuntimeFailure."""

    @abstractmethod
    def stop(self) -> None:
        """Stop what was started; safe to call more than once."""

    cores_chosen: list[int] | None = None
    """Cores a side-by-side run hands it; only an engine that pins its cores reads them."""

    @property
    def node_name(self) -> str | None:
        """On this machine, unless an executor placed the life elsewhere."""
        return None

    def can_dry_check(self) -> bool:
        """No check of the command line without a start, unless the engine has one."""
        return False

    def dry_check(self) -> None:
        """Engines with `can_dry_check` write it."""
        raise NotImplementedError(f"{type(self).__name__} has no dry check")

    def paused(self) -> AbstractContextManager[None]:
        """Not frozen, unless the engine can be: the block runs as it is."""
        return nullcontext()

    def headers(self) -> dict[str, str]:
        """No headers, unless the engine needs some (an API key)."""
        return {}

    def __enter__(self) -> Self:
        try:
            self.start()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
