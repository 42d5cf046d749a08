"""An already running OpenAI-compatible server (ATOM, SGLang, a remote vLLM).

qgate probes it and records what it reports; it cannot restart it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from qgate.core import http
from qgate.core.env_names import shown_env_name
from qgate.core.features import FEATURES, Feature
from qgate.core.records import Role
from qgate.core.redact import redact_text
from qgate.core.serving import EffectiveConfig, Lifecycle
from qgate.errors import BadInput, RuntimeFailure
from qgate.profile import EndpointSpec, Profile
from qgate.profile.engines import EngineDecl
from qgate.runtime import effective

if TYPE_CHECKING:
    from qgate.profile import EngineLaunch
    from qgate.profile.base import KeyPath

__all__ = ["Endpoint"]


class Endpoint(EngineDecl, Lifecycle):
    """A server named by base URL; the API key stays in its environment variable."""

    kind: ClassVar[str] = "endpoint"
    takes_endpoint: ClassVar[bool] = True

    @classmethod
    def served_features(cls, launch: EngineLaunch) -> frozenset[Feature]:
        """As declared; undeclared, a vLLM-compatible server (what qgate always assumed)."""
        return frozenset(FEATURES if launch.features is None else launch.features)

    @classmethod
    def spec_issues(cls, launch: EngineLaunch) -> list[tuple[KeyPath, str]]:
        if launch.command is not None:
            return [(("command",), "only valid when kind is 'command'")]
        return []

    def __init__(
        self,
        *,
        role: Role,
        base_url: str,
        model: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.role: Role = role
        self._base_url = base_url.rstrip("/")
        self._model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self._effective: EffectiveConfig | None = None
        self._models: dict[str, Any] | None = None

    @classmethod
    def from_spec(cls, spec: EndpointSpec, role: Role, timeout_s: float = 30.0) -> Endpoint:
        """From a profile's `reference.endpoint` / `candidate.endpoint`."""
        return cls(
            role=role,
            base_url=spec.base_url,
            model=spec.model,
            api_key_env=spec.api_key_env,
            timeout_s=timeout_s,
        )

    @classmethod
    def from_profile(
        cls,
        profile: Profile,
        role: Role,
        model_path: Path | None = None,
        run_dir: Path | None = None,
    ) -> Endpoint:
        spec = getattr(profile, role).endpoint
        if spec is None:
            raise BadInput(f"{role}.endpoint is required when engine.kind is 'endpoint'")
        return cls.from_spec(spec, role)

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def _shown_url(self) -> str:
        # user:password@ in a URL is a credential; messages show the host only.
        return re.sub(r"//[^/@]*@", "//***@", self._base_url)

    @property
    def served_model(self) -> str:
        if self._model is None:
            raise RuntimeFailure(self.role, "model name unknown until the endpoint was probed")
        return self._model

    @property
    def log_path(self) -> Path | None:
        return None

    def headers(self) -> dict[str, str]:
        """HTTP headers for clients: the bearer key read from its variable at call time."""
        if self.api_key_env is None:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            name = shown_env_name(self.api_key_env)
            raise BadInput(f"{self.role} endpoint: API key variable {name} is not set")
        return {"Authorization": f"Bearer {key}"}

    def _secrets(self) -> list[str]:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return [key] if key else []

    def _get_models(self) -> dict[str, Any]:
        url = f"{self._base_url}/models"
        try:
            return http.get_json(url, timeout=self.timeout_s, headers=self.headers())
        except http.ProbeError as e:
            if e.refused:
                raise RuntimeFailure(
                    self.role, f"endpoint {self._shown_url}: connection refused"
                ) from e
            if e.status in (401, 403):
                raise RuntimeFailure(
                    self.role, f"endpoint {self._shown_url}: HTTP {e.status} (check the API key)"
                ) from e
            detail = redact_text(str(e), self._secrets())
            raise RuntimeFailure(self.role, f"endpoint {self._shown_url}: {detail}") from e

    def start(self) -> None:
        """Probe /v1/models; an endpoint cannot be started, only found."""
        self._models = self._get_models()

    def wait_ready(self) -> None:
        """Record what the endpoint reports (/v1/models, /version if it has one)."""
        models = self._models if self._models is not None else self._get_models()
        ids = [str(m.get("id")) for m in models.get("data", []) if isinstance(m, dict)]
        if not ids:
            raise RuntimeFailure(
                self.role, f"endpoint {self._shown_url}: /v1/models lists no model"
            )
        if self._model is None:
            self._model = ids[0]
        elif self._model not in ids:
            raise RuntimeFailure(
                self.role, f"endpoint {self._shown_url} serves {ids!r}, not {self._model!r}"
            )
        version: str | None = None
        try:
            root = http.root_url(self._base_url)
            raw = http.get_json(f"{root}/version", timeout=5.0, headers=self.headers())
            version = str(raw["version"]) if "version" in raw else None
        except http.ProbeError:
            version = None
        self._effective = EffectiveConfig(
            role=self.role,
            kind="endpoint",
            base_url=self._shown_url,
            served_model=self._model,
            engine_version=version,
            max_model_len=effective.models_max_len(models, self._model),
        )

    def effective_config(self) -> EffectiveConfig:
        if self._effective is None:
            raise RuntimeFailure(self.role, "endpoint not probed yet")
        return self._effective

    def check_alive(self) -> None:
        """Raise RuntimeFailure when the endpoint no longer lists models."""
        self._get_models()

    def stop(self) -> None:
        """Nothing to stop: qgate does not own an endpoint."""
