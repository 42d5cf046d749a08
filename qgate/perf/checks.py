"""Verification of every measured stream, so throughput is never built on short answers.

`check_request` is pure and is applied by the runner (results stored in
`RequestRecord.check_failures`) and again by `qgate verify`; the scenario's error and
mismatch gates over them are qgate/gates/scenario.py.
"""

from __future__ import annotations

from qgate.perf.records import RequestRecord


def check_request(r: RequestRecord) -> list[str]:
    """Problems with one completed response (an errored request is counted as an error)."""
    if r.error is not None:
        return []
    problems: list[str] = []
    chunks = len(r.token_times_ns)
    if chunks == 0 or r.first_token_ns is None:
        problems.append("empty response: no content chunk")
    streamed = sum(r.chunk_tokens) if r.chunk_tokens is not None else None
    if r.chunk_tokens is not None and len(r.chunk_tokens) != chunks:
        problems.append("chunk_tokens and token_times_ns differ in length")
    if r.output_tokens is None:
        problems.append("no usage in the stream")
    elif streamed is not None and r.output_tokens != streamed:
        problems.append(f"usage says {r.output_tokens} output tokens, stream had {streamed}")
    elif streamed is None and r.output_tokens < chunks:
        # Without token ids a chunk may hold several tokens, but never less than one.
        problems.append(f"usage says {r.output_tokens} output tokens, stream had {chunks} chunks")
    elif streamed is None and r.requested_output_tokens is not None and chunks < r.output_tokens:
        # A forced length without token ids: usage may claim the requested count while
        # tokens went missing from the stream. Counted in content chunks, which a server
        # that merges tokens into one chunk would also fail (send token ids to tell).
        problems.append(
            f"usage says {r.output_tokens} output tokens, stream had only {chunks} content "
            "chunks and no token ids"
        )
    if r.requested_output_tokens is not None:
        got = r.output_tokens if r.output_tokens is not None else (streamed or chunks)
        if got != r.requested_output_tokens:
            problems.append(f"output tokens {got} != requested {r.requested_output_tokens}")
    times = [r.scheduled_ns, r.sent_ns]
    if r.first_token_ns is not None:
        times.append(r.first_token_ns)
    times += r.token_times_ns
    times.append(r.done_ns)
    # some time earlier than the one before it; compared in C, not pair by pair in Python
    # (a record holds every token's time, and verify checks every record)
    if times != sorted(times):
        problems.append("timestamps are not monotonic")
    if r.token_times_ns and r.first_token_ns != r.token_times_ns[0]:
        problems.append("first_token_ns differs from the first chunk time")
    return problems


def with_checks(r: RequestRecord) -> RequestRecord:
    """The record with `check_failures` filled in."""
    return r.model_copy(update={"check_failures": check_request(r)})
