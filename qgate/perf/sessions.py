"""Graded agent sessions: generated multi-turn chats whose turns ask what earlier turns said.

    turns = session_turns(seed=0, session=3, turns=8)
    turns[2].truth        # the code planted in turns[0]
    grade_turn(text, turns[2].truth)

A session is a chat over one system prompt (shared by every session: a prefix the cache
serves again) whose history grows turn by turn. Turns come in fours:

    plant   a code for a box and a number added to a running total ("reply OK")
    plant   another box's code and another number
    code    the code of the box planted two turns back        -> graded (exact code)
    total   the running total so far                          -> graded (exact number)

so each graded turn is answerable only from earlier turns (a symbol two turns back, a total
over every plant). Pure functions of (seed, session, turn): verify re-derives each recorded
turn's question and truth from the profile. SESSIONS_VERSION changes with the texts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from qgate.profile import MultiTurnScenario
from qgate.quality.extract import answer_matches, extract_number, extract_symbol

__all__ = [
    "SESSIONS_VERSION",
    "SYSTEM",
    "TURN_MAX_TOKENS",
    "SessionTurn",
    "TurnKind",
    "grade_turn",
    "graded_sessions",
    "session_turns",
    "turn_answer",
    "turn_id",
    "turn_kind",
]

SESSIONS_VERSION = 1
TURN_MAX_TOKENS = 24
"""Generation budget of every session turn (a code, a number or 'OK')."""
SYSTEM = (
    "You are an assistant that keeps track of box codes and a running total across this "
    "conversation. When asked for a code or the total, answer with it only."
)
TurnKind = Literal["plant", "code", "total"]
_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"
_KINDS: tuple[TurnKind, ...] = ("plant", "plant", "code", "total")


def graded_sessions(s: MultiTurnScenario) -> int:
    """Graded sessions a run of `s` asks (0: none)."""
    if s.graded is None:
        return 0
    return s.graded.sessions or s.conversations


@dataclass(frozen=True)
class SessionTurn:
    """One user turn of a graded session."""

    id: str
    """'s<session>.t<turn>' (0-based), the turn's item id in both sides' records."""
    index: int
    kind: TurnKind
    message: str
    truth: str | None
    """The answer that grades it (None: a planting turn, not graded)."""


def turn_id(session: int, turn: int) -> str:
    return f"s{session}.t{turn}"


def turn_kind(turn: int) -> TurnKind:
    """What turn `turn` (0-based) of every session does."""
    return _KINDS[turn % 4]


def session_turns(seed: int, session: int, turns: int) -> list[SessionTurn]:
    """The user turns of session `session`: codes and numbers drawn from (seed, session)."""
    rng = random.Random(f"qgate-sessions:v{SESSIONS_VERSION}:{seed}:{session}")
    boxes = rng.sample(range(10, 100), (turns + 1) // 2 + 1)
    codes: dict[int, tuple[int, str]] = {}
    total = 0
    out: list[SessionTurn] = []
    for t in range(turns):
        kind = turn_kind(t)
        if kind == "plant":
            box = boxes[len(codes)]
            code = f"{rng.choice(_LETTERS)}{rng.choice(_LETTERS)}-{rng.randint(1000, 9999)}"
            add = rng.randint(2, 19)
            total += add
            start = "Start a running total at" if t == 0 else "Add"
            tail = "." if t == 0 else " to the running total."
            message = f"The code for box {box} is {code}. {start} {add}{tail} Reply with OK."
            codes[t] = (box, code)
            out.append(SessionTurn(turn_id(session, t), t, kind, message, None))
        elif kind == "code":
            box, code = codes[t - 2]
            message = f"What is the code for box {box}? Answer with the code only."
            out.append(SessionTurn(turn_id(session, t), t, kind, message, code))
        else:
            message = "What is the running total now? Answer with the number only."
            out.append(SessionTurn(turn_id(session, t), t, kind, message, str(total)))
    return out


def turn_answer(text: str, truth: str) -> str | None:
    """The answer a graded turn's text gives, in its truth's kind: the first code in it for a
    code, its final number (the math suite's extractor) for a total; None: none."""
    if "-" in truth:
        return extract_symbol(text)
    return extract_number(text)


def grade_turn(text: str, truth: str) -> bool:
    """Whether an answer gives `truth` (`turn_answer`; no code or number: wrong)."""
    if "-" in truth:
        return turn_answer(text, truth) == truth
    return answer_matches(turn_answer(text, truth), truth)
