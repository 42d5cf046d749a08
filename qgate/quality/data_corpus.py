"""Generator of the divergence prompt corpus: varied prompts from templates and a seed.

Variety matters more than size: divergence between two numeric configurations
shows up unevenly (code and digits are often more fragile than prose), so the
corpus mixes instructions, code, arithmetic, prose and lists in a fixed order.
"""

from __future__ import annotations

import random

from qgate.core.jsonl_checks import jsonl_bytes

GENERATOR_VERSION = "1"
CORPUS_SEED = 99
PER_KIND = 16

_TOPICS = [
    "photosynthesis",
    "the water cycle",
    "volcanoes",
    "the printing press",
    "honeybees",
    "tides",
    "compilers",
    "the immune system",
    "bread baking",
    "electric motors",
    "glaciers",
    "the Roman roads",
    "coral reefs",
    "solar panels",
    "chess openings",
    "migratory birds",
    "paper making",
    "lighthouses",
    "the telegraph",
    "cheese making",
]
_AUDIENCES = ["a ten-year-old", "a new employee", "a curious grandparent", "a high-school student"]
_CODE_TASKS = [
    ("Python", "reverses a string"),
    ("Python", "returns the largest item of a list"),
    ("Python", "counts the vowels in a word"),
    ("JavaScript", "checks if a number is even"),
    ("Python", "computes the factorial of n"),
    ("C", "swaps two integers through pointers"),
    ("Python", "removes duplicates from a list while keeping order"),
    ("JavaScript", "sums an array of numbers"),
    ("Python", "reads a file and counts its lines"),
    ("Rust", "returns the length of a vector"),
    ("Python", "checks whether a word is a palindrome"),
    ("SQL", "selects the ten most recent orders"),
    ("Python", "merges two sorted lists"),
    ("Go", "prints the numbers from one to ten"),
    ("Python", "converts Celsius to Fahrenheit"),
    ("Bash", "counts the files in a folder"),
]
_LIST_THINGS = [
    "fruits that grow on trees",
    "tools found in a kitchen",
    "European capitals",
    "musical instruments",
    "things to pack for a hike",
    "board games",
    "ways to save water at home",
    "animals that live in the ocean",
    "programming languages",
    "colors of the rainbow",
    "parts of a bicycle",
    "vegetables that grow underground",
]
_STORY_STARTS = [
    "The old lighthouse keeper found a letter",
    "On the first day of spring, the baker",
    "The train stopped in the middle of the desert",
    "A small robot woke up",
    "The village had not seen rain for months",
    "She opened the dusty map",
]


def _instruction(rng: random.Random) -> str:
    topic, audience = rng.choice(_TOPICS), rng.choice(_AUDIENCES)
    form = rng.randrange(3)
    if form == 0:
        return f"Explain {topic} to {audience} in three sentences."
    if form == 1:
        return f"Write a short summary of how {topic} works."
    return f"Give two facts about {topic} and say why they matter."


def _code(rng: random.Random, i: int) -> str:
    lang, task = _CODE_TASKS[i % len(_CODE_TASKS)]
    if rng.random() < 0.5:
        return f"Write a {lang} function that {task}."
    return f"Write a {lang} function that {task}, then explain it in one sentence."


def _arithmetic(rng: random.Random) -> str:
    a, b, c = rng.randint(10, 999), rng.randint(10, 999), rng.randint(2, 12)
    form = rng.randrange(3)
    if form == 0:
        return f"Compute {a} + {b} step by step, showing each digit column."
    if form == 1:
        return f"What is {a} times {c}? Show your work."
    return f"A shop sells pens for {c} dollars each. How much do {a % 50 + 2} pens cost? Explain."


def _prose(rng: random.Random) -> str:
    start = rng.choice(_STORY_STARTS)
    if rng.random() < 0.5:
        return f"Continue this story in a few sentences: {start}"
    return f"Write a short paragraph about {rng.choice(_TOPICS)} in the style of a travel guide."


def _listing(rng: random.Random) -> str:
    n = rng.randint(3, 8)
    return f"List {n} {rng.choice(_LIST_THINGS)}, one per line."


def generate_corpus(seed: int = CORPUS_SEED, per_kind: int = PER_KIND) -> list[dict[str, str]]:
    """`5 * per_kind` unique prompts, kinds interleaved so any prefix of the corpus is varied."""
    rng = random.Random(seed)
    kinds = ["instruction", "code", "arithmetic", "prose", "list"]
    made: dict[str, list[str]] = {k: [] for k in kinds}
    attempts = 0
    for kind in kinds:
        while len(made[kind]) < per_kind:
            attempts += 1
            if attempts > 100_000:
                raise RuntimeError("corpus templates cannot yield enough unique prompts")
            if kind == "instruction":
                prompt = _instruction(rng)
            elif kind == "code":
                prompt = _code(rng, len(made[kind]))
            elif kind == "arithmetic":
                prompt = _arithmetic(rng)
            elif kind == "prose":
                prompt = _prose(rng)
            else:
                prompt = _listing(rng)
            if prompt not in made[kind]:
                made[kind].append(prompt)
    out: list[dict[str, str]] = []
    for i in range(per_kind):
        for kind in kinds:
            out.append({"id": f"{kind}-{i + 1:03d}", "kind": kind, "prompt": made[kind][i]})
    return out


def corpus_jsonl(seed: int = CORPUS_SEED) -> bytes:
    """The corpus as JSONL bytes."""
    return jsonl_bytes(generate_corpus(seed), ensure_ascii=False)
