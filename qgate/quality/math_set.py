"""The math set as data: its items, the short and long prompts, and the digest that defines them.

No HTTP client here (qgate/quality/math_suite.py runs the suite), so that `qgate verify`
and `qgate plan` read the set without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qgate.core.files import sha256_bytes, sha256_json
from qgate.core.jsonl_checks import JsonlLineError, jsonl_values
from qgate.errors import BadInput
from qgate.profile import MathSuite
from qgate.quality import data_ladder, data_math
from qgate.quality.calibrate import math_levels
from qgate.quality.data import evals_root, read_eval_file
from qgate.quality.data_math import EXTENSION_VERSION
from qgate.quality.sizing import math_limit

__all__ = [
    "PREAMBLE",
    "PROBED",
    "PROMPT_VERSION",
    "MathItem",
    "load_ladder",
    "load_math_set",
    "math_items",
    "long_budget",
    "long_prompt",
    "math_data_sha256",
    "short_prompt",
]

PROMPT_VERSION = "1"
PROBED = "math.short"
"""The result whose items the perf and life probes ask again: short-form math items, known
right on the reference (the other modules name it by this, never by the string)."""
INSTRUCTION = "Reply with only the number, nothing else."
LONG_BRIDGE = "The text above is background material; it is not needed for the question below."
DEFAULT_SET = "math/core.jsonl"
LADDER_SET = "math/ladder.jsonl"
LADDER_PER_LEVEL = 16
"""Items per drawn level when neither `limit` nor `detect` sizes a ladder draw."""
PREAMBLE = "math/preamble.txt"
MIN_LONG_TOKENS = 256
# Room for the question, the chat template and the instruction around the preamble.
LONG_MARGIN_TOKENS = 192


@dataclass(frozen=True)
class MathItem:
    """One question of the set."""

    id: str
    tier: str
    question: str
    answer: int


def load_math_set(path: Path | None, limit: int | None = None) -> tuple[list[MathItem], bytes]:
    """Items of a math JSONL set (the shipped core set when `path` is None) and its bytes."""
    raw = read_eval_file(path if path is not None else evals_root() / DEFAULT_SET)
    items: list[MathItem] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path or DEFAULT_SET}: not UTF-8 text ({exc.reason})") from None
    where = path or DEFAULT_SET
    try:
        for lineno, obj in jsonl_values(text):
            try:
                items.append(
                    MathItem(
                        id=str(obj["id"]),
                        tier=str(obj.get("tier", "")),
                        question=str(obj["question"]),
                        answer=int(obj["answer"]),
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise BadInput(f"{where}:{lineno}: not a math item ({exc})") from exc
    except JsonlLineError as exc:
        raise BadInput(f"{where}:{exc.lineno}: not a math item ({exc.cause})") from exc.cause
    if not items:
        raise BadInput(f"{path or DEFAULT_SET}: no math items")
    if path is None and limit is not None and limit > len(items):
        items += _extension(limit - len(items))
    return (items[:limit] if limit else items), raw


def _extension(count: int) -> list[MathItem]:
    """Generated items past the shipped core set (a set sized to a stated detection)."""
    extra = data_math.extension_items(count, data_math.generate_math())
    return [
        MathItem(
            id=str(e["id"]),
            tier=str(e["tier"]),
            question=str(e["question"]),
            answer=int(e["answer"]),
        )
        for e in extra
    ]


def _item(obj: dict[str, object]) -> MathItem:
    answer = obj["answer"]
    assert isinstance(answer, int | str)
    return MathItem(
        id=str(obj["id"]), tier=str(obj["tier"]), question=str(obj["question"]), answer=int(answer)
    )


def load_ladder(levels: list[int], count: int) -> tuple[list[MathItem], bytes]:
    """`count` ladder items over `levels`, interleaved, and the committed ladder file's bytes.

    A level's first items come from evals/math/ladder.jsonl; a draw larger than
    the file holds continues with the same generator (the file is its prefix,
    which `qgate evals check` guards).
    """
    raw = read_eval_file(evals_root() / LADDER_SET)
    pools: dict[int, list[MathItem]] = {lv: [] for lv in levels}
    try:
        for _, obj in jsonl_values(raw.decode("utf-8")):
            level = data_ladder.level_of(str(obj["id"]))
            if level in pools:
                pools[level].append(_item(obj))
    except (JsonlLineError, UnicodeDecodeError, KeyError, ValueError) as exc:
        raise BadInput(
            f"{LADDER_SET}: not the ladder set ({exc}); run `qgate evals check`"
        ) from None
    per = -(-count // len(levels))
    for level, pool in pools.items():
        if len(pool) < per:
            pool += [_item(dict(o)) for o in data_ladder.ladder_items(level, per)[len(pool) :]]
    return [pools[levels[i % len(levels)]][i // len(levels)] for i in range(count)], raw


def _ladder_count(spec: MathSuite, levels: list[int]) -> int:
    return math_limit(spec) or LADDER_PER_LEVEL * len(levels)


def math_items(spec: MathSuite) -> list[MathItem]:
    """The items a math suite asks: a ladder draw when it has levels, else the (core) set."""
    levels = math_levels(spec)
    if levels is not None:
        return load_ladder(levels, _ladder_count(spec, levels))[0]
    return load_math_set(spec.set, math_limit(spec))[0]


def short_prompt(question: str) -> str:
    """The short form: the question and a one-line instruction."""
    return f"{question}\n{INSTRUCTION}"


def long_prompt(preamble: str, question: str) -> str:
    """The long form: the shared preamble first (prefix-cacheable), then the short form."""
    return f"{preamble.rstrip()}\n\n{LONG_BRIDGE}\n\nQuestion: {short_prompt(question)}"


def long_budget(requested: int, max_model_len: int | None, max_tokens: int) -> int:
    """Preamble tokens to use: the request, clipped to fit the context; BadInput if too small."""
    budget = requested
    if max_model_len is not None:
        budget = min(budget, max_model_len - max_tokens - LONG_MARGIN_TOKENS)
    if budget < MIN_LONG_TOKENS:
        raise BadInput(
            f"math.long: max_model_len {max_model_len} leaves {budget} tokens for the preamble "
            f"(need at least {MIN_LONG_TOKENS}); drop 'long' from quality.math.prompts"
        )
    return budget


def math_data_sha256(
    spec: MathSuite, form: str, *, max_model_len: int | None, long_tokens: int | None = None
) -> str:
    """Digest of everything that defines a math suite's prompts (the reference cache keys on it)."""
    levels = math_levels(spec)
    view: dict[str, object] = {"suite": f"math.{form}", "prompt_version": PROMPT_VERSION}
    items: list[MathItem] = []
    limit = None
    if levels is not None:
        view |= {
            "ladder_sha256": sha256_bytes(read_eval_file(evals_root() / LADDER_SET)),
            "ladder_version": data_ladder.LADDER_VERSION,
            "levels": levels,
            "count": _ladder_count(spec, levels),
        }
    else:
        items, raw = load_math_set(spec.set)
        limit = math_limit(spec)
        view |= {"set_sha256": sha256_bytes(raw), "limit": limit}
    if spec.set is None and limit is not None and limit > len(items):
        view["extension_version"] = EXTENSION_VERSION
    if form == "long":
        view["preamble_sha256"] = sha256_bytes(read_eval_file(evals_root() / PREAMBLE))
        view["preamble_tokens"] = long_budget(
            long_tokens or spec.long_tokens, max_model_len, spec.max_tokens
        )
    return sha256_json(view)
