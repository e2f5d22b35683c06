// A chain as a graph (from its DSL, GET /api/v1/rules/{id}) and a message's path through it: the chain is
// run once with debug capture (POST /playground/api/chains/{id}/trace), or a past run is read back from
// the store (its logged `node` events, GET /api/v1/runs/{id}/events); the nodes it went through and the
// relations it took are highlighted, numbered in order; a node's IN/OUT messages show on click.

import { getJSON, postJSON, streamSSE } from "./api.js";
import { h, ms, pretty } from "./dom.js";
import { drawGraph } from "./graph.js";
import { tabs } from "./chat.js";
import { connectPanel } from "./connect.js";
import { pastRuns } from "./runs.js";

export class ChainView {
  constructor(root, item) {
    this.item = item;
    this.trace = null;
    this.selected = null;
    this.closed = false;
    this.graph = h("div", { class: "graphwrap", id: "chain-graph" }, h("p", { class: "muted" }, "Loading…"));
    this.detail = h("aside", { class: "detail", id: "node-detail", "aria-label": "Details", "aria-live": "polite" });
    this.msgType = h("input", { id: "trace-type", value: "TEST", size: 14, spellcheck: "false" });
    this.data = h("textarea", { id: "trace-data", spellcheck: "false" }, "{}");
    this.meta = h("input", { id: "trace-meta", value: "{}", size: 18, spellcheck: "false" });
    this.runBtn = h("button", { type: "submit", id: "trace-run" }, "Run and trace");
    this.status = h("span", { class: "muted", role: "status", id: "trace-status" });
    const form = h("form", { class: "traceform", onsubmit: (ev) => { ev.preventDefault(); this.run(); } },
      h("label", { for: "trace-type" }, "Message type", this.msgType),
      h("label", { for: "trace-data" }, "Data (JSON or text)", this.data),
      h("label", { for: "trace-meta" }, "Metadata (JSON)", this.meta),
      this.runBtn, this.status);
    const past = pastRuns(item, (run) => this.openRun(run), "graph-runs");
    const connect = connectPanel(item);
    root.append(
      h("div", { class: "viewhead" }, h("h2", {}, item.id), h("span", { class: "kind" }, "chain"),
        item.description ? h("span", { class: "muted" }, item.description) : null, past.button, connect.button,
        tabs(item, "graph")),
      past.panel, connect.panel,
      h("div", { class: "chainview" }, h("div", { class: "graphpane" }, this.graph, form), this.detail));
    this.load();
  }

  close() {
    this.closed = true;
  }

  async load() {
    try {
      this.dsl = await getJSON(`/api/v1/rules/${encodeURIComponent(this.item.id)}`);
    } catch (e) {
      this.graph.replaceChildren(h("p", { class: "failure", role: "alert" }, `Could not load the chain: ${e.message}`));
      return;
    }
    if (this.closed) return;
    const md = this.dsl.metadata || {};
    this.nodes = (md.nodes || []).map((n, i) => ({ ...n, id: n.id || `node${i}` }));
    const edges = (md.connections || []).map((c) => ({ from: c.fromId, to: c.toId, label: c.type }));
    const first = this.nodes[md.firstNodeIndex || 0];
    this.drawn = drawGraph(this.graph,
      this.nodes.map((n) => ({ id: n.id, title: n.name || n.id, subtitle: n.type })),
      edges, first ? [first.id] : [], (id) => this.select(id), `Graph of chain ${this.item.id}`);
    this.showOverview();
  }

  async run() {
    let metadata;
    try {
      metadata = JSON.parse(this.meta.value || "{}");
    } catch (e) {
      this.status.textContent = `Metadata is not JSON: ${e.message}`;
      return;
    }
    this.runBtn.disabled = true;
    this.status.textContent = "Running…";
    try {
      this.trace = await postJSON(`/playground/api/chains/${encodeURIComponent(this.item.id)}/trace`,
        { msgType: this.msgType.value || "TEST", data: this.data.value, metadata });
    } catch (e) {
      this.status.textContent = `The run failed: ${e.message}`;
      return;
    } finally {
      this.runBtn.disabled = false;
    }
    if (this.closed) return;
    this.highlight();
    const ends = this.trace.ends.map((e) => e.relation + (e.error ? ` (${e.error})` : "")).join(", ");
    this.status.textContent = `Ended: ${ends || "nothing"}${this.trace.truncated ? " (trace cut short)" : ""}`;
    this.showOverview();
  }

  // A past run of the chain (runs API), from its stored events: its nodes' IN/OUT are the trace's events.
  async openRun(run) {
    if (!this.drawn) return;
    const events = [];
    let end = null;
    this.status.textContent = `Reading run ${run.id}…`;
    try {
      await streamSSE(`/api/v1/runs/${encodeURIComponent(run.id)}/events`, null, (ev) => {
        if (ev.type === "node") events.push(ev);
        else if (ev.type === "final") end = { relation: "Success", msg: { data: ev.content } };
        else if (ev.type === "error") end = { relation: "Failure", error: ev.error, msg: { data: ev.error } };
      });
    } catch (e) {
      this.status.textContent = `Could not read run ${run.id}: ${e.message}`;
      return;
    }
    if (this.closed) return;
    this.trace = { chainId: this.item.id, events, ends: end ? [end] : [], truncated: false };
    this.highlight();
    this.status.textContent = `Run ${run.id} (${run.status}), from the server's store`;
    this.showOverview();
  }

  ownEvents() {
    return (this.trace ? this.trace.events : []).filter((e) => e.chainId === this.item.id);
  }

  highlight() {
    const evs = this.ownEvents();
    const order = new Map();
    const outs = new Set();
    const failed = new Set();
    for (const e of evs) {
      if (e.flow === "IN" && !order.has(e.nodeId)) order.set(e.nodeId, order.size + 1);
      if (e.flow === "OUT") {
        outs.add(e.nodeId + "\u0000" + e.relation);
        if (e.error || e.relation === "Failure") failed.add(e.nodeId);
      }
    }
    for (const [id, g] of this.drawn.nodeEls) {
      g.classList.toggle("visited", order.has(id));
      g.classList.toggle("failed", failed.has(id));
      g.querySelector(".order").textContent = order.has(id) ? String(order.get(id)) : "";
    }
    for (const g of this.drawn.edgeEls) {
      const { from, to, labels } = g.dataset;
      const took = labels.split(",").some((l) => outs.has(from + "\u0000" + l)) && order.has(to);
      g.classList.toggle("visited", took);
    }
  }

  showOverview() {
    if (this.selected) {
      this.select(this.selected);
      return;
    }
    const evs = this.ownEvents();
    const body = [h("h3", {}, this.trace ? "Path of the message" : "Chain")];
    if (!this.trace) {
      body.push(h("p", { class: "muted" },
        `${this.nodes.length} nodes. Send a message below to see its path; click a node for its details.`));
    } else {
      const steps = evs.filter((e) => e.flow === "OUT");
      body.push(h("ol", { id: "trace-steps" }, steps.map((e) => h("li", {},
        h("button", { type: "button", onclick: () => this.select(e.nodeId) }, e.nodeId),
        ` → ${e.relation}`, e.durationMs != null ? ` (${ms(e.durationMs)})` : "",
        e.error ? h("span", { class: "failure" }, ` ${e.error}`) : null))));
      for (const end of this.trace.ends) {
        body.push(h("h3", {}, `End: ${end.relation}${end.nodeId ? " at " + end.nodeId : ""}`),
          h("pre", {}, pretty(end.msg.data)));
      }
    }
    this.detail.replaceChildren(...body.filter(Boolean));
  }

  select(id) {
    this.selected = id;
    for (const [nid, g] of this.drawn.nodeEls) g.classList.toggle("selected", nid === id);
    const node = this.nodes.find((n) => n.id === id);
    const evs = this.ownEvents().filter((e) => e.nodeId === id);
    const body = [
      h("h3", {}, node.name || node.id),
      h("p", { class: "muted" }, `${node.id} · ${node.type}`),
      h("button", { type: "button", class: "secondary", onclick: () => { this.selected = null; this.deselect(); } },
        this.trace ? "Back to the path" : "Back"),
    ];
    if (!this.trace) body.push(h("p", { class: "muted" }, "Run a message to see what this node got and sent."));
    else if (!evs.length) body.push(h("p", { class: "muted" }, "The message did not reach this node."));
    for (const e of evs) {
      const title = e.flow === "IN" ? "In" : `Out → ${e.relation}${e.durationMs != null ? " · " + ms(e.durationMs) : ""}`;
      body.push(h("h4", {}, title), e.error ? h("p", { class: "failure" }, e.error) : null,
        h("pre", { class: "io", "data-flow": e.flow }, pretty(e.msg.data)),
        h("details", {}, h("summary", {}, "Type and metadata"),
          h("pre", {}, pretty({ type: e.msg.type, metadata: e.msg.metadata }))));
    }
    body.push(h("details", {}, h("summary", {}, "Configuration"), h("pre", {}, pretty(node.configuration || {}))));
    this.detail.replaceChildren(...body.filter(Boolean));
  }

  deselect() {
    for (const g of this.drawn.nodeEls.values()) g.classList.remove("selected");
    this.showOverview();
  }
}
