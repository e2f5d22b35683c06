"""Optional embeddings for long-term memory: any OpenAI-compatible `/embeddings` endpoint.

    store = await open_store(url, embedder=OpenAIEmbedder("http://127.0.0.1:8080/v1", "nomic-embed"))
    await store.remember("The user's car is a red Fiat")         # stored with its vector
    await store.recall("automobile colour", mode="vector")       # cosine similarity
    await store.recall("automobile colour", mode="hybrid")       # full-text and vector, rank-fused

Vectors are stored as float32 bytes beside the memory (same transaction) with the model's name, and
compared in Python (numpy when installed): fine for the thousands of memories an agent keeps, not for
millions. Memories remembered before an embedder was set get vectors with `store.embed_missing()`.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from typing import Any, Protocol

from .errors import StateError


class Embedder(Protocol):
    model: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class OpenAIEmbedder:
    """POST {url}/embeddings with {model, input}; configured like a model endpoint (url, model, apiKey)."""

    def __init__(self, url: str, model: str, *, api_key: str | None = None, timeout: float = 30.0,
                 dimensions: int | None = None):
        self.url = url.rstrip("/")
        self.model = model
        self.dimensions = dimensions
        self._api_key = api_key
        self._timeout = timeout
        self._client: Any = None

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> OpenAIEmbedder:
        """From a document's endpoint-like object: {url, model, apiKey?, timeout?, dimensions?}."""
        for key in ("url", "model"):
            if not isinstance(cfg.get(key), str) or not cfg[key]:
                raise StateError(f"embeddings.{key}: required (a non-empty string)")
        return cls(cfg["url"], cfg["model"], api_key=cfg.get("apiKey") or cfg.get("api_key"),
                   timeout=float(cfg.get("timeout", 30.0)), dimensions=cfg.get("dimensions"))

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout)
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        where = f"embeddings endpoint {self.url}/embeddings (model {self.model})"
        try:
            r = await self._client.post(f"{self.url}/embeddings", json=body, headers=headers)
        except httpx.HTTPError as e:
            raise StateError(f"{where}: {type(e).__name__}: {e}") from None
        if r.status_code != 200:
            raise StateError(f"{where}: HTTP {r.status_code}: {r.text[:300]}")
        try:
            data = sorted(r.json()["data"], key=lambda d: d.get("index", 0))
            vectors = [[float(x) for x in d["embedding"]] for d in data]
        except (ValueError, KeyError, TypeError) as e:
            raise StateError(f"{where}: not an embeddings response ({type(e).__name__}: {e})") from None
        if len(vectors) != len(texts):
            raise StateError(f"{where}: asked for {len(texts)} vectors, got {len(vectors)}")
        return vectors

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def pack(vector: Sequence[float]) -> bytes:
    """A unit-length float32 vector as bytes (normalised once, so similarity is a dot product)."""
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return array("f", (x / norm for x in vector)).tobytes()


def rank(query: Sequence[float], candidates: list[tuple[Any, bytes]], k: int) -> list[tuple[Any, float]]:
    """The k candidates most similar to `query` (cosine), best first, as (item, similarity)."""
    if not candidates:
        return []
    q = array("f")
    q.frombytes(pack(query))
    try:
        import numpy as np

        mat = np.frombuffer(b"".join(blob for _, blob in candidates), dtype=np.float32)
        if mat.size != len(candidates) * len(q):
            raise StateError("stored vectors have another dimension than the query's: embed_missing() "
                             "after changing the embeddings model")
        scores = mat.reshape(len(candidates), len(q)) @ np.frombuffer(q.tobytes(), dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(candidates[i][0], float(scores[i])) for i in order]
    except ImportError:
        pass
    scored = []
    for item, blob in candidates:
        v = array("f")
        v.frombytes(blob)
        if len(v) != len(q):
            raise StateError("stored vectors have another dimension than the query's: embed_missing() "
                             "after changing the embeddings model")
        scored.append((item, sum(a * b for a, b in zip(q, v, strict=True))))
    scored.sort(key=lambda t: -t[1])
    return scored[:k]


def fuse(*rankings: list[Any], k: int, key: Any = id, c: int = 60) -> list[tuple[Any, float]]:
    """Reciprocal rank fusion: each list contributes 1 / (c + rank) per item; best first."""
    scores: dict[Any, float] = {}
    items: dict[Any, Any] = {}
    for ranking in rankings:
        for r, item in enumerate(ranking):
            kk = key(item)
            items.setdefault(kk, item)
            scores[kk] = scores.get(kk, 0.0) + 1.0 / (c + r + 1)
    best = sorted(scores, key=lambda kk: -scores[kk])[:k]
    return [(items[kk], scores[kk]) for kk in best]
