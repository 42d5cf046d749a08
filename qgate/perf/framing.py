"""HTTP/1.1 response framing decoded after a scenario, each body piece with its read time.

The client (qgate.perf.rawhttp) only appends (perf_counter_ns, bytes) while
a scenario runs; `RawResponse.decode` (qgate.perf.client) calls these once
the scenario is over. Its own module so that neither of the two imports the other.
"""

from __future__ import annotations

__all__ = ["body_pieces", "dechunk"]


def body_pieces(
    reads: list[tuple[int, bytes]], head_end: int, chunked: bool
) -> tuple[list[tuple[int, bytes]], bool]:
    """The body of a response as read (head included), cut and decoded: (pieces, complete)."""
    out: list[tuple[int, bytes]] = []
    pos = 0
    for t, d in reads:
        start = max(head_end - pos, 0)
        if start < len(d):
            out.append((t, d[start:]))
        pos += len(d)
    return dechunk(out) if chunked else (out, True)


def dechunk(reads: list[tuple[int, bytes]]) -> tuple[list[tuple[int, bytes]], bool]:
    """Decode chunked transfer encoding, keeping each piece's read time; (pieces, complete)."""
    out: list[tuple[int, bytes]] = []
    state = "size"
    line = b""
    remaining = 0
    for t, d in reads:
        i = 0
        piece = bytearray()
        n = len(d)
        while i < n:
            if state == "size":
                j = d.find(b"\n", i)
                if j < 0:
                    line += d[i:]
                    break
                line += d[i:j]
                i = j + 1
                size_txt = line.split(b";", 1)[0].strip()
                line = b""
                try:
                    remaining = int(size_txt, 16)
                except ValueError:
                    return out, False
                if remaining == 0:
                    if piece:
                        out.append((t, bytes(piece)))
                    return out, True
                state = "data"
            elif state == "data":
                take = min(remaining, n - i)
                piece += d[i : i + take]
                i += take
                remaining -= take
                if remaining == 0:
                    state = "crlf"
                    remaining = 2
            else:
                take = min(remaining, n - i)
                i += take
                remaining -= take
                if remaining == 0:
                    state = "size"
        if piece:
            out.append((t, bytes(piece)))
    return out, False
