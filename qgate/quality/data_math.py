"""Generator of the exact-answer math set and of the long-prompt preamble.

Everything comes from `random.Random(seed)`: the same seed and generator
version give byte-identical files, which `qgate evals check` relies on.
Answers are computed from the item's expression, never typed; `expr` is kept
in every line so a test (or a reader) can recompute them.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable

from qgate.core.jsonl_checks import jsonl_bytes

GENERATOR_VERSION = "1"
MATH_SEED = 20261130
PREAMBLE_SEED = 7

ARITH_ITEMS = 64
MULTI_ITEMS = 40
WORD_ITEMS = 40

MathItem = dict[str, str | int]


def _arith(rng: random.Random, n: int) -> MathItem:
    # Mostly single-digit sums: SmolLM2-135M gets ~40% of those, so the
    # reference accuracy of the whole set stays well above zero.
    kind = rng.choices(["add1", "add2", "sub", "mul"], weights=[5, 2, 2, 2])[0]
    if kind == "add1":
        a, b, op = rng.randint(1, 9), rng.randint(1, 9), "+"
    elif kind == "add2":
        a, b, op = rng.randint(10, 99), rng.randint(1, 9), "+"
    elif kind == "sub":
        a = rng.randint(5, 20)
        a, b, op = a, rng.randint(1, a), "-"
    else:
        a, b, op = rng.randint(2, 9), rng.randint(2, 9), "*"
    expr = f"{a} {op} {b}"
    shown = expr.replace("*", "×")
    return {"tier": "arith", "question": f"What is {shown}?", "expr": expr}


def _multi(rng: random.Random, n: int) -> MathItem:
    a, b, c = rng.randint(2, 9), rng.randint(2, 9), rng.randint(2, 9)
    form = rng.randrange(4)
    if form == 0:
        expr = f"{a} + {b} + {c}"
    elif form == 1:
        expr = f"{a} + {b} - {c}"
    elif form == 2:
        expr = f"({a} + {b}) * {c}"
    else:
        expr = f"{a} * {c} + {b}"
    shown = expr.replace("*", "×")
    return {"tier": "multi", "question": f"Calculate {shown}.", "expr": expr}


_NAMES = [
    "Ana",
    "Ben",
    "Chloe",
    "David",
    "Emma",
    "Farid",
    "Grace",
    "Hugo",
    "Iris",
    "Jonas",
    "Kira",
    "Liam",
    "Maya",
    "Noah",
    "Olga",
    "Pablo",
]
_THINGS = [
    "apples",
    "books",
    "coins",
    "pencils",
    "stickers",
    "marbles",
    "cookies",
    "stamps",
    "shells",
    "cards",
]


def _word(rng: random.Random, n: int) -> MathItem:
    name = rng.choice(_NAMES)
    other = rng.choice([x for x in _NAMES if x != name])
    thing = rng.choice(_THINGS)
    form = rng.randrange(4)
    if form == 0:
        a, b = rng.randint(2, 15), rng.randint(2, 15)
        q = f"{name} has {a} {thing}. {other} gives {name} {b} more. How many {thing} does {name} have now?"  # noqa: E501
        expr = f"{a} + {b}"
    elif form == 1:
        a = rng.randint(8, 30)
        b = rng.randint(1, a - 1)
        q = f"{name} had {a} {thing} and gave {b} of them to {other}. How many {thing} does {name} have left?"  # noqa: E501
        expr = f"{a} - {b}"
    elif form == 2:
        a, b = rng.randint(2, 9), rng.randint(2, 9)
        q = f"{name} buys {a} boxes with {b} {thing} in each box. How many {thing} does {name} buy in total?"  # noqa: E501
        expr = f"{a} * {b}"
    else:
        a, b, c = rng.randint(3, 12), rng.randint(2, 9), rng.randint(1, 5)
        q = f"{name} has {a} {thing}, finds {b} more, then loses {c}. How many {thing} does {name} have?"  # noqa: E501
        expr = f"{a} + {b} - {c}"
    return {"tier": "word", "question": q, "expr": expr}


def evaluate_expression(expr: str) -> int:
    """Integer value of a generator expression (+, -, *, parentheses), without eval()."""

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
        raise ValueError(f"unsupported expression: {expr!r}")

    return walk(ast.parse(expr, mode="eval"))


def generate_math(seed: int = MATH_SEED) -> list[MathItem]:
    """The core set: tiers interleaved so that any `limit` keeps a mix of tiers."""
    rng = random.Random(seed)
    makers: list[tuple[str, int, Callable[[random.Random, int], MathItem]]] = [
        ("arith", ARITH_ITEMS, _arith),
        ("multi", MULTI_ITEMS, _multi),
        ("word", WORD_ITEMS, _word),
    ]
    per_tier: dict[str, list[MathItem]] = {}
    for tier, count, make in makers:
        items: list[MathItem] = []
        seen: set[str] = set()
        while len(items) < count:
            item = make(rng, len(items))
            if item["question"] in seen:
                continue
            seen.add(str(item["question"]))
            item["answer"] = evaluate_expression(str(item["expr"]))
            items.append(item)
        per_tier[tier] = items
    # Round-robin weighted by tier size: arith items are most frequent early too.
    ordered: list[MathItem] = []
    cursors = {tier: 0 for tier in per_tier}
    total = sum(len(v) for v in per_tier.values())
    while len(ordered) < total:
        for tier, items in per_tier.items():
            share = len(items) / total
            if cursors[tier] < len(items) and cursors[tier] <= share * (len(ordered) + 1):
                ordered.append(items[cursors[tier]])
                cursors[tier] += 1
    counters = {tier: 0 for tier in per_tier}
    out: list[MathItem] = []
    for item in ordered:
        tier = str(item["tier"])
        counters[tier] += 1
        out.append(
            {
                "id": f"{tier}-{counters[tier]:04d}",
                "tier": tier,
                "question": item["question"],
                "expr": item["expr"],
                "answer": item["answer"],
            }
        )
    return out


EXTENSION_VERSION = "1"
"""Version of `extension_items`: the items past the core set that a stated detection asks for."""


def extension_items(count: int, core: list[MathItem]) -> list[MathItem]:
    """`count` more items after the core set, for sets sized to a stated detection.

    Each round is the core generator with the next seed (MATH_SEED + 1, + 2, ...),
    questions already asked dropped, ids prefixed `x<round>-`: deterministic, so
    run and verify build the same items, and the core set keeps its bytes.
    """
    seen = {str(item["question"]) for item in core}
    out: list[MathItem] = []
    round_ = 0
    while len(out) < count:
        round_ += 1
        if round_ > 64:  # the question space of the tiers is large; this only stops a bug
            raise ValueError(f"cannot generate {count} distinct math items past the core set")
        for item in generate_math(MATH_SEED + round_):
            if str(item["question"]) in seen:
                continue
            seen.add(str(item["question"]))
            out.append({**item, "id": f"x{round_}-{item['id']}"})
            if len(out) == count:
                break
    return out


def math_jsonl(seed: int = MATH_SEED) -> bytes:
    """The core set as JSONL bytes (one sorted-key object per line)."""
    return jsonl_bytes(generate_math(seed), ensure_ascii=False)


_SYSTEMS = [
    "cooling loop",
    "backup generator",
    "conveyor belt",
    "air handler",
    "badge reader",
    "water pump",
    "freight elevator",
    "loading dock door",
    "boiler",
    "fire panel",
    "server rack",
    "label printer",
    "forklift charger",
    "compressor",
    "roof drain",
]
_ACTIONS = [
    "inspected",
    "cleaned",
    "recalibrated",
    "restarted",
    "lubricated",
    "tested",
    "logged",
    "replaced a filter on",
    "tightened the fittings of",
    "updated firmware on",
]
_NOTES = [
    "No anomalies were observed during the check.",
    "The readings stayed within the normal band for the whole shift.",
    "A follow-up visit is scheduled for the next maintenance window.",
    "The operator signed the checklist and returned the keys to the front desk.",
    "Spare parts were taken from shelf B and the inventory sheet was updated.",
    "The area was cordoned off for twenty minutes while the work was done.",
    "Noise levels were slightly elevated but within the documented tolerance.",
    "The previous ticket was closed after the technician confirmed the fix.",
]
_SECTIONS = ["Procedure", "Safety note", "Shift log", "Maintenance record", "Handover"]


def preamble_text(seed: int = PREAMBLE_SEED, entries: int = 420) -> str:
    """A long, deterministic, unrelated maintenance log used in front of every long prompt.

    Identical for every item (and every run) so that a server's prefix cache
    can reuse it: the long form measures attention over a long context, not
    prefill throughput. About 30 tokens an entry; truncated to the requested
    token budget at run time with the server's tokenizer.
    """
    rng = random.Random(seed)
    lines = ["FACILITY OPERATIONS MANUAL AND MAINTENANCE LOG (background material)", ""]
    for i in range(entries):
        if i % 20 == 0:
            lines.append(f"{rng.choice(_SECTIONS)} {i // 20 + 1}.")
        day, hour, minute = rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)
        lines.append(
            f"Day {day}, {hour:02d}:{minute:02d}: the technician {rng.choice(_ACTIONS)} "
            f"the {rng.choice(_SYSTEMS)} in room {rng.randint(100, 499)}. {rng.choice(_NOTES)}"
        )
    return "\n".join(lines) + "\n"
