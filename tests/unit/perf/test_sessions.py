"""Graded agent sessions (qgate/perf/sessions.py): generated turns and their grading."""

from __future__ import annotations

import re

from qgate.perf.sessions import grade_turn, session_turns, turn_answer, turn_kind


def test_a_session_is_the_same_for_its_seed_and_differs_across_sessions_and_seeds() -> None:
    a = session_turns(0, 1, 8)
    assert a == session_turns(0, 1, 8)
    assert [t.message for t in a] != [t.message for t in session_turns(0, 2, 8)]
    assert [t.message for t in a] != [t.message for t in session_turns(1, 1, 8)]
    assert [t.id for t in a] == [f"s1.t{i}" for i in range(8)]
    assert [t.kind for t in a] == ["plant", "plant", "code", "total"] * 2


def test_each_graded_turn_is_answerable_only_from_earlier_turns() -> None:
    turns = session_turns(7, 0, 8)
    planted: dict[str, str] = {}
    total = 0
    for t in turns:
        if t.kind == "plant":
            box, code = re.search(r"box (\d+) is ([A-Z]{2}-\d{4})", t.message).groups()  # type: ignore[union-attr]
            planted[box] = code
            total += int(re.search(r"(?:at|Add) (\d+)", t.message).group(1))  # type: ignore[union-attr]
            assert t.truth is None
        elif t.kind == "code":
            box = re.search(r"box (\d+)", t.message).group(1)  # type: ignore[union-attr]
            # the box planted two turns back, named nowhere in the question's own text
            assert box in turns[t.index - 2].message
            assert t.truth == planted[box] and t.truth not in t.message
        else:
            assert t.truth == str(total) and t.truth not in t.message
    assert len(set(planted)) == 4  # every plant names another box


def test_turn_kinds_repeat_every_four_turns() -> None:
    assert [turn_kind(i) for i in range(9)] == [
        "plant",
        "plant",
        "code",
        "total",
        "plant",
        "plant",
        "code",
        "total",
        "plant",
    ]


def test_grading_reads_the_first_code_or_the_final_number() -> None:
    assert grade_turn("The code is KX-1234.", "KX-1234")
    assert not grade_turn("KX-1243 or KX-1234", "KX-1234")  # the first code counts
    assert not grade_turn("kx-1234", "KX-1234")
    assert grade_turn("The running total is 42.", "42")
    assert not grade_turn("OK", "42")
    assert turn_answer("about 41", "42") == "41"
    assert turn_answer("nothing", "KX-1234") is None
