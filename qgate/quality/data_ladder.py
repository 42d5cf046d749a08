"""The math difficulty ladder: generated items at levels of rising difficulty.

The core set (data_math) is sized for a 135M model; on it a frontier model
answers nearly everything, no item flips, and a few-point regression cannot be
seen. The ladder adds what makes an item hard, one knob per level: more steps,
more operand digits (so more carries), and distractor sentences; its top levels
(8-12 step word problems, 6x6 to 9x9 digit products, answered with the number
only) are beyond what frontier models answer reliably, so every model has a
boundary inside the ladder. Calibration (qgate/quality/calibrate.py) picks the
levels where the reference is neither at floor nor at ceiling.

Each level mixes three families in turn: a long multiplication (digits), a
chain of additions and subtractions (terms and carries), and a word problem
(steps and distractors). Everything comes from `random.Random` seeded per
level; the first n items of a level are the same for any count (a set sized
larger keeps the smaller set as its prefix). Answers are computed from the
item's expression (`data_math.evaluate_expression`), never typed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from qgate.core.jsonl_checks import jsonl_bytes
from qgate.quality.data_math import evaluate_expression

__all__ = [
    "LADDER",
    "LADDER_FILE_ITEMS",
    "LADDER_SEED",
    "LADDER_VERSION",
    "Level",
    "ladder_items",
    "ladder_jsonl",
    "level_of",
]

LADDER_VERSION = "1"
LADDER_SEED = 20261202
LADDER_FILE_ITEMS = 48
"""Items per level in the committed evals/math/ladder.jsonl (more are generated on demand)."""


@dataclass(frozen=True)
class Level:
    """What makes one level hard."""

    level: int
    steps: int  # operations of a word problem; terms - 1 of a chain
    digits: tuple[int, int]  # operand digits of a product (and of chain terms: the first)
    distractors: int  # irrelevant sentences in a word problem
    carry_digits: bool  # operands drawn from 2-9 only: nearly every column carries

    def describe(self) -> str:
        a, b = self.digits
        return (
            f"{self.steps}-step word problems ({self.distractors} distractors), "
            f"{a}x{b}-digit products, {self.steps + 1}-term chains"
        )


LADDER: dict[int, Level] = {
    lv.level: lv
    for lv in (
        Level(1, 1, (1, 1), 0, False),
        Level(2, 2, (2, 1), 0, False),
        Level(3, 3, (2, 2), 0, True),
        Level(4, 4, (3, 2), 1, True),
        Level(5, 5, (3, 3), 1, True),
        Level(6, 6, (4, 3), 2, True),
        Level(7, 7, (5, 4), 2, True),
        Level(8, 8, (6, 6), 3, True),
        Level(9, 10, (7, 7), 3, True),
        Level(10, 12, (9, 9), 4, True),
    )
}

MathItem = dict[str, str | int]

_NAMES = ["Ana", "Ben", "Chloe", "David", "Emma", "Farid", "Grace", "Hugo", "Iris", "Jonas"]
_THINGS = ["apples", "books", "coins", "pencils", "stickers", "marbles", "stamps", "shells"]


def level_of(item_id: str) -> int | None:
    """The ladder level of an item id ('L7-0003' -> 7); None for any other id."""
    head = item_id.split("-", 1)[0]
    if len(head) > 1 and head[0] == "L" and head[1:].isdigit():
        return int(head[1:])
    return None


def _number(rng: random.Random, digits: int, carry_digits: bool) -> int:
    if not carry_digits:
        return rng.randint(10 ** (digits - 1) if digits > 1 else 1, 10**digits - 1)
    return int("".join(str(rng.randint(2, 9)) for _ in range(digits)))


def _add_carries(a: int, b: int) -> int:
    carries, carry = 0, 0
    while a or b:
        carry = 1 if a % 10 + b % 10 + carry >= 10 else 0
        carries += carry
        a, b = a // 10, b // 10
    return carries


def _mul_carries(a: int, b: int) -> int:
    """Carries of schoolbook long multiplication: in each partial product and in the sums."""
    carries, total = 0, 0
    for shift, d in enumerate(reversed(str(b))):
        carry = 0
        for x in reversed(str(a)):
            carry = (int(x) * int(d) + carry) // 10
            carries += carry > 0
        partial = a * int(d) * 10**shift
        carries += _add_carries(total, partial)
        total += partial
    return carries


def _product(rng: random.Random, lv: Level) -> MathItem:
    a = _number(rng, lv.digits[0], lv.carry_digits)
    b = _number(rng, lv.digits[1], lv.carry_digits)
    return {
        "family": "product",
        "question": f"What is {a} × {b}?",
        "expr": f"{a} * {b}",
        "carries": _mul_carries(a, b),
        "steps": 1,
    }


def _chain(rng: random.Random, lv: Level) -> MathItem:
    digits = max(1, lv.digits[0] - 1) if lv.level > 2 else lv.digits[0]
    terms = [_number(rng, digits, lv.carry_digits)]
    total, carries, expr = terms[0], 0, str(terms[0])
    for _ in range(lv.steps):
        x = _number(rng, max(1, digits - rng.randint(0, 1)), lv.carry_digits)
        if x < total and rng.random() < 0.4:
            expr, total = f"{expr} - {x}", total - x
        else:
            carries += _add_carries(total, x)
            expr, total = f"{expr} + {x}", total + x
    return {
        "family": "chain",
        "question": f"Calculate {expr}.",
        "expr": expr,
        "carries": carries,
        "steps": lv.steps,
    }


def _word(rng: random.Random, lv: Level) -> MathItem:
    name = rng.choice(_NAMES)
    others = [n for n in _NAMES if n != name]
    thing = rng.choice(_THINGS)
    scale = 10 ** min(3, 1 + lv.level // 3)
    start = rng.randint(scale // 10 + 2, scale)
    sentences = [f"{name} has {start} {thing}."]
    expr, total, steps = str(start), start, 0
    while steps < lv.steps:
        other = rng.choice(others)
        kind = rng.choice(["gain", "lose", "boxes", "double"] if lv.steps > 1 else ["gain", "lose"])
        if kind == "boxes" and steps + 2 <= lv.steps:
            k, m = rng.randint(2, 9), rng.randint(3, 12)
            sentences.append(f"{name} buys {k} boxes with {m} {thing} in each box.")
            expr, total, steps = f"({expr} + {k} * {m})", total + k * m, steps + 2
        elif kind == "double" and total < 5 * scale:
            sentences.append(f"{name} doubles the number of {thing} {name} has.")
            expr, total, steps = f"({expr}) * 2", total * 2, steps + 1
        elif kind == "lose" and total > 2:
            x = rng.randint(1, max(1, total // 2))
            sentences.append(f"{name} gives {x} {thing} to {other}.")
            expr, total, steps = f"({expr} - {x})", total - x, steps + 1
        else:
            x = rng.randint(2, scale)
            sentences.append(f"{other} gives {name} {x} more {thing}.")
            expr, total, steps = f"({expr} + {x})", total + x, steps + 1
    for _ in range(lv.distractors):
        other = rng.choice(others)
        noise = rng.choice(
            [
                f"{other} has {rng.randint(2, scale)} {rng.choice(_THINGS)}.",
                f"{other} once owned {rng.randint(2, scale)} {thing} but sold them long ago.",
                f"A box in the shop holds {rng.randint(2, 40)} {thing}.",
                f"{other} is {rng.randint(8, 70)} years old.",
            ]
        )
        sentences.insert(rng.randint(1, len(sentences)), noise)
    sentences.append(f"How many {thing} does {name} have now?")
    return {
        "family": "word",
        "question": " ".join(sentences),
        "expr": expr,
        "carries": 0,
        "steps": steps,
    }


_FAMILIES = (_product, _chain, _word)


def ladder_items(level: int, count: int) -> list[MathItem]:
    """The first `count` items of a level (distinct questions; a prefix of any larger count)."""
    lv = LADDER[level]
    rng = random.Random(f"qgate-ladder:{LADDER_SEED}:{level}")
    out: list[MathItem] = []
    seen: set[str] = set()
    tries = 0
    while len(out) < count:
        tries += 1
        if tries > 50 * count + 100:  # level 1 has few distinct questions; this stops a bug
            raise ValueError(f"cannot generate {count} distinct items at ladder level {level}")
        made = _FAMILIES[len(out) % len(_FAMILIES)](rng, lv)
        if str(made["question"]) in seen:
            continue
        seen.add(str(made["question"]))
        out.append(
            {
                "id": f"L{level}-{len(out) + 1:04d}",
                "tier": f"L{level}",
                "level": level,
                "family": made["family"],
                "steps": made["steps"],
                "digits": lv.digits[0] + lv.digits[1] if made["family"] == "product" else 0,
                "carries": made["carries"],
                "distractors": lv.distractors if made["family"] == "word" else 0,
                "question": made["question"],
                "expr": made["expr"],
                "answer": evaluate_expression(str(made["expr"])),
            }
        )
    return out


def draw(levels: list[int], count: int) -> list[MathItem]:
    """`count` items over `levels`, interleaved (any prefix keeps the mix of levels)."""
    per = -(-count // len(levels))
    pools = {lv: ladder_items(lv, per) for lv in levels}
    return [pools[levels[i % len(levels)]][i // len(levels)] for i in range(count)]


def ladder_jsonl() -> bytes:
    """The committed ladder file: the first LADDER_FILE_ITEMS items of every level."""
    items = [item for lv in LADDER for item in ladder_items(lv, LADDER_FILE_ITEMS)]
    return jsonl_bytes(items, ensure_ascii=False)
