"""The precision profile: its pydantic models (loading: qgate/profile/load.py).

A profile names one checkpoint, the hardware it must run on, the engine and
its shared arguments, the reference and candidate overrides, the quality
suites with their gate policies, the perf scenarios and how to sign. The
models are strict (`extra="forbid"`): an unknown key is an error, never
silently ignored. The quality block lives in qgate/profile/quality.py, the
perf block in qgate/profile/scenarios.py and qgate/profile/perf.py, the
engine and each side's overrides in qgate/profile/runtimes.py, the shared
building blocks in qgate/profile/base.py; every model is importable from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, model_validator

from qgate.profile.attribution import AttributionSpec
from qgate.profile.base import (
    EngineArgValue,
    Fraction,
    KeyIssue,
    KeyPath,
    Scalar,
    Strict,
)
from qgate.profile.cluster import ClusterSpec
from qgate.profile.lives import EnvelopeSpec, LivesSpec
from qgate.profile.noise_floor import NoiseFloor
from qgate.profile.perf import PerfGate, PublishedFigure, check_dummy, side_args
from qgate.profile.quality import (
    ANSWER_MAX_TOKENS,
    LADDER_LEVELS,
    AccuracyPolicy,
    Calibration,
    ContextLadder,
    Detect,
    DivergenceSuite,
    LmEvalTask,
    MathSuite,
    QualitySpec,
    RecallSuite,
    StructuredSuite,
    ToolCallsSuite,
)
from qgate.profile.reuse import LoadFiller, ReuseSpec
from qgate.profile.runtimes import (
    EndpointSpec,
    EngineLaunch,
    EngineSpec,
    RuntimeFallback,
    RuntimeSpec,
    WeightEmulation,
)
from qgate.profile.scenarios import (
    FixedScenario,
    GradedTurns,
    MultiTurnScenario,
    PerfProbes,
    PerfSpec,
    Scenario,
    ScenarioBase,
    Slo,
    TraceScenario,
)
from qgate.profile.speculative import SpeculativeSpec

# The profile's whole model, importable from here wherever it is defined.
__all__ = [
    "ANSWER_MAX_TOKENS",
    "LADDER_LEVELS",
    "AccuracyPolicy",
    "AttributionSpec",
    "Calibration",
    "ClusterSpec",
    "Detect",
    "DivergenceSuite",
    "EndpointSpec",
    "EngineArgValue",
    "EngineLaunch",
    "EngineSpec",
    "EnvelopeSpec",
    "FixedScenario",
    "Fraction",
    "GradedTurns",
    "KeyIssue",
    "KeyPath",
    "LivesSpec",
    "LmEvalTask",
    "LoadFiller",
    "MathSuite",
    "ModelSpec",
    "MultiTurnScenario",
    "PerfGate",
    "PerfProbes",
    "PerfSpec",
    "Profile",
    "PublishedFigure",
    "QualitySpec",
    "ContextLadder",
    "RecallSuite",
    "StructuredSuite",
    "ToolCallsSuite",
    "NoiseFloor",
    "ReuseSpec",
    "RuntimeFallback",
    "RuntimeSpec",
    "Scalar",
    "Scenario",
    "ScenarioBase",
    "SigningSpec",
    "Slo",
    "SpeculativeSpec",
    "Strict",
    "Target",
    "TraceScenario",
    "WeightEmulation",
]


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

    name: str = Field(
        min_length=1, max_length=128, description="Short name; used in run folder names."
    )
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
    lives: LivesSpec = Field(
        default_factory=LivesSpec, description="Probes at every life's start and after idle."
    )
    envelope: EnvelopeSpec = Field(
        default_factory=EnvelopeSpec, description="One bound over every probe answer served."
    )
    attribution: AttributionSpec | None = Field(
        default=None, description="On a failure: the smallest set of changes that fails."
    )
    cluster: ClusterSpec | None = Field(
        default=None, description="Every life an actor on a Ray cluster (docs/cluster.md)."
    )

    def engine_of(self, role: str) -> EngineLaunch:
        """The engine block `role` runs with: its own `engine`, else the top-level one."""
        spec: RuntimeSpec = getattr(self, role)
        return spec.engine if spec.engine is not None else self.engine

    @model_validator(mode="after")
    def _endpoints(self) -> Self:
        # a side's `endpoint` block against its engine: `takes_endpoint` (engine_checks.py)
        issues: list[tuple[KeyPath, str]] = []
        own = {
            role: (role, "engine")
            for role in ("reference", "candidate")
            if getattr(self, role).engine is not None
            and "load_format" not in getattr(self, role).args
        }
        preview, dummy_issues = check_dummy(
            side_args(self, "reference"),
            side_args(self, "candidate"),
            self.quality.has_suites(),
            own,
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
        if self.engine.cpu_dtype == "auto":
            issues += [
                (
                    path,
                    "engine.cpu_dtype: auto sets dtype on both sides alike; remove this key "
                    "(or set cpu_dtype: as_written)",
                )
                for path in self._side_dtype_keys()
            ]
        if issues:
            raise KeyIssue(issues)
        return self

    def _side_dtype_keys(self) -> list[KeyPath]:
        """Key paths where one side sets its own dtype (a one-sided serving dtype)."""
        paths: list[KeyPath] = []
        for role in ("reference", "candidate"):
            spec: RuntimeSpec = getattr(self, role)
            if "dtype" in spec.args:
                paths.append((role, "args", "dtype"))
            if spec.fallback is not None and "dtype" in spec.fallback.args:
                paths.append((role, "fallback", "args", "dtype"))
            if spec.engine is not None and "dtype" in spec.engine.args:
                paths.append((role, "engine", "args", "dtype"))
        return paths
