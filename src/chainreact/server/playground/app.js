// The playground's shell: the catalog with search, and a view per selected agent, chain or flow.
// Routes live in the URL hash: #/agent/<id>, #/chain/<id>/graph, #/chain/<id>/chat, #/flow/<id>.

import { apiKey, getJSON, setApiKey } from "./api.js";
import { h } from "./dom.js";
import { addressTable } from "./connect.js";
import { ChatView } from "./chat.js";
import { ChainView } from "./chain.js";
import { FlowView } from "./flow.js";

const KINDS = [["agent", "Agents"], ["chain", "Chains"], ["flow", "Flows"]];
let items = [];
let current = null; // the view on screen, closed before the next one opens

// The search as typed, without spaces and invisible characters at its ends (an empty search shows all).
function query() {
  return document.getElementById("search").value.replace(/^[\s\p{Cf}]+|[\s\p{Cf}]+$/gu, "").toLowerCase();
}

function renderCatalog() {
  const box = document.getElementById("catalog");
  const q = query();
  const hit = (it) => !q || it.id.toLowerCase().includes(q) || (it.description || "").toLowerCase().includes(q)
    || (it.kind + "s").includes(q); // "flow" and "flows" (the group's title) alike
  const shown = items.filter(hit);
  box.replaceChildren();
  for (const [kind, title] of KINDS) {
    const group = shown.filter((it) => it.kind === kind);
    if (!group.length) continue;
    box.append(h("h2", { id: `group-${kind}` }, title),
      h("ul", { "aria-labelledby": `group-${kind}` }, group.map((it) => h("li", {},
        h("a", { href: defaultRoute(it), "data-id": it.id, "data-kind": it.kind },
          it.id, h("small", {}, it.description || it.model || kind))))));
  }
  const status = document.getElementById("catalog-status");
  // The query is named, so that what is filtered is never a mystery.
  status.textContent = q ? `${shown.length} of ${items.length} match “${q}”` : `${items.length} loaded`;
  markCurrent();
}

function defaultRoute(it) {
  if (it.kind === "chain") return `#/chain/${encodeURIComponent(it.id)}/graph`;
  return `#/${it.kind}/${encodeURIComponent(it.id)}`;
}

function markCurrent() {
  const [, kind, id] = location.hash.split("/");
  for (const a of document.querySelectorAll("#catalog a")) {
    const on = a.dataset.kind === kind && a.dataset.id === decodeURIComponent(id || "");
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

async function loadCatalog() {
  const status = document.getElementById("catalog-status");
  try {
    const body = await getJSON("/playground/api/catalog");
    items = body.items;
    renderCatalog();
    document.getElementById("welcome-addresses").replaceChildren(...(items.length ? [
      h("h3", {}, "Everything here is served to other clients too"),
      h("p", { class: "muted" }, "Each id is an AG-UI agent (POST a RunAgentInput) and an A2A agent (its card " +
        "names its JSON-RPC address), and a model of /v1/chat/completions."),
      addressTable(KINDS.flatMap(([kind]) => items.filter((it) => it.kind === kind)))] : []));
    route();
  } catch (e) {
    items = [];
    renderCatalog();
    status.textContent = e.status === 401 || e.status === 403
      ? "This server needs an API key: type it above." : `Could not load the catalog: ${e.message}`;
  }
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const [kind, rawId, tab] = parts;
  const id = decodeURIComponent(rawId || "");
  const item = items.find((it) => it.kind === kind && it.id === id);
  const view = document.getElementById("view");
  const welcome = document.getElementById("welcome");
  if (current) current.close();
  current = null;
  markCurrent();
  if (!item) {
    view.hidden = true;
    welcome.hidden = false;
    return;
  }
  welcome.hidden = true;
  view.hidden = false;
  view.replaceChildren();
  if (kind === "flow") current = new FlowView(view, item);
  else if (kind === "chain" && tab !== "chat") current = new ChainView(view, item);
  else current = new ChatView(view, item);
}

function init() {
  // Typing fires `input`; a value set otherwise (WebDriver's clear(), a password manager, a form reset) may
  // fire only `change`, the box's clear button `search`: each redraws the list from the box as it is.
  const search = document.getElementById("search");
  for (const type of ["input", "change", "search"]) search.addEventListener(type, renderCatalog);
  window.addEventListener("pageshow", renderCatalog); // a value the browser restored (back, forward)
  const keyInput = document.getElementById("api-key");
  keyInput.value = apiKey();
  document.getElementById("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    setApiKey(keyInput.value.trim());
    loadCatalog();
  });
  window.addEventListener("hashchange", route);
  loadCatalog();
}

init();
