// Where other clients reach what the server loaded: each id is a model of the OpenAI routes, an AG-UI agent
// and an A2A agent (the catalog's `addresses`, paths on this server). A table of every id on the welcome
// view, and a "Connect" panel in each id's view.

import { h } from "./dom.js";

const url = (path) => location.origin + path;

function field(label, value, cls) {
  const input = h("input", { class: "address " + cls, readonly: true, value, size: Math.min(70, value.length + 2),
    "aria-label": label, onfocus: (ev) => ev.target.select() });
  return h("div", { class: "addrrow" }, h("span", { class: "addrlabel" }, label), input);
}

// The addresses of one catalog item, as selectable fields.
export function addressList(item) {
  const a = item.addresses || {};
  return h("div", { class: "addresses", "data-id": item.id },
    a.agui ? field("AG-UI (POST a RunAgentInput)", url(a.agui), "agui") : null,
    a.a2a_card ? field("A2A agent card", url(a.a2a_card), "a2a-card") : null,
    a.a2a ? field("A2A JSON-RPC", url(a.a2a), "a2a") : null,
    a.openai ? field(`OpenAI chat completions (model "${item.id}")`, url(a.openai), "openai") : null,
    h("p", { class: "muted" }, "With --keys, these take the API key as Authorization: Bearer <key>."));
}

// A "Connect" button and the panel it opens and closes (for a view's head).
export function connectPanel(item) {
  const panel = h("div", { class: "runspanel connectpanel", id: "connect-panel", hidden: true }, addressList(item));
  const button = h("button", { type: "button", class: "secondary", id: "connect", "aria-expanded": "false",
    "aria-controls": "connect-panel", onclick: () => {
      panel.hidden = !panel.hidden;
      button.setAttribute("aria-expanded", String(!panel.hidden));
    } }, "Connect");
  return { button, panel };
}

// Every item with its AG-UI and A2A addresses (the welcome view).
export function addressTable(items) {
  if (!items.length) return null;
  return h("table", { class: "addresstable", id: "addresses" },
    h("thead", {}, h("tr", {}, ["id", "kind", "AG-UI", "A2A agent card"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, items.map((it) => h("tr", { "data-id": it.id },
      h("td", {}, it.id), h("td", {}, it.kind),
      h("td", {}, h("code", { class: "agui" }, url(it.addresses.agui))),
      h("td", {}, h("code", { class: "a2a-card" }, url(it.addresses.a2a_card)))))));
}
