// Talking to the server: JSON calls and SSE streams, with the API key the user typed (if any).

const KEY_STORE = "chainreact.apiKey";

export function apiKey() {
  return sessionStorage.getItem(KEY_STORE) || "";
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORE, key);
  else sessionStorage.removeItem(KEY_STORE);
}

function headers(extra = {}) {
  const h = { ...extra };
  const key = apiKey();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function failure(resp) {
  let message = `HTTP ${resp.status}`;
  try {
    const body = await resp.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch (_) {
    // not JSON: the status says enough
  }
  return new ApiError(resp.status, message);
}

export async function getJSON(path) {
  const resp = await fetch(path, { headers: headers() });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

export async function postJSON(path, body, signal) {
  const resp = await fetch(path, {
    method: "POST", body: JSON.stringify(body), signal,
    headers: headers({ "Content-Type": "application/json" }),
  });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

// POST `body` (GET when it is null) and call onData(parsed, id) for every `data:` frame of the SSE answer (id: the frame's
// `id:` as a number, else null), until [DONE] or the end of the stream.
export async function streamSSE(path, body, onData, { signal, extraHeaders = {}, onOpen = null } = {}) {
  const resp = await fetch(path, {
    method: body === null ? "GET" : "POST", body: body === null ? undefined : JSON.stringify(body), signal,
    headers: headers({ "Content-Type": "application/json", "Accept": "text/event-stream", ...extraHeaders }),
  });
  if (!resp.ok) throw await failure(resp);
  if (onOpen) onOpen(resp);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const lines = frame.split("\n");
      const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (!data) continue;
      if (data === "[DONE]") return;
      const idLine = lines.find((l) => l.startsWith("id:"));
      onData(JSON.parse(data), idLine ? Number(idLine.slice(3).trim()) : null);
    }
  }
}
