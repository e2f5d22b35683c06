// A flow as a graph (nodes, their transitions, and the collaborators agent nodes delegate to, GET
// /playground/api/flows/{id}) with each session's current node, the sessions in the server's store
// (opened: the conversation so far and its user, GET /playground/api/flows/{id}/sessions/{sid}), and a box
// to send a session one message as a user (POST /api/v1/flows/{id}/sessions/{sid}/messages with `user`,
// SSE with "deltas": the user's message, then the agents' answers shown as they are written).

import { getJSON, streamSSE } from "./api.js";
import { connectPanel } from "./connect.js";
import { h, pretty } from "./dom.js";
import { drawGraph } from "./graph.js";
import { fillMarkdown } from "./markdown.js";

const END = "\u0000end";
const FILE = "\u0000file:"; // a collaborator that is an agent document, drawn as a node of its own
const USER_STORE = "chainreact.flowUser.";

export class FlowView {
  constructor(root, item) {
    this.item = item;
    this.closed = false;
    this.current = null; // the session shown
    this.graph = h("div", { class: "graphwrap", id: "flow-graph" }, h("p", { class: "muted" }, "Loading…"));
    this.detail = h("aside", { class: "detail", id: "flow-detail", "aria-label": "Sessions", "aria-live": "polite" });
    this.sid = h("input", { id: "flow-session", size: 16, spellcheck: "false",
      value: "play-" + Math.random().toString(36).slice(2, 8) });
    this.text = h("textarea", { id: "flow-text", spellcheck: "true" });
    // The session's user (the flow's {{user.id}}, {{user.name}}), kept in the browser per flow.
    const saved = savedUser(item.id);
    this.userId = h("input", { id: "flow-user-id", size: 8, spellcheck: "false", value: saved.id || "",
      placeholder: "u1" });
    this.userName = h("input", { id: "flow-user-name", size: 10, spellcheck: "false", value: saved.name || "",
      placeholder: "Ann" });
    this.sendBtn = h("button", { type: "submit", id: "flow-send" }, "Send");
    this.status = h("span", { class: "muted", role: "status", id: "flow-status" });
    const form = h("form", { class: "traceform", onsubmit: (ev) => { ev.preventDefault(); this.send(); } },
      h("label", { for: "flow-session" }, "Session", this.sid),
      h("label", { for: "flow-user-id" }, "User id", this.userId),
      h("label", { for: "flow-user-name" }, "User name", this.userName),
      h("label", { for: "flow-text" }, "Message", this.text), this.sendBtn, this.status);
    const connect = connectPanel(item);
    root.append(
      h("div", { class: "viewhead" }, h("h2", {}, item.id), h("span", { class: "kind" }, "flow"),
        item.description ? h("span", { class: "muted" }, item.description) : null, h("span", { class: "spacer" }),
        connect.button),
      connect.panel,
      h("div", { class: "chainview" }, h("div", { class: "graphpane" }, this.graph, form), this.detail));
    this.load();
  }

  close() {
    this.closed = true;
  }

  async load() {
    try {
      this.flow = await getJSON(`/playground/api/flows/${encodeURIComponent(this.item.id)}`);
    } catch (e) {
      this.graph.replaceChildren(h("p", { class: "failure", role: "alert" }, `Could not load the flow: ${e.message}`));
      return;
    }
    if (this.closed) return;
    const f = this.flow;
    const nodes = f.nodes.map((n) => ({ id: n.name, title: n.name + (n.start ? " (start)" : ""), subtitle: n.type }));
    const edges = f.transitions.map((t) => ({ from: t.from, to: t.to === null ? END : t.to, label: t.label }));
    if (edges.some((e) => e.to === END)) nodes.push({ id: END, title: "end of the flow", subtitle: "end" });
    // Collaborators: an edge from the node that calls them (dashed); an agent document gets a node.
    for (const c of f.collaborators || []) {
      const to = c.node || FILE + c.file;
      if (!c.node && !nodes.some((n) => n.id === to)) {
        nodes.push({ id: to, title: c.name, subtitle: "agent " + c.file, kind: "collaborator" });
      }
      edges.push({ from: c.from, to, label: "collaborator", kind: "collaborator" });
    }
    this.drawn = drawGraph(this.graph, nodes, edges, [f.start], (id) => this.showNode(id), `Graph of flow ${f.id}`);
    this.mark();
    this.showSessions();
  }

  mark() {
    const counts = new Map();
    for (const s of this.flow.sessions) counts.set(s.node, (counts.get(s.node) || 0) + 1);
    const shown = this.flow.sessions.find((s) => s.session === this.current);
    for (const [id, g] of this.drawn.nodeEls) {
      g.classList.toggle("visited", counts.has(id));
      g.classList.toggle("selected", !!shown && shown.node === id);
      const n = counts.get(id);
      g.querySelector(".order").textContent = n ? `${n} session${n > 1 ? "s" : ""}` : "";
    }
  }

  showSessions(extra = []) {
    const list = this.flow.sessions;
    this.detail.replaceChildren(...[
      h("h3", {}, "Sessions"),
      list.length ? null : h("p", { class: "muted" }, "No session yet: send a message below."),
      h("ol", { id: "flow-sessions" }, list.map((s) => h("li", { "data-session": s.session, "data-node": s.node },
        h("button", { type: "button", onclick: () => this.openSession(s.session) }, s.session),
        ` at ${s.node}${s.ended ? " (ended)" : ""}`,
        h("span", { class: "muted when" }, ` · last message ${new Date(s.updated_at * 1000).toLocaleString()}` +
          ` · ${s.messages} message${s.messages === 1 ? "" : "s"} kept`)))),
      ...extra,
    ].filter(Boolean));
  }

  // One session from the store: its conversation so far; the next message from the box goes to it.
  async openSession(sid) {
    this.current = sid;
    this.sid.value = sid;
    this.mark();
    let got;
    try {
      got = await getJSON(`/playground/api/flows/${encodeURIComponent(this.item.id)}/sessions/${encodeURIComponent(sid)}`);
    } catch (e) {
      this.showSessions([h("p", { class: "failure", role: "alert" }, `Could not open session ${sid}: ${e.message}`)]);
      return;
    }
    if (this.closed || this.current !== sid) return;
    // The next message goes on as the session's user.
    this.userId.value = got.user.id ?? "";
    this.userName.value = got.user.name ?? "";
    const key = `flow:${this.item.id}:${sid}`;
    const conversation = [];
    let under = key;
    for (const m of got.messages) {
      if (m.key !== under) { // kept under a node's own memoryId (e.g. per user): say so
        under = m.key;
        conversation.push(h("p", { class: "muted memkey" }, `Kept under ${under}`));
      }
      conversation.push(h("div", { class: `msg ${m.role}`, "data-role": m.role,
        title: m.text !== m.content ? m.content : null },
      h("div", { class: "who" }, m.role === "user" ? who(got.user, "User") : "Assistant"),
      answerText(m.text, m.role !== "user")));
    }
    this.showSessions([h("h3", {}, `Session ${sid}`),
      h("p", { class: "muted", id: "flow-session-state" }, got.ended ? "Ended: its next message starts again at " +
        got.node : `At ${got.node}`, ` · last message ${new Date(got.updated_at * 1000).toLocaleString()}`,
      got.user.id || got.user.name ? ` · user ${who(got.user, "")}` : ""),
      conversation.length ? h("div", { id: "flow-conversation" }, conversation)
        : h("p", { class: "muted" }, "No message kept: only agent nodes keep the conversation.")]);
  }

  showNode(id) {
    const node = this.flow.nodes.find((n) => n.name === id);
    const callers = (this.flow.collaborators || []).filter((c) => c.node === id || FILE + c.file === id);
    const called = callers.map((c) => h("p", { class: "muted" }, `${c.from} delegates to it as ${c.name}: ` +
      c.description));
    if (!node) {
      if (callers.length) {
        this.showSessions([h("h3", {}, callers[0].name), h("p", { class: "muted" }, callers[0].file), ...called]);
      }
      return;
    }
    const here = this.flow.sessions.filter((s) => s.node === id).map((s) => s.session);
    this.showSessions([h("h3", {}, `Node ${node.name}`), h("p", { class: "muted" }, node.type),
      node.summary ? h("pre", {}, node.summary) : null,
      h("ul", { class: "transitions" }, this.flow.transitions.filter((t) => t.from === id).map((t) =>
        h("li", {}, `${t.label === "next" ? "then" : "when " + t.label} → ${t.to === null ? "end" : t.to}`))),
      ...called,
      h("p", {}, here.length ? `Sessions here: ${here.join(", ")}` : "No session is at this node.")]);
  }

  async send() {
    const text = this.text.value.trim();
    const sid = this.sid.value.trim();
    if (!text || !sid) return;
    const user = this.user();
    this.sendBtn.disabled = true;
    this.status.textContent = "Sending…";
    // The turn's messages as they come: an agent's text as the model writes it (text_delta events),
    // replaced by its complete message.
    const turn = h("div", { id: "flow-turn" },
      h("div", { class: "msg user", "data-role": "user" }, h("div", { class: "who" }, who(user || {}, "You")),
        answerText(text, false)));
    this.showSessions([h("h3", {}, "Last turn"), turn]);
    const box = (node) => {
      const el = h("div", { class: "msg", "data-node": node }, h("div", { class: "who" }, node), h("div", { class: "text" }));
      turn.append(el);
      return el;
    };
    let live = null; // the message being streamed
    let output = null;
    let end = null;
    let failed = null;
    try {
      await streamSSE(`/api/v1/flows/${encodeURIComponent(this.item.id)}/sessions/${encodeURIComponent(sid)}/messages`,
        user ? { text, user, deltas: true } : { text, deltas: true }, (ev) => {
          if (ev.event === "text_delta") {
            if (!live || live.dataset.node !== ev.node) {
              live = box(ev.node);
              live.classList.add("streaming");
            }
            live.raw = (live.raw || "") + ev.text;
            fillMarkdown(live.querySelector(".text"), live.raw);
          } else if (ev.event === "message") {
            const el = live && live.dataset.node === ev.node ? live : box(ev.node);
            fillMarkdown(el.querySelector(".text"), ev.content);
            el.classList.remove("streaming");
            live = null;
          } else if (ev.event === "output") {
            output = ev.output;
          } else if (ev.event === "turn_end") {
            end = ev;
          } else if (ev.event === "error") {
            failed = ev.message;
          }
        });
    } catch (e) {
      failed = e.message;
    } finally {
      this.sendBtn.disabled = false;
    }
    if (live) live.classList.remove("streaming");
    if (failed !== null || end === null) {
      this.status.textContent = `The turn failed: ${failed !== null ? failed : "the stream ended early"}`;
      return;
    }
    this.text.value = "";
    this.current = sid;
    this.status.textContent = end.ended ? "Now at the end: the session ended" : `Now at ${end.current}`;
    this.flow = await getJSON(`/playground/api/flows/${encodeURIComponent(this.item.id)}`);
    if (this.closed) return;
    this.mark();
    this.showSessions([h("h3", {}, "Last turn"), turn,
      output !== undefined && output !== null ? h("details", {}, h("summary", {}, "Output"), h("pre", {}, pretty(output))) : null]);
  }

  // The user the form names ({id, name}, what is filled in), or null; remembered for this flow.
  user() {
    const user = {};
    if (this.userId.value.trim()) user.id = this.userId.value.trim();
    if (this.userName.value.trim()) user.name = this.userName.value.trim();
    try {
      localStorage.setItem(USER_STORE + this.item.id, JSON.stringify(user));
    } catch (_) {
      // storage full or disabled: the user is not remembered, the message goes anyway
    }
    return Object.keys(user).length ? user : null;
  }
}

function savedUser(flowId) {
  try {
    const user = JSON.parse(localStorage.getItem(USER_STORE + flowId) || "{}");
    return user && typeof user === "object" ? user : {};
  } catch (_) {
    return {};
  }
}

function who(user, fallback) {
  if (user.name && user.id) return `${user.name} (${user.id})`;
  return user.name || user.id || fallback;
}

// A message's text: an answer's as Markdown, the user's as it was typed.
function answerText(text, markdown) {
  const el = h("div", { class: "text" });
  if (markdown) fillMarkdown(el, text);
  else el.textContent = text;
  return el;
}
