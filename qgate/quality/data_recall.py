"""Generator of symbol-recall haystacks (the pure part; token sizing is in recall_suite).

A haystack is filler prose made from a committed vocabulary with one
"access code" sentence planted at one depth (one haystack per depth: a small
model confuses several codes with each other, which would measure
distraction rather than recall over distance); distraction is a difficulty
level of its own (`similar_needles`: codes one character apart for nearby
lockers, asked for in `quality.recall.similar`). Everything is derived from
`random.Random`, so the same profile gives the same sentences; how many of
them fit in N tokens is decided at run time with the served model's tokenizer.

The token-sized suite (recall_suite) draws a haystack's filler from (seed,
length, haystack index) and its code from (seed, length, haystack index,
depth): every depth of one haystack reads the same prose up to its code, so
their prompts share that prefix and a prefix-caching server computes it once
(with 5 depths ~1/3 fewer prompt tokens; the usual needle-in-a-haystack
design, one haystack text, the needle moved). The character-sized set for
lm-eval keeps one stream per (seed, length, depth, index).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from qgate.core.jsonl_checks import jsonl_bytes

GENERATOR_VERSION = "2"
# The token-sized suite's layout: "3" = one filler stream per haystack, shared by its depths.
SIZED_GENERATOR_VERSION = "3"
RECALL_CHARS_SEED = 4242
RECALL_CHARS_LENGTH = 4000

_VOCABULARY: dict[str, list[str]] = {
    "adjectives": [
        "quiet",
        "narrow",
        "golden",
        "dusty",
        "bright",
        "heavy",
        "gentle",
        "ancient",
        "crowded",
        "distant",
        "wooden",
        "silver",
        "rapid",
        "patient",
        "curious",
        "hollow",
        "steady",
        "pale",
        "vivid",
        "careful",
        "rusty",
        "tiny",
        "broad",
        "humble",
        "frozen",
        "busy",
        "soft",
        "proud",
        "sudden",
        "lazy",
    ],
    "nouns": [
        "river",
        "lantern",
        "market",
        "garden",
        "bridge",
        "teacher",
        "harbor",
        "wagon",
        "library",
        "orchard",
        "tower",
        "sailor",
        "village",
        "meadow",
        "painter",
        "station",
        "kettle",
        "forest",
        "mountain",
        "fisherman",
        "window",
        "bakery",
        "carpet",
        "courtyard",
        "merchant",
        "valley",
        "chimney",
        "engine",
        "notebook",
        "island",
    ],
    "verbs": [
        "passed",
        "watched",
        "followed",
        "painted",
        "repaired",
        "visited",
        "crossed",
        "admired",
        "measured",
        "described",
        "carried",
        "opened",
        "cleaned",
        "remembered",
        "guarded",
        "photographed",
        "counted",
        "decorated",
        "studied",
        "ignored",
    ],
    "times": [
        "in the morning",
        "after lunch",
        "before sunset",
        "late at night",
        "on Sunday",
        "during the storm",
        "at dawn",
        "every spring",
        "last winter",
        "in the evening",
    ],
}


def vocabulary_json() -> bytes:
    """The committed vocabulary file (evals/recall/vocabulary.json)."""
    return (json.dumps(_VOCABULARY, indent=1, sort_keys=True) + "\n").encode()


def load_vocabulary(data: bytes) -> dict[str, list[str]]:
    """Parse a vocabulary file; every word class must be a non-empty list of strings."""
    raw = json.loads(data)
    vocab = {k: [str(w) for w in v] for k, v in raw.items()}
    for key in _VOCABULARY:
        if not vocab.get(key):
            raise ValueError(f"vocabulary has no '{key}'")
    return vocab


@dataclass(frozen=True)
class Needle:
    """One planted fact: the code of a numbered locker, at a depth of the haystack."""

    key: str
    symbol: str
    depth: float

    @property
    def sentence(self) -> str:
        return f"The access code for {self.key} is {self.symbol}."

    @property
    def question(self) -> str:
        return (
            f"What is the access code for {self.key}? "
            "Answer with the code only (two capital letters, a dash and four digits)."
        )


def haystack_rng(seed: int, length: int, index: int, depth: float) -> random.Random:
    """The generator of one haystack; string seeds are hashed deterministically (sha512)."""
    return random.Random(f"qgate-recall:{seed}:{length}:{depth:.4f}:{index}")


def item_id(length: int, similar: int, index: int, slot: int, depth: float) -> str:
    """A recall item's id: `recall.<length>[.s<similar>].h<index>.d<slot>-<depth %>`."""
    level = f".s{similar}" if similar else ""
    return f"recall.{length}{level}.h{index}.d{slot}-{round(depth * 100):02d}"


def planted(
    seed: int, length: int, haystacks: int, depths: list[float], similar: list[int]
) -> dict[str, str]:
    """Item id -> the code planted in it: what a recall run of these settings asks, derived
    without a tokenizer (the code depends on the seed, length, haystack and depth only)."""
    return {
        item_id(length, k, h, d, depth): make_needles(
            haystack_rng(seed, length, h, depth), [depth]
        )[0].symbol
        for k in similar
        for h in range(haystacks)
        for d, depth in enumerate(depths)
    }


def filler_rng(seed: int, length: int, index: int) -> random.Random:
    """The filler generator of one token-sized haystack, the same for every depth."""
    return random.Random(f"qgate-recall-filler:{seed}:{length}:{index}")


def make_needles(rng: random.Random, depths: list[float]) -> list[Needle]:
    """One needle per depth, with distinct lockers and distinct symbols."""
    lockers = rng.sample(range(100, 1000), len(depths))
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    symbols: list[str] = []
    while len(symbols) < len(depths):
        sym = f"{rng.choice(letters)}{rng.choice(letters)}-{rng.randint(1000, 9999)}"
        if sym not in symbols:
            symbols.append(sym)
    return [
        Needle(key=f"locker {n}", symbol=s, depth=d)
        for n, s, d in zip(lockers, symbols, depths, strict=True)
    ]


def similar_needles(rng: random.Random, needle: Needle, count: int) -> list[Needle]:
    """`count` distractors like `needle`: lockers a few numbers away, codes one character apart.

    Spread evenly over the haystack; none shares the needle's locker or code, so
    the question still has exactly one answer.
    """
    number = int(needle.key.split()[-1])
    near = [n for n in range(number - 3 * count - 3, number + 3 * count + 4) if 100 <= n <= 999]
    lockers = rng.sample([n for n in near if n != number], count)
    letters, digits = "ABCDEFGHJKLMNPQRSTUVWXYZ", "0123456789"
    seen = {needle.symbol}
    out: list[Needle] = []
    for i, locker in enumerate(lockers):
        while True:
            chars = list(needle.symbol)
            at = rng.choice([0, 1, 3, 4, 5, 6])
            chars[at] = rng.choice(letters if at < 2 else digits)
            symbol = "".join(chars)
            if symbol not in seen and symbol[3] != "0":
                break
        seen.add(symbol)
        out.append(Needle(key=f"locker {locker}", symbol=symbol, depth=(i + 0.5) / count))
    return out


def filler_sentences(rng: random.Random, vocab: dict[str, list[str]], count: int) -> list[str]:
    """`count` sentences of unrelated prose; none contains a digit or a code."""
    out: list[str] = []
    for _ in range(count):
        a1, a2 = rng.choice(vocab["adjectives"]), rng.choice(vocab["adjectives"])
        n1, n2 = rng.choice(vocab["nouns"]), rng.choice(vocab["nouns"])
        verb, when = rng.choice(vocab["verbs"]), rng.choice(vocab["times"])
        out.append(f"The {a1} {n1} {verb} the {a2} {n2} {when}.")
    return out


def assemble(sentences: list[str], needles: list[Needle]) -> str:
    """Filler with each needle inserted at the sentence boundary nearest its depth."""
    slots: dict[int, list[str]] = {}
    for needle in needles:
        slots.setdefault(round(needle.depth * len(sentences)), []).append(needle.sentence)
    parts: list[str] = []
    for i in range(len(sentences) + 1):
        parts.extend(slots.get(i, []))
        if i < len(sentences):
            parts.append(sentences[i])
    # Paragraphs of six sentences read more like a document than one long line.
    return "\n".join(" ".join(parts[i : i + 6]) for i in range(0, len(parts), 6))


def recall_prompt(haystack: str, needle: Needle) -> str:
    """The user message: the haystack first (shared prefix across its questions), then the ask."""
    return f"Read the following notes.\n\n{haystack}\n\nQuestion: {needle.question}"


def recall_chars_jsonl(
    depths: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9),
    haystacks: int = 4,
    seed: int = RECALL_CHARS_SEED,
    length_chars: int = RECALL_CHARS_LENGTH,
) -> bytes:
    """A fixed recall set sized by characters (~1k tokens), for lm-eval without a tokenizer."""
    vocab = load_vocabulary(vocabulary_json())
    items: list[dict[str, str]] = []
    for h in range(haystacks):
        for depth in depths:
            rng = haystack_rng(seed, length_chars, h, depth)
            needles = make_needles(rng, [depth])
            sentences: list[str] = []
            pool = filler_sentences(rng, vocab, length_chars // 20 + 10)
            for sentence in pool:
                if sum(len(s) + 1 for s in sentences) + len(sentence) > length_chars:
                    break
                sentences.append(sentence)
            item = {
                "id": f"recall1k-h{h}-d{round(depth * 100):02d}",
                "context": assemble(sentences, needles),
                "question": needles[0].question,
                "answer": needles[0].symbol,
            }
            items.append(item)
    return jsonl_bytes(items)
