"""A response body read with a cap on its decoded size: the one body reader of both HTTP paths
(the Runloop http tools and the web built-ins).

The body is read raw and decoded here (gzip, deflate in both wire forms, identity) with the
output of every step bounded, so at most ``max_bytes + 1`` decoded bytes are ever produced: a
gzip bomb costs at most the cap. Requests announce what can be decoded with
:data:`ACCEPT_ENCODING`; a body in another Content-Encoding, or one that does not decode, is a
:class:`~mcp_toolbridge.errors.ExecTransportError` like every other failure of the exchange
(see :mod:`.http_errors`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import httpx2

from mcp_toolbridge.executors.http_errors import Scrub, as_is, translated

ACCEPT_ENCODING = "gzip, deflate"
"""The Content-Encodings :func:`read_body` decodes (identity aside)."""


class _Decoder:
    """Content-Encoding decoding with every step's output bounded (gzip bombs stop at the cap).
    Failures are raised as httpx2's ``DecodingError``, translated with the rest."""

    def __init__(self, encoding: str) -> None:
        self.name = encoding.strip().lower()
        if self.name in ("", "identity"):
            self.wbits: int | None = None
        elif self.name in ("gzip", "x-gzip"):
            self.wbits = 31
        elif self.name == "deflate":
            self.wbits = 15
        else:
            raise httpx2.DecodingError(
                f"the body came with Content-Encoding {encoding!r}, which cannot be decoded "
                "(supported: gzip, deflate, identity)"
            )
        self._z = zlib.decompressobj(self.wbits) if self.wbits is not None else None
        self._started = False

    def decode(self, data: bytes, budget: int) -> bytes:
        """At most ``budget`` decoded bytes of ``data`` (what is past the budget is dropped:
        the caller stops reading once the budget is spent)."""
        if self._z is None or self.wbits is None:
            return data[:budget]
        if self._z.eof:
            return b""  # bytes after the end of the compressed stream are ignored
        out = bytearray()
        pending = data
        while pending and len(out) < budget:
            try:
                out += self._z.decompress(pending, budget - len(out))
            except zlib.error as exc:
                if self.wbits == 15 and not self._started:
                    self.wbits = -15  # "deflate" sent as a raw deflate stream
                    self._z = zlib.decompressobj(self.wbits)
                    continue
                raise httpx2.DecodingError(f"bad {self.name} data: {exc}") from exc
            self._started = True
            if self._z.eof:
                pending = self._z.unused_data
                if self.wbits != 31 or not pending.startswith(b"\x1f\x8b"):
                    break  # the stream ended; trailing bytes that are not a gzip member
                self._z = zlib.decompressobj(self.wbits)  # another gzip member follows
            else:
                pending = self._z.unconsumed_tail
        return bytes(out)


async def read_body(
    response: httpx2.Response,
    max_bytes: int,
    *,
    host: str,
    tool: str = "",
    scrub: Scrub = as_is,
    on_chunk: Callable[[int], None] | None = None,
) -> tuple[bytes, bool]:
    """The decoded body, at most ``max_bytes`` of it, and whether there was more (reading
    stops there). Failures are raised as call errors naming ``host``. ``on_chunk`` is told
    the size of each decoded piece as it arrives (progress reports count bytes with it)."""
    if response.is_stream_consumed:
        # Read already by the transport (httpx2's MockTransport reads every response), so
        # httpx2 has decoded it.
        content = response.content
        return content[:max_bytes], len(content) > max_bytes
    parts: list[bytes] = []
    size = 0
    with translated(host, tool=tool, scrub=scrub):
        decoder = _Decoder(response.headers.get("content-encoding", ""))
        async for raw in response.aiter_raw():  # as it arrives, not held for a chunk size
            piece = decoder.decode(raw, max_bytes + 1 - size)
            parts.append(piece)
            size += len(piece)
            if on_chunk is not None:
                on_chunk(len(piece))
            if size > max_bytes:
                return b"".join(parts)[:max_bytes], True
    return b"".join(parts), False
