"""Redaction of recorded I/O: known secrets anywhere, key-shaped strings, URLs without user info or query."""

from __future__ import annotations

from chainreact.agent.recording import REDACTED, redact, safe_url


def test_known_secrets_and_key_shapes_are_replaced_everywhere() -> None:
    value = {"messages": [{"role": "tool", "content": "token=s3cr3t-value; again s3cr3t-value"}],
             "nested": [["Authorization: Bearer abcdefghijklmnop1234"], {"k": "sk-ABCDEFGHIJKLMNOPQRST"}],
             "n": 3, "ok": True}
    out = redact(value, ["s3cr3t-value", "abc"])  # a word under 4 characters is not a secret
    assert out["messages"][0]["content"] == f"token={REDACTED}; again {REDACTED}"
    assert out["nested"] == [[f"Authorization: {REDACTED}"], {"k": REDACTED}]
    assert (out["n"], out["ok"]) == (3, True)


def test_a_value_without_secrets_is_returned_as_it_is() -> None:
    value = {"messages": [{"role": "user", "content": "What is 2 + 3?"}]}
    assert redact(value, ["s3cr3t-value"]) is value


def test_a_secret_json_would_escape_is_still_found() -> None:
    secret = 'pa"ss\\word-42'
    assert redact({"content": f"it is {secret}"}, [secret]) == {"content": f"it is {REDACTED}"}


def test_urls_lose_user_info_and_query() -> None:
    assert safe_url("https://user:pw@api.example.com:8443/v1?key=abc#x") == "https://api.example.com:8443/v1"
    assert safe_url("http://127.0.0.1:9/v1") == "http://127.0.0.1:9/v1"
    assert safe_url(None) is None
