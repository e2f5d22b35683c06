"""Operating a served agent: rate limits, the access log, /metrics and a watched folder.

The same as `chainreact serve FOLDER --keys keys.yaml --access-log` (the CLI watches folders by default),
here in-process against chainreact's scripted model server so it runs offline and in CI.
"""

import hashlib
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import httpx

from chainreact.server import Catalog, KeyStore, create_app, serve_in_background
from chainreact.testing import FakeLLM


def say(*parts: object) -> None:
    """print, as one write: the server's access log writes to stdout from its own thread, and print's
    separate writes of each part could be split by a log line."""
    sys.stdout.write(" ".join(map(str, parts)) + "\n")

def agent(url: str, prompt: str) -> dict:
    return {"id": "helper", "configuration": {"url": url, "key": "unused", "model": "fake-model",
                                              "systemPrompt": prompt}}


def main() -> None:
    with FakeLLM([{"text": "Paris."}] * 10) as llm:
        run(llm)


def run(llm: FakeLLM) -> None:
    folder = Path(tempfile.mkdtemp()) / "agents"
    folder.mkdir()
    (folder / "helper.json").write_text(json.dumps(agent(llm.url, "You help.")))
    keys = folder.parent / "keys.json"
    keys.write_text(json.dumps({"keys": [
        {"name": "demo", "sha256": hashlib.sha256(b"sk-demo").hexdigest(), "permissions": ["read", "execute"],
         "rateLimit": "2/minute"},
        {"name": "prometheus", "sha256": hashlib.sha256(b"sk-scrape").hexdigest(), "permissions": ["read"],
         "rateLimit": "unlimited"}]}))

    access = logging.getLogger("chainreact.server.access")  # one JSON line per request, no secrets
    access.addHandler(logging.StreamHandler(sys.stdout))
    access.setLevel(logging.INFO)
    app = create_app(Catalog.load([folder]), keys=KeyStore.load(keys), access_log=True, watch=[folder],
                     watch_debounce_ms=50)
    with serve_in_background(app) as url:
        auth = {"Authorization": "Bearer sk-demo"}
        ask = {"model": "helper", "messages": [{"role": "user", "content": "Capital of France?"}]}
        r = httpx.post(url + "/v1/chat/completions", json=ask, headers=auth, timeout=60)
        say("answer:", r.json()["choices"][0]["message"]["content"])
        httpx.get(url + "/v1/models", headers=auth)
        r = httpx.get(url + "/v1/models", headers=auth)  # the third request within a minute
        # 2/minute: a token every 30 s, so the wait is at most 30 s (29 if a second went by)
        wait_s = int(r.headers["retry-after"])
        say(f"rate limited: {r.status_code}, Retry-After: {wait_s} s (<= 30: {0 < wait_s <= 30}), "
              f"{r.json()['error']['code']}")

        # the watched folder: a broken edit is reported, the old version keeps serving
        watcher = app.state.ctx.watcher
        while not watcher.ready:
            time.sleep(0.05)
        (folder / "helper.json").write_text('{"id": "helper", ')
        deadline = time.monotonic() + 15
        while not (problems := httpx.get(url + "/readyz").json()["problems"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        say("readyz problem:", problems[0].split(": ", 1)[0].rsplit("/", 1)[-1], "->",
              "keeps serving" if "keeps serving" in problems[0] else problems[0])

        metrics = httpx.get(url + "/metrics", headers={"Authorization": "Bearer sk-scrape"}).text
        for line in metrics.splitlines():
            if line.startswith(("chainreact_runs_total", "chainreact_model_calls_total",
                                "chainreact_http_requests_total{method=\"GET\",route=\"/v1/models\"")):
                say(line)


if __name__ == "__main__":
    main()
