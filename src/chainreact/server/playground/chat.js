// Chat with an agent or a rule chain through the runs API (POST /api/v1/agents/{id}/runs or
// /api/v1/rules/{id}/runs with stream, cancel, resume): streamed text, reasoning folded, tool calls as
// cards with sub-agent calls nested, an interrupted run's questions answered in place, the run's timeline
// (a chain's: every node, and its agent nodes' model and tool calls), a cancel button, a session picker
// and the past runs in the server's store. The answer itself is drawn by turn.js.

import { getJSON, postJSON, streamSSE } from "./api.js";
import { connectPanel } from "./connect.js";
import { h } from "./dom.js";
import { pastRuns } from "./runs.js";
import { SessionStore } from "./sessions.js";
import { AssistantTurn } from "./turn.js";

export class ChatView {
  constructor(root, item) {
    this.item = item;
    this.store = new SessionStore(item.kind, item.id);
    this.abort = null;
    this.session = this.store.all()[0] || this.store.create();
    // A run's recording (its model calls in full, for the timeline): the cassette of "export as test".
    this.recording = (record) => (record.runId
      ? getJSON(`/playground/api/${item.kind}s/${encodeURIComponent(item.id)}/runs/` +
        `${encodeURIComponent(record.runId)}/cassette`)
      : Promise.reject(new Error("the run has no id yet")));

    // The agent's or chain's recent runs in the server's store; one opens in the log from its stored
    // events (an interrupted one can be answered there).
    const past = pastRuns(item, (run) => this.openRun(run));
    const connect = connectPanel(item);
    this.picker = h("select", { id: "session-picker", onchange: () => this.pick(this.picker.value) });
    const head = h("div", { class: "viewhead" },
      h("h2", {}, item.id), h("span", { class: "kind" }, item.kind),
      item.model ? h("span", { class: "muted" }, "model " + item.model) : null,
      h("span", { class: "spacer" }),
      h("label", { for: "session-picker" }, "Session"), this.picker,
      h("button", { type: "button", class: "secondary", id: "new-session", onclick: () => this.newSession() },
        "New session"),
      past.button, connect.button,
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
    root.append(head, past.panel, connect.panel, h("div", { class: "chat" }, this.log, form));
    this.refreshPicker();
    this.renderSession();
    this.input.focus();
  }

  async openRun(run) {
    if (this.abort) return;
    this.log.append(h("p", { class: "runtitle muted" }, `Run ${run.id} (${run.status}), from the server's store`));
    const record = { role: "assistant", text: "", reasoning: "", segments: [], started: Date.now() };
    const turn = new AssistantTurn(this.item.id, record, { live: true, model: this.item.model || "",
      recording: this.recording, onAnswer: (answers, form) => this.resume(turn, answers, form) });
    let asked = false;
    this.log.append(turn.el);
    await this.stream(turn, `/api/v1/runs/${encodeURIComponent(run.id)}/events`, null, (ev, id) => {
      if (ev.type === "run_start" && !asked) {
        asked = true;
        const msgs = (ev.input && ev.input.messages) || [];
        const last = [...msgs].reverse().find((m) => m.role === "user");
        const said = last ? last.content : typeof ev.input === "string" ? ev.input : null;
        if (said) turn.el.before(userBubble(typeof said === "string" ? said : JSON.stringify(said)));
      }
      turn.onEvent(ev, id);
    });
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
      else {
        this.log.append(new AssistantTurn(this.item.id, turn, { model: this.item.model || "",
          recording: this.recording }).el);
      }
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
    this.log.append(userBubble(text));

    const record = { role: "assistant", text: "", reasoning: "", segments: [], started: Date.now() };
    this.session.turns.push(record);
    this.store.save(this.session);
    this.refreshPicker();
    const turn = new AssistantTurn(this.item.id, record, { live: true, model: this.item.model || "",
      recording: this.recording, onAnswer: (answers, form) => this.resume(turn, answers, form) });
    this.log.append(turn.el);
    const start = this.item.kind === "agent" ? "agents" : "rules";
    await this.stream(turn, `/api/v1/${start}/${encodeURIComponent(this.item.id)}/runs`,
      { messages, stream: true }, (ev, id) => turn.onEvent(ev, id));
  }

  async resume(turn, answers, form) {
    const runId = turn.record.runId;
    await this.stream(turn, `/api/v1/runs/${encodeURIComponent(runId)}/resume`, { answers, stream: true },
      (ev, id) => turn.onEvent(ev, id), {}, { form });
  }

  // Stream one request into `turn`. With `form` (answers to an interrupted run), a refused answer is
  // shown in the form, which stays for another try.
  async stream(turn, path, body, onData, extraHeaders = {}, { form = null } = {}) {
    this.turn = turn;
    this.abort = new AbortController();
    this.setBusy(true);
    try {
      await streamSSE(path, body, (data, id) => { onData(data, id); this.log.scrollTop = this.log.scrollHeight; }, {
        signal: this.abort.signal, extraHeaders,
        onOpen: () => { if (form) turn.resumed(form); },
      });
      turn.finish();
    } catch (e) {
      if (form && e.status) {
        for (const b of form.querySelectorAll("button")) b.disabled = false;
        const note = form.querySelector(".refused") || form.appendChild(h("p", { class: "failure refused", role: "alert" }));
        note.textContent = e.message;
      } else if (e.name === "AbortError") turn.fail("Cancelled.", true);
      else turn.fail(e.message || String(e));
    } finally {
      this.abort = null;
      this.turn = null;
      this.setBusy(false);
      this.store.save(this.session);
      this.log.scrollTop = this.log.scrollHeight;
    }
  }

  cancel() {
    if (!this.abort) return;
    const runId = this.turn && this.turn.record.runId;
    if (runId) {
      // The server cancels the run and the stream ends with its `cancelled` event; closing the stream
      // is the fallback (it cancels too).
      const abort = this.abort;
      postJSON(`/api/v1/runs/${encodeURIComponent(runId)}/cancel`, { mode: "immediate" })
        .catch(() => abort.abort());
    } else {
      this.abort.abort();
    }
  }

  close() {
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
