"""Login pieces on their own: password hashes, token signing, the users file, the CLI's --hash-password."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from chainreact.errors import ConfigError
from chainreact.server.login import UserStore, hash_password, make_token, read_token, verify_password


def test_password_hashes_verify_and_reject() -> None:
    stored = hash_password("s3cret")
    assert stored.startswith("scrypt$") and "s3cret" not in stored
    assert verify_password("s3cret", stored) and not verify_password("s3creT", stored)
    assert hash_password("s3cret") != stored  # salted
    salt = b"0123456789abcdef"
    import base64

    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()  # noqa: E731
    pbkdf2 = f"pbkdf2_sha256$1000${b64(salt)}${b64(hashlib.pbkdf2_hmac('sha256', b'pw', salt, 1000))}"
    assert verify_password("pw", pbkdf2) and not verify_password("px", pbkdf2)
    assert not verify_password("pw", "md5$abc") and not verify_password("pw", "scrypt$x$y$z$a$b")


def test_tokens_expire_and_are_bound_to_their_secret() -> None:
    token, exp = make_token(b"k", "ann", 60, now=1000)
    assert exp == 1060
    assert read_token(b"k", token, now=1059) == "ann"
    assert read_token(b"k", token, now=1060) is None  # expired
    assert read_token(b"other", token, now=1000) is None
    assert read_token(b"k", token.replace(".", ".x"), now=1000) is None
    assert read_token(b"k", "no-dot", now=1000) is None


def test_users_file_errors_name_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    for users, where in (([{"name": "a", "password": "plain"}], "$.users[0]: password"),
                         ([{"password": hash_password("x")}], "$.users[0]: name"),
                         ([], "$.users"),
                         ([{"name": "a", "password": hash_password("x")}] * 2, "given twice")):
        path.write_text(json.dumps({"users": users}))
        with pytest.raises(ConfigError) as err:
            UserStore.load(path)
        assert "users.json: " in str(err.value) and where in str(err.value)
    path.write_text(json.dumps({"keys": []}))
    assert UserStore.load(path, required=False) is None


def test_cli_hash_password_prints_a_usable_hash() -> None:
    out = subprocess.run([sys.executable, "-m", "chainreact", "serve", "--hash-password", "pw"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert verify_password("pw", out) and not verify_password("pw2", out)
