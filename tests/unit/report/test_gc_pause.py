from __future__ import annotations

import gc

from qgate.report.verify.envelope import cyclic_gc_paused


def test_the_collector_is_paused_and_restored() -> None:
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
        with cyclic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause leaves the outer one paused
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # a collector paused before stays paused
    finally:
        gc.enable()


def test_what_the_pause_allocated_is_not_collected_as_young() -> None:
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    try:
        with cyclic_gc_paused():
            kept = [[i] for i in range(100_000)]  # containers the collector tracks
            gc.callbacks.append(seen)
        more = [[i] for i in range(100)]  # left young, these would set off a walk of all
    finally:
        gc.callbacks.remove(seen)
    assert collections == []
    assert gc.is_tracked(kept[0]) and gc.is_tracked(more[0])
