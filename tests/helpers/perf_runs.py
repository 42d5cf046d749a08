"""Perf records for tests: a scenario run of requests with given TTFTs and a steady ITL."""

from __future__ import annotations

from qgate.perf.records import RequestRecord, ScenarioRun

MS = 1_000_000

# The probe items' known answers (perf probes and life probes alike).
PROBE_TRUTH = {"a": "12", "b": "7", "c": "30", "d": "4"}


def probe(item: str, text: str, *, index: int = 0, error: str | None = None) -> RequestRecord:
    """A probe request of `item` that answered `text` (graded again from the text)."""
    return RequestRecord(
        index=index,
        probe_id=item,
        scheduled_ns=0,
        sent_ns=0,
        first_token_ns=1,
        done_ns=2,
        text=text,
        error=error,
        probe_truth=PROBE_TRUTH[item],
        # what the run recorded; the gate re-grades from the text and ignores this
        probe_correct=True,
    )


def probe_run(
    role: str,
    answers: dict[str, str],
    name: str = "chat@c8",
    *,
    block: int = 0,
    expected: dict[str, str] | None = None,
) -> ScenarioRun:
    """One block of scenario `name` whose graded probes answered `answers` (`expected`: the
    side's quality-stage answer by item, `probe_expected`; default none recorded)."""
    reqs = []
    for i, (item, text) in enumerate(answers.items()):
        r = probe(item, text, index=i)
        if expected is not None:
            r = r.model_copy(update={"probe_expected": expected.get(item, PROBE_TRUTH[item])})
        reqs.append(r)
    return ScenarioRun(
        scenario=name,
        role=role,  # type: ignore[arg-type]
        kind="fixed",
        gpus=1,
        duration_ns=1,
        block=block,
        requests=reqs,
    )


def good(**kw: object) -> RequestRecord:
    """A clean streamed request of 3 tokens (5 prompt tokens), with `kw` changed."""
    base: dict[str, object] = dict(
        index=0,
        scheduled_ns=0,
        sent_ns=1,
        first_token_ns=10,
        done_ns=40,
        token_times_ns=[10, 20, 30],
        prompt_tokens=5,
        output_tokens=3,
        requested_output_tokens=3,
    )
    base.update(kw)
    return RequestRecord.model_validate(base)


def run_of(ttfts: list[float], itl: float, n: int = 8) -> ScenarioRun:
    reqs = []
    for i, t in enumerate(ttfts):
        times = [int((t + k * itl) * MS) for k in range(n)]
        reqs.append(
            RequestRecord(
                index=i,
                scheduled_ns=0,
                sent_ns=0,
                first_token_ns=times[0],
                done_ns=times[-1],
                token_times_ns=times,
                prompt_tokens=4,
                output_tokens=n,
            )
        )
    return ScenarioRun(
        scenario="s",
        role="reference",
        kind="fixed",
        gpus=1,
        duration_ns=10_000 * MS,
        requests=reqs,
    )
