from __future__ import annotations

from helpers.perf_runs import good

from qgate.perf.checks import check_request


def test_clean_stream_passes() -> None:
    assert check_request(good()) == []


def test_each_problem_is_named() -> None:
    assert any(
        "requested" in p for p in check_request(good(output_tokens=2, token_times_ns=[10, 20]))
    )
    assert any(
        "usage says" in p for p in check_request(good(output_tokens=4, chunk_tokens=[1, 1, 1]))
    )
    assert any(
        "usage says" in p
        for p in check_request(good(output_tokens=2, requested_output_tokens=None))
    )
    assert any("no usage" in p for p in check_request(good(output_tokens=None)))
    assert any(
        "empty" in p
        for p in check_request(good(first_token_ns=None, token_times_ns=[], output_tokens=0))
    )
    assert any("monotonic" in p for p in check_request(good(token_times_ns=[10, 30, 20])))


def test_errors_are_not_double_counted_as_mismatches() -> None:
    assert check_request(good(error="timeout", token_times_ns=[], first_token_ns=None)) == []


def test_coalesced_chunks_are_fine_when_token_ids_add_up() -> None:
    r = good(output_tokens=4, requested_output_tokens=4, chunk_tokens=[1, 2, 1])
    assert check_request(r) == []


def test_usage_claiming_the_requested_count_over_fewer_chunks_fails_without_ids() -> None:
    # Issue 13: usage says 4 (as requested) but only 3 content chunks came and no token
    # ids tell a merged chunk from a lost token: counted in chunks, it is caught.
    problems = check_request(good(output_tokens=4, requested_output_tokens=4))
    assert any("only 3 content chunks" in p for p in problems)
    # With token ids that add up, merged chunks stay fine (previous test); without a forced
    # length there is nothing to hold the count against.
    assert check_request(good(output_tokens=4, requested_output_tokens=None)) == []
