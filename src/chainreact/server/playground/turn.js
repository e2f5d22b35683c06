// One assistant answer, built live from the runs API's events (agents and rule chains) or again from its
// saved record: text, reasoning, tool cards, the timeline (timeline.js) and the questions of an
// interrupted run, answered in place.

import { h, ms, pretty } from "./dom.js";
import { fillMarkdown } from "./markdown.js";
import { Timeline } from "./timeline.js";

export class AssistantTurn {
  // `recording(record)`: the run's cassette (for the timeline's model calls), or null.
  constructor(name, record, { live = false, onAnswer = null, model = "", recording = null } = {}) {
    this.record = record;
    record.timeline = record.timeline || [];
    this.onAnswer = onAnswer; // (answers) => resume the interrupted run
    this.model = model;
    this.cards = new Map(); // toolCallId -> {card, details, nested}
    this.open = []; // cards started and not finished, for nesting sub-agent calls
    this.body = h("div", { class: "body" });
    this.meta = h("div", { class: "meta" });
    this.timeline = new Timeline(record.timeline, model, recording ? () => recording(record) : null);
    this.el = h("div", { class: "msg assistant", "aria-busy": live ? "true" : "false" },
      h("div", { class: "who" }, name), this.body, this.meta, this.timeline.box);
    if (!live) this.replay();
  }

  // --- building from a saved record ---------------------------------------------------------------------
  replay() {
    if (this.record.reasoning) this.reasoningEl().lastChild.textContent = this.record.reasoning;
    for (const seg of this.record.segments) {
      if (seg.type === "text") this.body.append(markdownEl(seg.text));
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

  // --- the runs API's events ----------------------------------------------------------------------------
  onEvent(ev, id = null) {
    // A resumed run's stream starts again from the run's first event: skip what was shown.
    if (id !== null) {
      if (id <= (this.record.lastEventId ?? 0)) return;
      this.record.lastEventId = id;
    }
    if (!ev.type) { // the `end` frame: {"id", "status"}
      if (ev.status) this.record.status = ev.status;
      return;
    }
    const nested = Array.isArray(ev.path) && ev.path.length > 1;
    this.timeline.onEvent(ev, nested);
    const own = !nested && !ev.node; // the run's own event, not a sub-agent's nor a chain node's agent's
    switch (ev.type) {
      case "run_start":
        if (!nested) this.record.runId = ev.run_id;
        // A stored run read back: its resumed part starts here, so its questions were answered.
        if (own && this.form) this.settle("Answered earlier; the run went on.");
        break;
      case "text_delta":
        if (!nested) this.appendText(ev.text);
        break;
      case "reasoning_delta":
        if (!nested) this.appendReasoning(ev.text);
        break;
      case "tool_call": {
        const fn = ev.call.function || {};
        let args = fn.arguments;
        try { args = JSON.parse(args || "{}"); } catch (_) { /* shown as sent */ }
        this.toolStart(ev.call.id, fn.name, args, ev.path);
        break;
      }
      case "tool": // a chain's agent node's AG-UI tool frame
        if (ev.event.type === "TOOL_CALL_START") {
          this.toolStart(ev.event.toolCallId, ev.event.toolName, ev.event.arguments, ev.event.path);
        } else {
          this.toolEnd(ev.event.toolCallId, ev.event.content, ev.event.isError, ev.event.durationMs);
        }
        break;
      case "tool_result":
        if (!ev.node) this.toolEnd(ev.call_id, ev.content, ev.is_error, ev.duration_ms);
        break;
      case "final":
        if (own) {
          // A chain whose answer was not streamed (no streaming agent node at its end) has it only here.
          if (!this.record.text && ev.content) this.appendText(ev.content);
          this.record.usage = ev.usage;
          this.record.finish = ev.stop_reason || "stop";
          this.record.model = this.model;
        }
        break;
      case "interrupted":
        if (own) {
          this.record.questions = ev.questions;
          this.record.finish = "interrupted";
          this.showQuestions(ev.questions);
        }
        break;
      case "cancelled":
        if (own) this.record.finish = "cancelled";
        break;
      case "error":
        if (own) this.fail(ev.error);
        break;
      default:
        break;
    }
  }

  // --- shared pieces --------------------------------------------------------------------------------------
  appendReasoning(text) {
    this.record.reasoning += text;
    this.reasoningEl().lastChild.textContent = this.record.reasoning;
  }

  appendText(text) {
    this.record.text += text;
    const segs = this.record.segments;
    let last = segs[segs.length - 1];
    if (!last || last.type !== "text") {
      last = { type: "text", text: "" };
      segs.push(last);
      this.drawText();
      this.textEl = h("div", { class: "text" });
      this.body.append(this.textEl);
    }
    last.text += text;
    this.textSeg = last;
    // Markdown is drawn again from the whole text at most once a frame, not once a delta.
    if (!this.frame) this.frame = requestAnimationFrame(() => this.drawText());
  }

  drawText() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    if (this.textEl && this.textSeg) fillMarkdown(this.textEl, this.textSeg.text);
  }

  toolStart(id, name, args, path) {
    if (this.cards.has(id) && this.cards.get(id).card.state === "running") return; // re-sent on resume
    const depth = Array.isArray(path) ? Math.max(path.length - 1, 0) : 0;
    const card = { id, name, args, depth, children: [], state: "running", started: performance.now() };
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
    this.cards.set(id, entry);
    this.open.push(entry);
  }

  toolEnd(id, content, isError, durationMs) {
    const entry = this.cards.get(id);
    if (!entry) return;
    const card = entry.card;
    card.result = content;
    card.state = isError ? "error" : "done";
    card.durationMs = typeof durationMs === "number" ? durationMs : performance.now() - card.started;
    this.open = this.open.filter((o) => o !== entry);
    this.fillCard(entry.details, card);
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

  // An interrupted run's questions, answered in place: approvals with Approve / Reject (and a reason),
  // other questions with a field (a list when the schema is an enum).
  showQuestions(questions) {
    const fields = [];
    const form = h("form", { class: "questions", "aria-label": "The run is waiting for answers" },
      h("p", { class: "waiting" }, "The run is waiting for your answer."));
    for (const q of questions) {
      const fid = "answer-" + q.id;
      const box = h("fieldset", { class: "question", "data-kind": q.kind, "data-question": q.id },
        h("legend", {}, q.question || q.kind));
      if (q.kind === "approval") {
        if (q.tool) box.append(h("pre", {}, `${q.tool}(${pretty(q.arguments ?? {})})`));
        const reason = h("input", { id: fid + "-reason", placeholder: "optional", size: 30 });
        box.append(h("label", { for: fid + "-reason" }, "Reason "), reason);
        fields.push({ q, get: (approve) => (reason.value ? { approve, reason: reason.value } : approve) });
      } else {
        const enums = q.schema && Array.isArray(q.schema.enum) ? q.schema.enum : null;
        const input = enums
          ? h("select", { id: fid }, enums.map((v) => h("option", { value: JSON.stringify(v) }, String(v))))
          : h("input", { id: fid, size: 40 });
        box.append(h("label", { for: fid, class: "visually-hidden" }, q.question || "Answer"), input);
        const typed = q.schema && ["integer", "number", "boolean", "object", "array"].includes(q.schema.type);
        fields.push({ q, get: () => {
          if (enums) return JSON.parse(input.value);
          if (typed) { try { return JSON.parse(input.value); } catch (_) { return input.value; } }
          return input.value;
        } });
      }
      form.append(box);
    }
    const send = (approve) => (ev) => {
      ev.preventDefault();
      const answers = {};
      for (const f of fields) answers[f.q.id] = f.get(approve);
      for (const b of form.querySelectorAll("button")) b.disabled = true;
      this.record.answered = answers;
      if (this.onAnswer) this.onAnswer(answers, form);
    };
    const approvals = questions.some((q) => q.kind === "approval");
    form.append(h("div", { class: "actions" },
      h("button", { type: "submit", class: "approve", onclick: send(true) }, approvals ? "Approve" : "Answer"),
      approvals ? h("button", { type: "button", class: "danger reject", onclick: send(false) }, "Reject") : null));
    form.addEventListener("submit", send(true));
    this.form = form;
    this.body.append(form);
    const first = form.querySelector("input, select, button");
    if (first) first.focus();
  }

  // A resumed run goes on in the same answer: reset what ended.
  resumed(form) {
    const said = Object.values(this.record.answered).map(describeAnswer).join("; ");
    this.settle("Answered: " + said);
    this.record.finish = undefined;
    this.record.questions = undefined;
    this.el.setAttribute("aria-busy", "true");
  }

  // The questions' form gives way to `note`: they were answered, or the run ended without them.
  settle(note) {
    if (!this.form) return;
    this.form.replaceWith(h("p", { class: "muted answered" }, note));
    this.form = null;
    this.record.questions = undefined;
  }

  finish() {
    // A run that no longer waits (its `end` frame says so) keeps no live form: answering would be refused.
    if (this.form && this.record.status && this.record.status !== "interrupted") {
      this.settle(`The run is ${this.record.status}: there is nothing left to answer.`);
    }
    this.record.durationMs = Date.now() - this.record.started;
    const r = this.record;
    if (!r.error && r.finish === "cancelled") { r.error = "Cancelled."; r.cancelled = true; }
    if (!r.error && !r.finish) r.error = "The run stopped without an answer.";
    if (r.finish !== "interrupted") {
      for (const o of this.open) { o.card.state = "error"; this.fillCard(o.details, o.card); }
    }
    this.showEnd();
  }

  fail(message, cancelled = false) {
    this.record.error = message;
    this.record.cancelled = cancelled;
    this.record.durationMs = Date.now() - this.record.started;
    this.showEnd();
  }

  showEnd() {
    this.drawText();
    this.el.setAttribute("aria-busy", "false");
    const r = this.record;
    if (r.error) {
      this.el.classList.toggle("error", !r.cancelled);
      const old = this.el.querySelector(".failure");
      if (old) old.textContent = r.error;
      else this.body.append(h("div", { class: "failure", role: "alert" }, r.error));
    }
    const parts = [];
    if (r.finish === "interrupted") parts.push("waiting for an answer");
    if (r.model) parts.push(r.model);
    if (r.usage && r.usage.total_tokens !== undefined) {
      parts.push(`${r.usage.prompt_tokens} in / ${r.usage.completion_tokens} out tokens`);
    }
    if (r.durationMs !== undefined) parts.push(ms(r.durationMs));
    this.meta.textContent = parts.join(" · ");
  }
}

function markdownEl(text) {
  const el = h("div", { class: "text" });
  fillMarkdown(el, text);
  return el;
}

function describeAnswer(a) {
  if (a === true) return "approved";
  if (a === false) return "rejected";
  if (a && typeof a === "object" && typeof a.approve === "boolean") {
    return (a.approve ? "approved" : "rejected") + (a.reason ? ` (${a.reason})` : "");
  }
  return typeof a === "string" ? a : JSON.stringify(a);
}
