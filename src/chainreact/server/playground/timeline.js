// A run's timeline: the runs API's events made into table rows. Agents' events (model calls, tool
// results, retries, failovers, breaker changes) and rule chains' (every node's in/out, with its agent
// nodes' events labelled with the node) come as the server logged them; times are those at which the
// browser received each event (the events of agents carry none). A model call's row opens on what was sent
// and received (calls.js), read from the run's recording once asked for.

import { callView, findCall } from "./calls.js";
import { h, ms } from "./dom.js";

export class Timeline {
  // `recording`: an async function answering the run's cassette (null: model calls do not open).
  constructor(rows, model = "", recording = null) {
    this.rows = rows; // kept in the session's record, drawn again when it is reopened
    this.model = model;
    this.recording = recording;
    this.inputs = new Map(); // chain node -> its last IN message's data (paired with its OUT)
    this.t0 = null;
    this.lastMark = 0;
    this.box = h("details", { class: "timeline", hidden: true },
      h("summary", {}, "Timeline"), h("table", {},
        h("thead", {}, h("tr", {}, ["time", "step", "what", "detail", "tokens", "took"].map((c) =>
          h("th", { scope: "col" }, c)))), h("tbody", {})));
    for (const r of rows) this.draw(r);
  }

  // One event of the run (`nested`: a sub-agent's); adds its row, if it makes one.
  onEvent(ev, nested) {
    const now = performance.now();
    const t = now - (this.t0 ??= now);
    const who = ev.node ? ev.node : nested ? ev.agent : null; // a chain's agent node, or a sub-agent
    const base = { t, step: ev.step, who };
    switch (ev.type) {
      case "run_start":
        this.lastMark = t;
        return;
      case "node":
        this.onNode(ev, t);
        return;
      case "tool_result":
        this.add({ ...base, kind: ev.is_error ? "tool error" : "tool", what: ev.name, detail: clip(ev.content, 90),
          took: ev.duration_ms, bad: ev.is_error });
        break;
      case "model_call_end": {
        const u = ev.usage || {};
        const calls = (ev.message && ev.message.tool_calls || []).map((c) => c.function.name);
        // Which of its agent's model calls this is: how the recording's call is found again.
        const nth = this.rows.filter((r) => r.kind === "model call" && r.agent === ev.agent).length;
        this.add({ ...base, kind: "model call", agent: ev.agent, nth, what: (who ? "" : this.model) || ev.agent,
          detail: `${ev.finish_reason || ""}${calls.length ? " → " + calls.join(", ") : ""}` +
            (ev.endpoint ? ` · ${ev.endpoint}` : ""),
          tokens: u.total_tokens !== undefined ? `${u.prompt_tokens} in / ${u.completion_tokens} out` : "",
          took: t - this.lastMark });
        break;
      }
      case "retry":
        this.add({ ...base, kind: "retry", what: ev.endpoint, bad: true,
          detail: `attempt ${ev.attempt} failed${ev.status ? " (" + ev.status + ")" : ""}: ${clip(ev.error, 80)}; ` +
            `next in ${ms(ev.delay * 1000)}` });
        return;
      case "failover":
        this.add({ ...base, kind: "failover", bad: true, what: `${ev.from_endpoint} → ${ev.to_endpoint}`,
          detail: clip(ev.error, 90) });
        return;
      case "breaker":
        this.add({ ...base, kind: "breaker", what: ev.endpoint, detail: `${ev.previous} → ${ev.state}`,
          bad: ev.state === "open" });
        return;
      default:
        return;
    }
    this.lastMark = t;
  }

  // A chain node: its IN is remembered, its OUT makes the row (in and out data, relation, duration).
  onNode(ev, t) {
    const key = ev.chainId + "\u0000" + ev.nodeId;
    const data = ev.msg ? ev.msg.data : "";
    this.lastMark = t;
    if (ev.flow === "IN") {
      this.inputs.set(key, data);
      return;
    }
    const got = this.inputs.get(key);
    this.add({ t, kind: ev.error || ev.relation === "Failure" ? "node error" : "node",
      what: `${ev.nodeId} → ${ev.relation}`, chain: ev.chainId, node: ev.nodeId,
      detail: ev.error ? clip(ev.error, 90) : `in ${clip(got, 40)} · out ${clip(data, 40)}`,
      took: ev.durationMs ?? undefined, bad: !!ev.error || ev.relation === "Failure" });
  }

  add(r) {
    this.rows.push(r);
    this.draw(r);
  }

  draw(r) {
    this.box.hidden = false;
    const n = this.rows.length;
    this.box.firstChild.textContent = `Timeline (${n} event${n > 1 ? "s" : ""})`;
    const who = r.who ?? (r.nested ? r.agent : null); // rows kept before `who` name their sub-agent so
    const step = who ? `${who} ${r.step ?? ""}`.trim() : String(r.step ?? "");
    const open = this.recording && r.kind === "model call" && r.agent !== undefined
      ? h("button", { type: "button", class: "callbtn", "aria-expanded": "false",
        onclick: (ev) => this.toggleCall(r, ev.currentTarget) }, "request and response") : null;
    this.box.querySelector("tbody").append(h("tr", { class: r.bad ? "bad" : "", "data-kind": r.kind,
      "data-node": r.node },
      h("td", {}, "+" + ms(r.t)), h("td", {}, step),
      h("td", {}, h("b", {}, r.kind), " ", r.what || ""), h("td", {}, r.detail || "", open ? " " : "", open),
      h("td", {}, r.tokens || ""), h("td", {}, r.took !== undefined ? ms(r.took) : "")));
  }

  // Open (or close) a model call's request and response under its row.
  async toggleCall(r, button) {
    const row = button.closest("tr");
    if (row.nextSibling && row.nextSibling.classList.contains("calldetail")) {
      row.nextSibling.remove();
      button.setAttribute("aria-expanded", "false");
      return;
    }
    const cell = h("td", { colspan: 6 }, h("p", { class: "muted" }, "Loading…"));
    row.after(h("tr", { class: "calldetail" }, cell));
    button.setAttribute("aria-expanded", "true");
    let found = null;
    try {
      found = findCall(await this.recording(), r.agent, r.nth);
    } catch (e) {
      cell.replaceChildren(h("p", { class: "muted" }, e.status === 409
        ? "Not recorded yet: a run's calls are kept when it stops (or waits for an answer)."
        : `Could not read the run's recording: ${e.message}`));
      return;
    }
    cell.replaceChildren(found ? callView(found)
      : h("p", { class: "muted" }, "This call is not in the run's recording (yet: it is kept when the run stops)."));
  }
}

export function clip(text, n) {
  const s = typeof text === "string" ? text : text === undefined || text === null ? "" : JSON.stringify(text);
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}
