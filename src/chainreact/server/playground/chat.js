// Chat with an agent or a chain over /v1/chat/completions (SSE, `X-Stream-Protocol: agui` tool frames):
// streamed text, reasoning folded, tool calls as cards (arguments, result, duration, error state) with
// sub-agent calls nested in their parent's card, a cancel button and a session picker.

import { streamSSE } from "./api.js";
import { h, ms, pretty } from "./dom.js";
import { SessionStore } from "./sessions.js";

export class ChatView {
  constructor(root, item) {
    this.item = item;
    this.store = new SessionStore(item.kind, item.id);
    this.abort = null;
    this.session = this.store.all()[0] || this.store.create();

    this.picker = h("select", { id: "session-picker", onchange: () => this.pick(this.picker.value) });
    const head = h("div", { class: "viewhead" },
      h("h2", {}, item.id), h("span", { class: "kind" }, item.kind),
      item.model ? h("span", { class: "muted" }, "model " + item.model) : null,
      h("span", { class: "spacer" }),
      h("label", { for: "session-picker" }, "Session"), this.picker,
      h("button", { type: "button", class: "secondary", id: "new-session", onclick: () => this.newSession() },
        "New session"),
      item.kind === "chain" ? tabs(item, "chat") : null);
    this.log = h("div", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Conversation" });
    this.input = h("textarea", { id: "chat-input", rows: 2, placeholder: "Message (Enter sends, Shift+Enter: new line)" });
    this.input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey) {
        ev.preventDefault();
        this.send();
      }
    });
    this.sendBtn = h("button", { type: "submit", id: "send" }, "Send");
    this.cancelBtn = h("button", { type: "button", class: "danger", id: "cancel", disabled: true,
      onclick: () => this.cancel() }, "Cancel");
    const form = h("form", { class: "composer", onsubmit: (ev) => { ev.preventDefault(); this.send(); } },
      h("label", { for: "chat-input", class: "visually-hidden" }, `Message to ${item.id}`),
      this.input, this.sendBtn, this.cancelBtn);
    root.append(head, h("div", { class: "chat" }, this.log, form));
    this.refreshPicker();
    this.renderSession();
    this.input.focus();
  }

  close() {
    this.cancel();
  }

  refreshPicker() {
    this.picker.replaceChildren(...this.store.all().map((x) =>
      h("option", { value: x.id, selected: x.id === this.session.id },
        `${x.title} (${new Date(x.created).toLocaleString()})`)));
  }

  pick(sid) {
    if (this.abort) return;
    this.session = this.store.get(sid) || this.store.create();
    this.renderSession();
  }

  newSession() {
    if (this.abort) return;
    this.session = this.store.create();
    this.refreshPicker();
    this.renderSession();
    this.input.focus();
  }

  renderSession() {
    this.log.replaceChildren();
    for (const turn of this.session.turns) {
      if (turn.role === "user") this.log.append(userBubble(turn.content));
      else this.log.append(new AssistantTurn(this.item.id, turn).el);
    }
    this.log.scrollTop = this.log.scrollHeight;
  }

  history() {
    // What the server gets: the conversation so far, text only (tool activity stays server-side).
    return this.session.turns.filter((t) => t.role === "user" || (t.role === "assistant" && t.text))
      .map((t) => ({ role: t.role, content: t.role === "user" ? t.content : t.text }));
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || this.abort) return;
    this.input.value = "";
    const messages = [...this.history(), { role: "user", content: text }];
    this.session.turns.push({ role: "user", content: text });
    if (this.session.title === "New session") this.session.title = text.slice(0, 40);
    this.store.save(this.session);
    this.refreshPicker();
    this.log.append(userBubble(text));

    const record = { role: "assistant", text: "", reasoning: "", segments: [], started: Date.now() };
    const turn = new AssistantTurn(this.item.id, record, true);
    this.log.append(turn.el);
    this.abort = new AbortController();
    this.setBusy(true);
    try {
      await streamSSE("/v1/chat/completions", { model: this.item.id, stream: true, messages },
        (frame) => { turn.onFrame(frame); this.log.scrollTop = this.log.scrollHeight; },
        { signal: this.abort.signal, extraHeaders: { "X-Stream-Protocol": "agui" } });
      turn.finish();
    } catch (e) {
      if (e.name === "AbortError") turn.fail("Cancelled.", true);
      else turn.fail(e.message || String(e));
    } finally {
      this.abort = null;
      this.setBusy(false);
      this.session.turns.push(record);
      this.store.save(this.session);
      this.log.scrollTop = this.log.scrollHeight;
    }
  }

  cancel() {
    if (this.abort) this.abort.abort();
  }

  setBusy(busy) {
    this.sendBtn.disabled = busy;
    this.cancelBtn.disabled = !busy;
    this.picker.disabled = busy;
    if (!busy) this.input.focus();
  }
}

export function tabs(item, selected) {
  const go = (tab) => () => { location.hash = `#/chain/${encodeURIComponent(item.id)}/${tab}`; };
  return h("div", { class: "tabs", role: "tablist", "aria-label": "Chain views" },
    h("button", { type: "button", role: "tab", id: "tab-graph", "aria-selected": String(selected === "graph"),
      onclick: go("graph") }, "Graph"),
    h("button", { type: "button", role: "tab", id: "tab-chat", "aria-selected": String(selected === "chat"),
      onclick: go("chat") }, "Chat"));
}

function userBubble(text) {
  return h("div", { class: "msg user" }, h("div", { class: "who" }, "You"), h("div", { class: "text" }, text));
}

// One assistant answer: built live from frames, or again from its saved record.
class AssistantTurn {
  constructor(name, record, live = false) {
    this.record = record;
    this.cards = new Map(); // toolCallId -> {card, el}
    this.open = []; // cards started and not finished, for nesting sub-agent calls
    this.body = h("div", { class: "body" });
    this.meta = h("div", { class: "meta" });
    this.el = h("div", { class: "msg assistant", "aria-busy": live ? "true" : "false" },
      h("div", { class: "who" }, name), this.body, this.meta);
    if (!live) this.replay();
  }

  replay() {
    if (this.record.reasoning) this.reasoningEl().lastChild.textContent = this.record.reasoning;
    for (const seg of this.record.segments) {
      if (seg.type === "text") this.body.append(h("div", { class: "text" }, seg.text));
      else this.body.append(this.cardEl(seg.card, true));
    }
    this.showEnd();
  }

  reasoningEl() {
    if (!this.reasoningBox) {
      this.reasoningBox = h("details", { class: "reasoning" }, h("summary", {}, "Reasoning"),
        h("div", { class: "text" }));
      this.body.prepend(this.reasoningBox);
    }
    return this.reasoningBox;
  }

  onFrame(frame) {
    if (frame.error) {
      this.fail(frame.error.message || "the stream failed");
      return;
    }
    const choice = (frame.choices || [])[0] || {};
    const delta = choice.delta || {};
    if (delta.reasoning_content) {
      this.record.reasoning += delta.reasoning_content;
      this.reasoningEl().lastChild.textContent = this.record.reasoning;
    }
    if (delta.content) this.appendText(delta.content);
    for (const ev of delta.tool_calls || []) this.onTool(ev);
    if (frame.usage) this.record.usage = frame.usage;
    if (frame.model) this.record.model = frame.model;
    if (choice.finish_reason) this.record.finish = choice.finish_reason;
  }

  appendText(text) {
    this.record.text += text;
    const segs = this.record.segments;
    let last = segs[segs.length - 1];
    if (!last || last.type !== "text") {
      last = { type: "text", text: "" };
      segs.push(last);
      this.textEl = h("div", { class: "text" });
      this.body.append(this.textEl);
    }
    last.text += text;
    this.textEl.textContent = last.text;
  }

  onTool(ev) {
    if (ev.type === "TOOL_CALL_START") {
      const depth = Array.isArray(ev.path) ? Math.max(ev.path.length - 1, 0) : 0;
      const card = { id: ev.toolCallId, name: ev.toolName, args: ev.arguments, depth, children: [],
        state: "running", started: performance.now() };
      // A sub-agent's call (longer path) goes into the newest unfinished card one level up.
      const parent = [...this.open].reverse().find((o) => o.card.depth === depth - 1);
      const el = this.cardEl(card, false);
      if (parent) {
        parent.card.children.push(card);
        parent.nested.append(el);
        parent.details.open = true;
      } else {
        this.record.segments.push({ type: "tool", card });
        this.body.append(el);
      }
      const entry = { card, details: el, nested: el.querySelector(".nested") };
      this.cards.set(card.id, entry);
      this.open.push(entry);
    } else if (ev.type === "TOOL_CALL_RESULT") {
      const entry = this.cards.get(ev.toolCallId);
      if (!entry) return;
      const card = entry.card;
      card.result = ev.content;
      card.state = ev.isError ? "error" : "done";
      card.durationMs = typeof ev.durationMs === "number" ? ev.durationMs : performance.now() - card.started;
      this.open = this.open.filter((o) => o !== entry);
      this.fillCard(entry.details, card);
    }
  }

  cardEl(card, replay) {
    const details = h("details", { class: "tool", "data-tool": card.name, "data-call-id": card.id },
      h("summary", {}, h("span", { class: "name" }, card.name), h("span", { class: "state" }),
        h("span", { class: "dur" })),
      h("h4", {}, "Arguments"), h("pre", { class: "args" }, pretty(card.args ?? {})),
      h("h4", { class: "result-title" }, "Result"), h("pre", { class: "result" }),
      h("div", { class: "nested" }));
    this.fillCard(details, card);
    if (replay) {
      const nested = details.querySelector(".nested");
      for (const child of card.children || []) nested.append(this.cardEl(child, true));
    }
    return details;
  }

  fillCard(details, card) {
    const state = card.state === "running" ? "running…" : card.state === "error" ? "error" : "done";
    details.classList.toggle("done", card.state === "done");
    details.classList.toggle("failed", card.state === "error");
    details.querySelector(".state").textContent = state;
    details.querySelector(".dur").textContent = card.durationMs !== undefined ? ms(card.durationMs) : "";
    const has = card.result !== undefined;
    details.querySelector(".result-title").hidden = !has;
    const pre = details.querySelector(".result");
    pre.hidden = !has;
    pre.textContent = has ? pretty(card.result) : "";
  }

  finish() {
    this.record.durationMs = Date.now() - this.record.started;
    if (!this.record.error && !this.record.finish) {
      this.record.error = "The run stopped without an answer (it may be waiting for an answer or an approval).";
    }
    for (const o of this.open) { o.card.state = "error"; this.fillCard(o.details, o.card); }
    this.showEnd();
  }

  fail(message, cancelled = false) {
    this.record.error = message;
    this.record.cancelled = cancelled;
    this.record.durationMs = Date.now() - this.record.started;
    this.showEnd();
  }

  showEnd() {
    this.el.setAttribute("aria-busy", "false");
    const r = this.record;
    if (r.error) {
      this.el.classList.toggle("error", !r.cancelled);
      if (!this.el.querySelector(".failure")) {
        this.body.append(h("div", { class: "failure", role: "alert" }, r.error));
      }
    }
    const parts = [];
    if (r.model) parts.push(r.model);
    if (r.usage) parts.push(`${r.usage.prompt_tokens} in / ${r.usage.completion_tokens} out tokens`);
    if (r.durationMs !== undefined) parts.push(ms(r.durationMs));
    this.meta.textContent = parts.join(" · ");
  }
}
