"""`quality.reuse` checks the schema cannot express: a pass must have items to ask again.

A `reuse` block whose `suites` select no configured math or recall result (a typo, a context
length no recall suite has, a profile with only divergence or lm-eval suites) would run no pass
while the plan promises one; each such name, and a block that selects nothing, is refused at
validate with its key path.
"""

from __future__ import annotations

from qgate.core.yamlload import KeyPath
from qgate.profile.quality import QualitySpec
from qgate.profile.suites import askable, asked_again, exact_results

__all__ = ["reuse_problems"]


def reuse_problems(spec: QualitySpec) -> list[tuple[KeyPath, str]]:
    """(key path, message) for each `quality.reuse` selection that names no configured result."""
    reuse = spec.reuse
    if reuse is None:
        return []
    families = " and ".join(askable())
    results = [s for s, _ in exact_results(spec) if asked_again(s)]
    shown = ", ".join(results[:8]) or f"none: only {families} results can be asked again"
    found: list[tuple[KeyPath, str]] = []
    for index, name in enumerate(reuse.suites or []):
        if name.partition(".")[0] not in askable():
            found.append(
                (
                    ("quality", "reuse", "suites", index),
                    f"{name[:80]!r}: only {families} results can be asked again "
                    "(divergence scores prompts with prompt_logprobs, which vLLM never serves "
                    "from its prefix cache; lm-eval tasks run through lm-eval)",
                )
            )
        elif not any(name == s or name == s.partition(".")[0] for s in results):
            found.append(
                (
                    ("quality", "reuse", "suites", index),
                    f"{name[:80]!r} selects no configured result (configured: {shown})",
                )
            )
    if not found and not results:
        found.append(
            (
                ("quality", "reuse"),
                f"selects no configured suite: the passes ask {families} results again, "
                "and the profile configures neither",
            )
        )
    return found
