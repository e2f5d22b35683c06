// The past runs of an agent or a chain in the server's store (GET /playground/api/{agents|chains}/{id}/runs),
// as a panel of buttons; the chat opens one into the conversation, the chain graph as a path.

import { getJSON } from "./api.js";
import { h } from "./dom.js";

// A "Past runs" button and the panel it opens and closes; `onOpen(run)` when a run is picked.
export function pastRuns(item, onOpen, id = "past-runs") {
  const panel = h("div", { class: "runspanel", id: id + "-panel", hidden: true });
  const button = h("button", { type: "button", class: "secondary", id, "aria-expanded": "false",
    "aria-controls": id + "-panel", onclick: () => toggle() }, "Past runs");
  const close = () => {
    panel.hidden = true;
    button.setAttribute("aria-expanded", "false");
  };
  const toggle = async () => {
    if (!panel.hidden) { close(); return; }
    panel.hidden = false;
    button.setAttribute("aria-expanded", "true");
    panel.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    let runs;
    try {
      runs = (await getJSON(`/playground/api/${item.kind}s/${encodeURIComponent(item.id)}/runs`)).items;
    } catch (e) {
      panel.replaceChildren(h("p", { class: "failure" }, `Could not list the runs: ${e.message}`));
      return;
    }
    panel.replaceChildren(
      runs.length ? h("ul", { "aria-label": "Past runs" }, runs.map((r) => h("li", {},
        h("button", { type: "button", class: "run", "data-run": r.id, "data-status": r.status,
          onclick: () => { close(); onOpen(r); } },
        h("b", {}, r.status), ` ${new Date(r.created_at * 1000).toLocaleString()} · `,
        h("span", { class: "muted" }, r.answer || r.id)),
        // The run as a cassette: `chainreact replay` makes it an offline test.
        h("a", { class: "export", href: `/playground/api/${item.kind}s/${encodeURIComponent(item.id)}/runs/` +
          `${encodeURIComponent(r.id)}/cassette`, download: `${item.id}-${r.id}.cassette.json`,
          title: "Download this run as a cassette: chainreact replay FILE" }, "export as test"))))
        : h("p", { class: "muted" }, `No run of this ${item.kind} in the server's store yet.`));
  };
  return { button, panel };
}
