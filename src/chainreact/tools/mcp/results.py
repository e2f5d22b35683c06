"""MCP `CallToolResult` -> what the model sees (text) plus the non-text parts (ToolOutput.data).

Works on plain dicts in the MCP wire shape (camelCase keys), so the SDK's pydantic result and a host
provider's dict go through the same code:
  * text parts are joined with "\\n";
  * image/audio parts become "[image: image/png, 1234 bytes]" placeholders, the parts go to `data`;
  * embedded resources give their text, or a "[resource: uri, mime, N bytes]" placeholder for blobs;
  * resource links give "[resource link: uri]";
  * no text at all but `structuredContent` -> its compact JSON;
  * `isError` -> ToolOutput(is_error=True, content="Error: ...").
"""

from __future__ import annotations

from typing import Any

from ..base import ToolOutput


def to_wire(result: Any) -> dict[str, Any]:
    """The SDK's result model (1.x or 2.x, snake_case or camelCase fields) as an MCP wire dict."""
    if isinstance(result, dict):
        return result
    dump = getattr(result, "model_dump", None)
    if callable(dump):
        out = dump(by_alias=True, mode="json", exclude_none=True)
        assert isinstance(out, dict)
        return out
    raise TypeError(f"not an MCP tool result: {type(result).__name__}")


def map_result(result: dict[str, Any]) -> str | ToolOutput:
    parts: list[str] = []
    data: list[dict[str, Any]] = []
    has_text = False
    for part in result.get("content") or []:
        if not isinstance(part, dict):
            parts.append(str(part))
            has_text = True
            continue
        kind = part.get("type")
        if kind == "text":
            parts.append(str(part.get("text", "")))
            has_text = True
        elif kind in ("image", "audio"):
            mime = part.get("mimeType") or "application/octet-stream"
            parts.append(f"[{kind}: {mime}, {b64_size(part.get('data') or '')} bytes]")
            data.append(part)
        elif kind == "resource":
            res = part.get("resource") or {}
            if isinstance(res.get("text"), str):
                parts.append(res["text"])
                has_text = True
            else:
                mime = res.get("mimeType") or "application/octet-stream"
                parts.append(
                    f"[resource: {res.get('uri', '')}, {mime}, {b64_size(res.get('blob') or '')} bytes]"
                )
                data.append(part)
        elif kind == "resource_link":
            parts.append(f"[resource link: {part.get('uri', '')}]")
            data.append(part)
        else:
            parts.append(f"[{kind or 'unknown'} content]")
            data.append(part)

    structured = result.get("structuredContent")
    if not has_text and structured is not None:
        import orjson

        parts.insert(0, orjson.dumps(structured).decode())

    text = "\n".join(parts)
    if result.get("isError"):
        return ToolOutput(
            content=f"Error: {text or 'the tool reported an error without a message'}",
            is_error=True,
            data=data or None,
        )
    if data:
        return ToolOutput(content=text, data=data)
    return text


def b64_size(b64: str) -> int:
    """Decoded byte length of a base64 string without decoding it (images can be megabytes)."""
    s = "".join(b64.split())
    if not s:
        return 0
    pad = len(s) - len(s.rstrip("="))
    return len(s) * 3 // 4 - pad
