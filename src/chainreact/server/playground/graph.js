// A directed graph drawn in SVG with a simple layered layout (left to right): layers by longest path
// from the roots over the edges that are not back edges, then ordered within layers by the mean position
// of their predecessors. Good enough for the tens of nodes a chain or flow has.

import { s } from "./dom.js";

const W = 160, H = 54, GAP_X = 92, GAP_Y = 30, PAD = 24;

export function layout(nodes, edges, rootIds = []) {
  const ids = nodes.map((n) => n.id);
  const out = new Map(ids.map((id) => [id, []]));
  const indeg = new Map(ids.map((id) => [id, 0]));
  for (const e of edges) {
    if (!out.has(e.from) || !out.has(e.to)) continue;
    out.get(e.from).push(e.to);
  }
  // Back edges: found by a depth-first walk from the roots (then from anything not reached).
  const state = new Map();
  const back = new Set();
  const order = [];
  const visit = (id) => {
    state.set(id, 1);
    order.push(id);
    for (const t of out.get(id)) {
      if (state.get(t) === 1) back.add(id + "\u0000" + t);
      else if (!state.has(t)) visit(t);
    }
    state.set(id, 2);
  };
  const hasIncoming = new Set(edges.map((e) => e.to));
  const starts = [...rootIds.filter((id) => out.has(id)), ...ids.filter((id) => !hasIncoming.has(id)), ...ids];
  for (const id of starts) if (!state.has(id)) visit(id);

  const fwd = (a, b) => a !== b && !back.has(a + "\u0000" + b);
  for (const [a, ts] of out) for (const b of ts) if (fwd(a, b)) indeg.set(b, indeg.get(b) + 1);
  const layer = new Map(ids.map((id) => [id, 0]));
  const queue = ids.filter((id) => indeg.get(id) === 0);
  while (queue.length) {
    const a = queue.shift();
    for (const b of out.get(a)) {
      if (!fwd(a, b)) continue;
      layer.set(b, Math.max(layer.get(b), layer.get(a) + 1));
      indeg.set(b, indeg.get(b) - 1);
      if (indeg.get(b) === 0) queue.push(b);
    }
  }
  const layers = [];
  for (const id of order) {
    const l = layer.get(id);
    (layers[l] = layers[l] || []).push(id);
  }
  const pos = new Map();
  const place = () => layers.forEach((ls, i) => ls.forEach((id, j) => pos.set(id, { layer: i, index: j })));
  place();
  const preds = new Map(ids.map((id) => [id, []]));
  for (const [a, ts] of out) for (const b of ts) if (fwd(a, b)) preds.get(b).push(a);
  for (let sweep = 0; sweep < 2; sweep++) {
    for (const ls of layers.slice(1)) {
      const bary = (id) => {
        const p = preds.get(id);
        return p.length ? p.reduce((sum, x) => sum + pos.get(x).index, 0) / p.length : pos.get(id).index;
      };
      const keyed = ls.map((id) => [bary(id), pos.get(id).index, id]);
      keyed.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
      ls.splice(0, ls.length, ...keyed.map((k) => k[2]));
    }
    place();
  }
  const tallest = Math.max(1, ...layers.map((ls) => ls.length));
  const coords = new Map();
  layers.forEach((ls, i) => {
    const offset = ((tallest - ls.length) * (H + GAP_Y)) / 2;
    ls.forEach((id, j) => coords.set(id, { x: PAD + i * (W + GAP_X), y: PAD + offset + j * (H + GAP_Y) }));
  });
  const width = PAD * 2 + layers.length * (W + GAP_X) - GAP_X;
  const height = PAD * 2 + tallest * (H + GAP_Y) - GAP_Y + 50; // room for back edges below
  return { coords, back, width: Math.max(width, 300), height: Math.max(height, 160) };
}

// Draw nodes ({id, title, subtitle}) and edges ({from, to, label}); returns {svg, nodeEls, edgeEls}.
// onSelect(id) fires on click, Enter or Space on a node.
export function drawGraph(nodes, edges, rootIds, onSelect, label) {
  const { coords, back, width, height } = layout(nodes, edges, rootIds);
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, role: "group", "aria-label": label });
  // Fit the pane; a large graph keeps a readable size and scrolls instead of shrinking further.
  svg.style.width = "100%";
  svg.style.maxWidth = width + "px";
  svg.style.minWidth = Math.round(width * 0.65) + "px";
  svg.append(s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9,
    markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6b7480" }))));
  // One drawn edge per pair of nodes; several relations on it share a label.
  const merged = new Map();
  for (const e of edges) {
    if (!coords.has(e.from) || !coords.has(e.to)) continue;
    const k = e.from + "\u0000" + e.to;
    if (!merged.has(k)) merged.set(k, { from: e.from, to: e.to, labels: [] });
    if (e.label && !merged.get(k).labels.includes(e.label)) merged.get(k).labels.push(e.label);
  }
  const edgeEls = [];
  const edgeLayer = s("g", { class: "edges" });
  for (const [k, e] of merged) {
    const a = coords.get(e.from), b = coords.get(e.to);
    let d, mx, my;
    if (back.has(k) || a.x >= b.x) {
      // Back edge or same layer: a loop under the nodes.
      const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y + H;
      const low = Math.max(y1, y2) + 40;
      d = `M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}`;
      mx = (x1 + x2) / 2;
      my = low - 8;
    } else {
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, c = (x2 - x1) / 2;
      d = `M${x1},${y1} C${x1 + c},${y1} ${x2 - c},${y2} ${x2},${y2}`;
      mx = (x1 + x2) / 2;
      my = (y1 + y2) / 2 - 6;
    }
    const g = s("g", { class: "edge", "data-from": e.from, "data-to": e.to, "data-labels": e.labels.join(",") },
      s("path", { d, "marker-end": "url(#arrow)" }),
      s("title", {}, e.labels.join(", ")),
      s("text", { x: mx, y: my, "text-anchor": "middle" }, clip(e.labels.join(", "), 13)));
    edgeEls.push(g);
    edgeLayer.append(g);
  }
  svg.append(edgeLayer);
  const nodeEls = new Map();
  for (const n of nodes) {
    const { x, y } = coords.get(n.id);
    const g = s("g", { class: "node", tabindex: 0, role: "button", "data-id": n.id,
      "aria-label": `${n.title} (${n.subtitle})`, transform: `translate(${x},${y})` },
      s("rect", { width: W, height: H, rx: 8 }),
      s("text", { x: 10, y: 22 }, clip(n.title, 22)),
      s("text", { x: 10, y: 40, class: "type" }, clip(n.subtitle, 28)),
      s("text", { x: W - 8, y: 40, class: "order", "text-anchor": "end" }));
    const select = () => onSelect(n.id);
    g.addEventListener("click", select);
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        select();
      }
    });
    nodeEls.set(n.id, g);
    svg.append(g);
  }
  return { svg, nodeEls, edgeEls };
}

function clip(text, n) {
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}
