from __future__ import annotations

import pytest

from qgate.perf.rawhttp import RawClient, dechunk

BODY = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"


@pytest.mark.parametrize("cut", [1, 3, 5, 8, 11, 16, len(BODY) - 2])
def test_dechunk_keeps_the_time_of_the_read_each_byte_came_in(cut: int) -> None:
    pieces, done = dechunk([(1, BODY[:cut]), (2, BODY[cut:])])
    assert done
    assert b"".join(d for _, d in pieces) == b"hello world"
    first_time = 1 if cut > 3 else 2  # 'h' is byte 3 of the encoding
    assert pieces[0][0] == first_time


def test_incomplete_chunked_body_is_not_done() -> None:
    pieces, done = dechunk([(1, BODY[:-5])])
    assert not done and b"".join(d for _, d in pieces) == b"hello world"


def test_bad_chunk_size_is_not_done() -> None:
    assert dechunk([(1, b"zz\r\nhello\r\n")]) == ([], False)


def test_only_plain_http_is_supported() -> None:
    with pytest.raises(ValueError):
        RawClient("https://example.com/v1", 1.0)
