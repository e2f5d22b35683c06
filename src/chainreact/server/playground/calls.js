// One model call in full, under its timeline row: what was sent (model, endpoint, parameters, the tools
// offered, every message) and what came back. It is read from the run's recording (the cassette of
// "export as test", GET /playground/api/{agents|chains}/{id}/runs/{run_id}/cassette): the run's events stay
// as small as they were, and the recording never holds a key (agent/recording.py redacts them).

import { h, pretty } from "./dom.js";

// The model call `nth` (0-based) of agent `agent` in a cassette's agents: {agent, step}, or null. The top
// agent's resumed parts are one agent there; a sub-agent or a chain's agent node is its own.
export function findCall(cassette, agent, nth) {
  let seen = 0;
  for (const a of cassette.agents || []) {
    if (a.agent !== agent) continue;
    for (const step of a.steps || []) {
      if (!step.response) continue; // a call that failed has no model_call_end event, nor a timeline row
      if (seen++ === nth) return { agent: a, step };
    }
  }
  return null;
}

function messageEl(m) {
  const calls = (m.tool_calls || []).map((c) => `${c.function.name}(${c.function.arguments})`);
  const content = typeof m.content === "string" ? m.content : m.content == null ? "" : pretty(m.content);
  return h("li", { "data-role": m.role },
    h("span", { class: "role" }, m.role + (m.tool_call_id ? ` (${m.tool_call_id})` : "")),
    content ? h("pre", {}, content) : null,
    m.reasoning_content ? h("details", {}, h("summary", {}, "Reasoning"), h("pre", {}, m.reasoning_content)) : null,
    calls.length ? h("pre", { class: "toolcalls" }, calls.map((c) => "→ " + c).join("\n")) : null);
}

function toolEl(t) {
  const fn = t.function || t;
  return h("li", {}, h("b", {}, fn.name), fn.description ? " — " + fn.description : "",
    h("details", {}, h("summary", {}, "parameters"), h("pre", {}, pretty(fn.parameters || {}))));
}

// The view of `found` (findCall's answer).
export function callView(found) {
  const { agent, step } = found;
  const req = step.request || {};
  const res = step.response || {};
  const params = agent.params || {};
  const tools = req.tools || [];
  const usage = res.usage || {};
  return h("div", { class: "call" },
    h("p", { class: "muted" }, `${agent.agent} · step ${step.step} · ${agent.model || "?"} at ${agent.endpoint || "?"}` +
      (req.stream ? " · streamed" : "")),
    h("h5", {}, "Parameters"),
    Object.keys(params).length ? h("pre", { class: "params" }, pretty(params)) : h("p", { class: "muted" }, "none set"),
    h("h5", {}, `Tools offered (${tools.length})`),
    tools.length ? h("ul", { class: "offered" }, tools.map(toolEl)) : null,
    h("h5", {}, `Messages sent (${(req.messages || []).length})`),
    h("ol", { class: "sent" }, (req.messages || []).map(messageEl)),
    h("h5", {}, `Response: ${res.finish_reason || "?"}` +
      (usage.total_tokens !== undefined ? ` · ${usage.prompt_tokens} in / ${usage.completion_tokens} out tokens` : "")),
    h("ol", { class: "received" }, res.message ? messageEl(res.message) : null));
}
