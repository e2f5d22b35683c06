"""Response bodies decoded under a size cap: a gzip bomb stops at the cap instead of filling memory.

httpx's own decoders inflate a whole network chunk at once (one 64 KB read of a bomb becomes ~64 MB), so
the model client asks only for gzip/deflate (`ACCEPT_ENCODING`) and inflates them here with zlib's
`max_length`: at most the cap (plus one byte) is ever produced. Any other encoding falls back to
httpx's decoder and the same cap counted per chunk.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from chainreact.errors import MalformedResponseError

ACCEPT_ENCODING = "gzip, deflate"
_ZLIB = frozenset({"gzip", "x-gzip", "deflate"})
MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # decoded; far above any chat completion, far below an OOM


def too_large(url: str, limit: int) -> MalformedResponseError:
    return MalformedResponseError(
        f"{url}/chat/completions: the response exceeds {limit} bytes after decompression; refused "
        "(ModelClient max_response_bytes)", endpoint=url, retryable=True,
    )


class BoundedDecoder:
    """Decodes one body (identity, gzip or deflate) and raises once more than `limit` bytes came out.

    The errors are the model client's unless `too_big` / `bad` make others (the restApiCall node)."""

    __slots__ = ("_bad", "_first", "_limit", "_too_big", "_total", "_url", "_z")

    def __init__(self, encoding: str | None, limit: int, url: str, *,
                 too_big: Callable[[], Exception] | None = None, bad: Callable[[], Exception] | None = None):
        self._limit = limit
        self._total = 0
        self._url = url
        self._first = True
        self._too_big = too_big or (lambda: too_large(url, limit))
        self._bad = bad
        enc = (encoding or "").strip().lower()
        # Identity, or an encoding httpx decodes for us (the caller then feeds decoded bytes): count only.
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 32) if enc in _ZLIB else None  # gzip/zlib header

    @staticmethod
    def supports(encoding: str | None) -> bool:
        """Whether raw bytes of this encoding can be fed (else feed httpx-decoded bytes)."""
        enc = (encoding or "").strip().lower()
        return enc in _ZLIB or enc in ("", "identity")

    def feed(self, data: bytes) -> bytes:
        z = self._z
        if z is None:
            self._total += len(data)
            if self._total > self._limit:
                raise self._too_big()
            return data
        room = self._limit - self._total
        try:
            out = z.decompress(data, room + 1)
        except zlib.error:
            if not self._first:
                raise self._undecodable() from None
            # "deflate" without the zlib header (raw deflate), as some servers send it.
            self._z = z = zlib.decompressobj(-zlib.MAX_WBITS)
            try:
                out = z.decompress(data, room + 1)
            except zlib.error:
                raise self._undecodable() from None
        self._first = False
        if len(out) > room or z.unconsumed_tail:
            raise self._too_big()
        self._total += len(out)
        return out

    def _undecodable(self) -> Exception:
        if self._bad is not None:
            return self._bad()
        return MalformedResponseError(f"{self._url}/chat/completions: undecodable compressed response body",
                                      endpoint=self._url, retryable=True)
