"""The `images` configuration field: URLs, base64 strings and local file paths as image URLs.

http(s) and data: URLs pass through; an existing file becomes a data: URL (MIME type from the file's
magic bytes, else its extension); anything else must be base64 image data. Resolved once per client.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from pathlib import Path

from chainreact.errors import ConfigError

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def _sniff(data: bytes) -> str | None:
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def resolve_image(value: str, where: str = "images") -> str:
    """One `images` entry as a URL the model endpoint accepts (http(s):// or data:)."""
    v = value.strip()
    low = v[:11].lower()
    if low.startswith(("http://", "https://", "data:")):
        return v
    path = Path(v).expanduser()
    is_file = False
    if len(v) < 4096:  # a long base64 string is not a path (and would make stat() fail with ENAMETOOLONG)
        try:
            is_file = path.is_file()
        except OSError:
            is_file = False
    if is_file:
        data = path.read_bytes()
        mime = _sniff(data) or mimetypes.guess_type(path.name)[0]
        if not mime or not mime.startswith("image/"):
            raise ConfigError(f"{where}: {v}: not an image file (unknown type); use PNG, JPEG, GIF or WEBP")
        return f"data:{mime};base64,{base64.b64encode(data).decode()}"
    try:
        raw = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(
            f"{where}: {v[:80]!r} is neither an http(s)/data: URL, an existing file, nor base64 image data"
        ) from None
    mime = _sniff(raw)
    if mime is None:
        raise ConfigError(f"{where}: base64 data is not a recognised image (PNG, JPEG, GIF, WEBP, BMP)")
    return f"data:{mime};base64,{v}"


def resolve_images(values: list[str]) -> list[str]:
    return [resolve_image(v, f"images[{i}]") for i, v in enumerate(values)]
