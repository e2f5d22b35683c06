"""Fault cases of issue 23 for POST /api/v1/login: password guessing, a flood of wrong logins, unknown names,
oversized and trickled bodies. Each failed before its fix (no limit at all; 100 concurrent wrong logins held
/healthz for 6.8 s; an unknown name cost a different hash than a wrong password; 'expected a JSON body')."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from chainreact.server.users import User, UserStore, hash_password
from tests.server.ops_support import serve
from tests.server.runs_helpers import agent_doc


def users_file(tmp_path: Path, **hashes: str) -> UserStore:
    path = tmp_path / "users.json"
    given = hashes or {"ann": hash_password("correct horse")}
    path.write_text(json.dumps({"users": [{"name": n, "password": h} for n, h in given.items()]}))
    store = UserStore.load(path)
    assert store is not None
    return store


def login(url: str, user: str, password: str = "wrong", address: str | None = None) -> httpx.Response:
    # The server trusts X-Forwarded-For from loopback (uvicorn's default): each address a client of its own.
    headers = {"X-Forwarded-For": address} if address else None
    return httpx.post(url + "/api/v1/login", json={"user": user, "password": password}, headers=headers,
                      timeout=60)


def test_logins_are_limited_per_client_address_and_per_user_name(fake_llm: Any, tmp_path: Path) -> None:
    docs = {"helper.json": agent_doc(fake_llm([]).url)}
    with serve(tmp_path / "s", docs, users=users_file(tmp_path), login_rate_limit="3/minute") as srv:
        # one address, any names: the fourth attempt is refused before its password is checked
        codes = [login(srv.url, name, address="10.0.0.1").status_code for name in ("ann", "bob", "cy", "dee")]
        assert codes == [401, 401, 401, 429]
        refused = login(srv.url, "eve", address="10.0.0.1")
        assert refused.json()["error"]["code"] == "rate_limit_exceeded"
        assert int(refused.headers["retry-after"]) >= 1
        # one name from many addresses: the guesses at "ann" stop too, whoever sends them
        codes = [login(srv.url, "ann", address=f"10.0.1.{i}").status_code for i in range(3)]
        assert codes == [401, 401, 429]  # ann's first attempt above counted
        assert login(srv.url, "ann", "correct horse", address="10.0.2.1").status_code == 429
        # the limits are per name and per address: another name from a fresh address still logs in
        assert login(srv.url, "bob", address="10.0.2.2").status_code == 401


def test_the_login_limit_is_on_by_default_and_can_be_lifted(fake_llm: Any, tmp_path: Path) -> None:
    docs = {"helper.json": agent_doc(fake_llm([]).url)}
    users = users_file(tmp_path, ann="pbkdf2_sha256$1$" + "A" * 22 + "$" + "A" * 43)  # a cheap hash
    with serve(tmp_path / "a", docs, users=users) as srv:  # no rate limit asked for anywhere
        codes = [login(srv.url, "ann").status_code for _ in range(11)]
        assert codes == [401] * 10 + [429]
    with serve(tmp_path / "b", docs, users=users, login_rate_limit="unlimited") as srv:
        assert {login(srv.url, "ann").status_code for _ in range(12)} == {401}


def test_wrong_logins_do_not_hold_the_event_loop(fake_llm: Any, tmp_path: Path) -> None:
    # Each check is a real scrypt hash (tens to hundreds of ms). Run on the event loop, the checks of the
    # logins already in the server ran one after another before /healthz got its turn; run off the loop,
    # /healthz answers within a fraction of one check. One check is timed here, on this machine, as the
    # yardstick (6 logins and a fixed 0.1 s wait once let a fast machine finish a check first).
    docs = {"helper.json": agent_doc(fake_llm([]).url)}
    users = users_file(tmp_path)
    one_check = min(timed(lambda: users.check("ann", "wrong")) for _ in range(3))
    with serve(tmp_path / "s", docs, users=users, login_rate_limit="unlimited") as srv, \
            httpx.Client(timeout=60) as probe:
        done: list[float] = []
        n = 24
        start = threading.Barrier(n + 1)

        def one() -> None:
            # Clients and connections made before the start: after it, this process only waits.
            with httpx.Client(timeout=60) as client:
                assert client.get(srv.url + "/healthz").status_code == 200
                start.wait()
                wrong = client.post(srv.url + "/api/v1/login", json={"user": "ann", "password": "wrong"})
                assert wrong.status_code == 401
            done.append(time.monotonic())

        threads = [threading.Thread(target=one) for _ in range(n)]
        for t in threads:
            t.start()
        assert probe.get(srv.url + "/healthz").status_code == 200
        start.wait()
        time.sleep(0.05)  # the logins are in the server now
        asked = time.monotonic()
        assert probe.get(srv.url + "/healthz").status_code == 200
        healthy = time.monotonic()
        for t in threads:
            t.join(60)
        assert len(done) == n
        assert max(done) > asked, "every check had ended before /healthz was asked: nothing was measured"
        took = healthy - asked
        assert took < 3 * one_check, (f"/healthz took {took * 1000:.0f} ms while wrong logins were checked; "
                                      f"one check takes {one_check * 1000:.0f} ms: the checks held the loop")


def timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def test_an_unknown_user_costs_the_same_hash_as_a_wrong_password(monkeypatch: pytest.MonkeyPatch) -> None:
    # The work of a check, counted (load-independent): the same KDF with the same cost parameters.
    calls: list[tuple[str, Any]] = []
    scrypt, pbkdf2 = hashlib.scrypt, hashlib.pbkdf2_hmac

    def counted_scrypt(password: bytes, **kw: Any) -> bytes:
        calls.append(("scrypt", (kw["n"], kw["r"], kw["p"], kw.get("dklen"))))
        return scrypt(password, **kw)

    def counted_pbkdf2(name: str, password: bytes, salt: bytes, iterations: int, dklen: Any = None) -> bytes:
        calls.append(("pbkdf2", (name, iterations, dklen)))
        return pbkdf2(name, password, salt, iterations, dklen)

    monkeypatch.setattr(hashlib, "scrypt", counted_scrypt)
    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counted_pbkdf2)
    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()  # noqa: E731
    salt = secrets.token_bytes(16)
    stored = {
        "pbkdf2": f"pbkdf2_sha256$2000${b64(salt)}${b64(pbkdf2('sha256', b'pw', salt, 2000))}",
        "scrypt": f"scrypt$1024$4$1${b64(salt)}${b64(scrypt(b'pw', salt=salt, n=1024, r=4, p=1, dklen=32))}",
    }
    for kind, password in stored.items():
        users = UserStore([User("ann", password)])
        calls.clear()
        assert users.check("ann", "wrong") is None
        wrong = list(calls)
        calls.clear()
        assert users.check("nobody", "wrong") is None
        assert calls == wrong and len(wrong) == 1, (kind, wrong, calls)


def test_an_oversized_or_trickled_login_body_gets_its_own_error(fake_llm: Any, tmp_path: Path) -> None:
    docs = {"helper.json": agent_doc(fake_llm([]).url)}
    with serve(tmp_path / "s", docs, users=users_file(tmp_path), body_timeout=0.5) as srv:
        big = httpx.post(srv.url + "/api/v1/login", content=b'{"user": "' + b"a" * 100_000 + b'"}',
                         timeout=30)
        assert big.status_code == 413 and big.json()["error"]["code"] == "body_too_large", big.text

        def trickle() -> Any:
            yield b'{"user": '
            time.sleep(1.5)
            yield b'"ann", "password": "x"}'

        slow = httpx.post(srv.url + "/api/v1/login", content=trickle(), timeout=30)
        assert slow.status_code == 408, slow.text
