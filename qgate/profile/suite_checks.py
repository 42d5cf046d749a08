"""Suite settings the schema cannot judge alone: each suite's `SuiteEntry.problems` hook.

A hook gets the suite's setting and the whole profile (for what the sides' settings allow)
and returns (key path, message) pairs that `qgate validate` refuses with their lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.yamlload import KeyPath
from qgate.profile.context_ladder import ROOM_MARGIN_TOKENS, unreachable
from qgate.profile.model import Profile
from qgate.profile.quality import ContextLadder, LmEvalTask, ToolCallsSuite
from qgate.profile.side import side

__all__ = ["ladder_problems", "lm_eval_problems", "tool_calls_args"]

Found = list[tuple[KeyPath, str]]


def ladder_problems(spec: ContextLadder, profile: Profile) -> Found:
    """A context ladder whose buckets a side's max_model_len cannot hold at any length."""
    for role in ("reference", "candidate"):
        limit = side(profile, role).max_model_len
        if limit is None:
            continue
        beyond = unreachable(spec.start, spec.up_to, limit, spec.max_tokens)
        if beyond:
            room = limit - spec.max_tokens - ROOM_MARGIN_TOKENS
            return [
                (
                    ("quality", "context_ladder", "up_to"),
                    f"the {role}'s max_model_len {limit} holds haystacks of at most {room} "
                    f"tokens, below every length of bucket(s) {beyond}: lower up_to to at "
                    f"most {room} or raise max_model_len",
                )
            ]
    return []


def lm_eval_problems(tasks: Sequence[LmEvalTask], profile: Profile) -> Found:
    """Tasks named twice (or differing only in case): both would report as one result id."""
    found: Found = []
    first: dict[str, int] = {}
    for index, task in enumerate(tasks):
        earlier = first.setdefault(task.task.casefold(), index)
        if earlier != index:
            other = tasks[earlier].task
            case = "" if other == task.task else f", as {other!r}: they differ only in case"
            found.append(
                (
                    ("quality", "lm_eval", index, "task"),
                    f"duplicate lm-eval task {task.task!r} (first at quality.lm_eval"
                    f"[{earlier}]{case}); both would report as lm_eval.{task.task}",
                )
            )
    return found


def tool_calls_args(spec: ToolCallsSuite) -> list[tuple[str, str]]:
    """The vLLM engine args the tool-call suite cannot run without: (arg, why)."""
    needs = [
        ("tool_call_parser", "vLLM refuses `tools` with a tool_choice without it (e.g. hermes)"),
        (
            "chat_template",
            "a template that renders `tools` into the prompt where the model's own has no "
            "tool section (qgate:chatml-tools for ChatML models such as SmolLM2); set it to "
            "the model's own template file to say that template renders them",
        ),
    ]
    if "auto" in spec.choices:
        needs.append(("enable_auto_tool_choice", "vLLM refuses tool_choice `auto` without it"))
    return needs
