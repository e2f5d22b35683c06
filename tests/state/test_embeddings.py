"""Memory with embeddings from an OpenAI-compatible /embeddings endpoint (a local test server whose
vectors put synonyms on one axis, so vector recall finds what full-text search cannot)."""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chainreact.state import OpenAIEmbedder, StateError, open_store

DIMS = 32
CONCEPTS = {w: i for i, group in enumerate([
    ("car", "cars", "automobile", "vehicle"), ("dog", "dogs", "puppy", "hound"),
    ("coffee", "espresso"), ("red", "crimson"), ("train", "trains", "railway")]) for w in group}


def vector(text: str) -> list[float]:
    v = [0.0] * DIMS
    for word in text.lower().replace(".", " ").replace("?", " ").split():
        v[CONCEPTS.get(word, 8 + zlib.crc32(word.encode()) % (DIMS - 8))] += 1.0
    return v


class EmbeddingServer:
    def __init__(self) -> None:
        self.fail = False
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.requests += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if outer.fail or self.path != "/v1/embeddings":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b'{"error": "boom"}')
                    return
                data = [{"index": i, "embedding": vector(t)} for i, t in enumerate(body["input"])]
                out = json.dumps({"data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


async def test_vector_recall_finds_what_text_search_cannot(store_url: str, server: EmbeddingServer) -> None:
    embedder = OpenAIEmbedder(server.url, "concepts")
    async with await open_store(store_url, embedder=embedder) as store:
        car = await store.remember("The user drives a crimson Fiat car")
        await store.remember("The user's puppy is called Biscuit")
        await store.remember("The user drinks espresso", scope="planner")
        assert (await store.info()).counts["memory_vectors"] == 3
        assert await store.recall("automobile", mode="text") == []
        got = await store.recall("which automobile?", k=1, mode="vector")
        assert [m.id for m in got] == [car.id] and got[0].score is not None and got[0].score > 0.3
        dogs = await store.recall("hound", k=3, mode="hybrid")
        assert dogs[0].text == "The user's puppy is called Biscuit"
        # Scope filters apply to vectors too.
        assert [m.text for m in await store.recall("coffee", k=1, mode="vector", scope="planner",
                                                  include_global=False)] == ["The user drinks espresso"]
        assert await store.forget(car.id) == 1
        assert (await store.info()).counts["memory_vectors"] == 2
    await embedder.aclose()


async def test_embed_missing_backfills(store_url: str, server: EmbeddingServer) -> None:
    async with await open_store(store_url) as store:
        for text in ("red vehicle outside", "railway strike tomorrow", "dog walking at noon"):
            await store.remember(text)
        with pytest.raises(StateError, match="needs an embeddings endpoint"):
            await store.recall("car", mode="vector")
    embedder = OpenAIEmbedder(server.url, "concepts")
    async with await open_store(store_url, embedder=embedder) as store:
        assert await store.embed_missing(batch=2) == 3
        assert await store.embed_missing() == 0
        got = await store.recall("trains", k=1, mode="vector")
        assert [m.text for m in got] == ["railway strike tomorrow"]
    await embedder.aclose()


async def test_failing_endpoint_stores_nothing(store_url: str, server: EmbeddingServer) -> None:
    server.fail = True
    embedder = OpenAIEmbedder(server.url, "concepts")
    async with await open_store(store_url, embedder=embedder) as store:
        with pytest.raises(StateError, match=r"embeddings endpoint http://127\.0\.0\.1:\d+/v1/embeddings "
                                             r"\(model concepts\): HTTP 500"):
            await store.remember("lost?")
        assert await store.memories() == []
        with pytest.raises(StateError, match="mode 'semantic'"):
            await store.recall("x", mode="semantic")
    await embedder.aclose()


def test_embedder_from_config() -> None:
    e = OpenAIEmbedder.from_config({"url": "http://h/v1/", "model": "m", "apiKey": "k", "dimensions": 8})
    assert (e.url, e.model, e.dimensions) == ("http://h/v1", "m", 8)
    with pytest.raises(StateError, match=r"embeddings\.model: required"):
        OpenAIEmbedder.from_config({"url": "http://h"})
