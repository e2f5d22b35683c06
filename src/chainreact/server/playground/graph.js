// A directed graph drawn in SVG with a simple layered layout (left to right): layers by longest path
// from the roots over the edges that are not back edges, then ordered within layers by the mean position
// of their predecessors. Nodes are as wide as their text (long titles wrap), edge labels are whole
// (wrapped, placed in the gap after the edge's source), and the drawing zooms and pans (zoom.js), so
// nothing is cut off and no text is drawn smaller than it can be read until the user zooms out.

import { s } from "./dom.js";
import { Zoom } from "./zoom.js";

const FONT = getComputedStyle(document.documentElement).fontFamily || "sans-serif";
const TITLE = 13, SUB = 12, LABEL = 12, LINE = 17; // px at 100 %
const PAD_X = 12, PAD_Y = 10, MIN_W = 120, MAX_TEXT = 280, LABEL_MAX = 180;
const GAP_MIN = 64, GAP_Y = 30, PAD = 24, BAND = 18; // BAND: one back edge's lane under the nodes

let ctx2d = null;
function textWidth(text, size, weight = "") {
  ctx2d ??= document.createElement("canvas").getContext("2d");
  ctx2d.font = `${weight} ${size}px ${FONT}`;
  return ctx2d.measureText(text).width;
}

// `text` in lines no wider than `max` px (words kept whole; a word wider than a line is split).
export function wrap(text, size, max, weight = "") {
  const lines = [];
  let line = "";
  for (const word of String(text).split(/\s+/).filter(Boolean)) {
    let w = word;
    while (textWidth(w, size, weight) > max) { // a word wider than a line: cut where it fits
      let n = w.length - 1;
      while (n > 1 && textWidth(w.slice(0, n), size, weight) > max) n--;
      if (line) { lines.push(line); line = ""; }
      lines.push(w.slice(0, n));
      w = w.slice(n);
    }
    const next = line ? line + " " + w : w;
    if (line && textWidth(next, size, weight) > max) {
      lines.push(line);
      line = w;
    } else {
      line = next;
    }
  }
  if (line || !lines.length) lines.push(line);
  return lines;
}

function ordering(ids, out, edges, rootIds) {
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
  return { back, order };
}

// Layers of node ids (longest path over forward edges), ordered to cross less.
function layering(nodes, edges, rootIds) {
  const ids = nodes.map((n) => n.id);
  const out = new Map(ids.map((id) => [id, []]));
  for (const e of edges) if (out.has(e.from) && out.has(e.to)) out.get(e.from).push(e.to);
  const { back, order } = ordering(ids, out, edges, rootIds);
  const fwd = (a, b) => a !== b && !back.has(a + "\u0000" + b);
  const indeg = new Map(ids.map((id) => [id, 0]));
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
  for (const id of order) (layers[layer.get(id)] ??= []).push(id);
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
  return { layers: layers.filter(Boolean), back, layerOf: layer };
}

// Positions: {coords: id -> {x, y, w, h}, back, width, height, labels: edge key -> label lines}.
export function layout(nodes, edges, rootIds = []) {
  const boxes = new Map();
  for (const n of nodes) {
    const lines = wrap(n.title, TITLE, MAX_TEXT, "600");
    const text = Math.max(...lines.map((l) => textWidth(l, TITLE, "600")), textWidth(n.subtitle, SUB) + 70);
    boxes.set(n.id, { lines, w: Math.ceil(Math.max(MIN_W, text + 2 * PAD_X)),
      h: PAD_Y * 2 + lines.length * LINE + LINE });
  }
  const { layers, back, layerOf } = layering(nodes, edges, rootIds);
  const merged = mergeEdges(edges, boxes);
  // The gap after each layer is as wide as the widest label of the edges leaving it.
  const gaps = layers.map(() => GAP_MIN);
  for (const e of merged.values()) {
    e.lines = e.labels.length ? wrap(e.labels.join(", "), LABEL, LABEL_MAX) : [];
    const k = layerOf.get(e.from);
    if (!back.has(e.key) && layerOf.get(e.to) > k) {
      const w = Math.max(0, ...e.lines.map((l) => textWidth(l, LABEL)));
      gaps[k] = Math.max(gaps[k], Math.ceil(w) + 28);
    }
  }
  const colW = layers.map((ls) => Math.max(...ls.map((id) => boxes.get(id).w)));
  const colH = layers.map((ls) => ls.reduce((sum, id) => sum + boxes.get(id).h, 0) + GAP_Y * (ls.length - 1));
  const tallest = Math.max(60, ...colH);
  const coords = new Map();
  const cols = []; // each layer's [left, right]
  let x = PAD;
  layers.forEach((ls, i) => {
    cols.push([x, x + colW[i]]);
    let y = PAD + (tallest - colH[i]) / 2;
    for (const id of ls) {
      const b = boxes.get(id);
      coords.set(id, { x: x + (colW[i] - b.w) / 2, y, w: b.w, h: b.h, lines: b.lines });
      y += b.h + GAP_Y;
    }
    x += colW[i] + (i < layers.length - 1 ? gaps[i] : 0);
  });
  const backCount = [...merged.values()].filter((e) => back.has(e.key) || layerOf.get(e.to) <= layerOf.get(e.from)).length;
  const bottom = PAD + tallest;
  const width = x + PAD;
  const height = bottom + (backCount ? backCount * (BAND + LABEL) + 16 : 0) + PAD;
  return { coords, back, merged, layerOf, cols, bottom, width: Math.max(width, 300), height: Math.max(height, 120) };
}

function mergeEdges(edges, boxes) {
  // One drawn edge per pair of nodes; several relations on it share a label.
  const merged = new Map();
  for (const e of edges) {
    if (!boxes.has(e.from) || !boxes.has(e.to)) continue;
    const key = e.from + "\u0000" + e.to;
    if (!merged.has(key)) merged.set(key, { key, from: e.from, to: e.to, labels: [], kind: e.kind || "" });
    if (e.label && !merged.get(key).labels.includes(e.label)) merged.get(key).labels.push(e.label);
  }
  return merged;
}

function bezierAt(p0, p1, p2, p3, t) {
  const u = 1 - t;
  return u * u * u * p0 + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t * t * t * p3;
}

// A label's lines, the first one's top at `top`.
function labelEl(lines, x, top) {
  return s("text", { x, y: top + LABEL - 2, "text-anchor": "middle", class: "label" },
    lines.map((l, i) => s("tspan", { x, dy: i ? LABEL + 2 : 0 }, l)));
}

// Draw nodes ({id, title, subtitle}) and edges ({from, to, label, kind?}) into `container` (its children
// replaced), with zoom and pan; returns {svg, nodeEls, edgeEls, zoom}. onSelect(id) fires on click, Enter or
// Space on a node.
export function drawGraph(container, nodes, edges, rootIds, onSelect, label) {
  const L = layout(nodes, edges, rootIds);
  const svg = s("svg", { viewBox: `0 0 ${L.width} ${L.height}`, role: "group", "aria-label": label,
    "data-width": L.width, "data-height": L.height });
  svg.append(s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9,
    markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6b7480" }))));
  const edgeEls = [];
  const edgeLayer = s("g", { class: "edges" });
  let lane = 0;
  for (const e of L.merged.values()) {
    const a = L.coords.get(e.from), b = L.coords.get(e.to);
    let d, text;
    if (L.back.has(e.key) || L.layerOf.get(e.to) <= L.layerOf.get(e.from)) {
      // Back edge or same layer: a loop in its own lane under the nodes.
      const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y + b.h;
      const low = L.bottom + 14 + lane++ * (BAND + LABEL);
      d = `M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}`;
      text = labelEl(e.lines.length ? [e.lines.join(" ")] : [], (x1 + x2) / 2, bezierAt(y1, low, low, y2, 0.5) + 2);
    } else {
      const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2, c = Math.max(40, (x2 - x1) / 2);
      d = `M${x1},${y1} C${x1 + c},${y1} ${x2 - c},${y2} ${x2},${y2}`;
      // The label sits in the gap right after the source's layer (as wide as the widest such label), above
      // the curve.
      const k = L.layerOf.get(e.from);
      const gapMid = (L.cols[k][1] + L.cols[k + 1][0]) / 2;
      let lo = 0, hi = 1;
      for (let k = 0; k < 30; k++) {
        const t = (lo + hi) / 2;
        if (bezierAt(x1, x1 + c, x2 - c, x2, t) < gapMid) lo = t; else hi = t;
      }
      const y = bezierAt(y1, y1, y2, y2, lo);
      text = labelEl(e.lines, gapMid, y - 4 - e.lines.length * (LABEL + 2));
    }
    const g = s("g", { class: "edge" + (e.kind ? " " + e.kind : ""), "data-from": e.from, "data-to": e.to,
      "data-labels": e.labels.join(",") },
      s("path", { d, "marker-end": "url(#arrow)" }), s("title", {}, e.labels.join(", ")), text);
    edgeEls.push(g);
    edgeLayer.append(g);
  }
  svg.append(edgeLayer);
  const nodeEls = new Map();
  for (const n of nodes) {
    const c = L.coords.get(n.id);
    const g = s("g", { class: "node" + (n.kind ? " " + n.kind : ""), tabindex: 0, role: "button", "data-id": n.id,
      "aria-label": `${n.title} (${n.subtitle})`, transform: `translate(${c.x},${c.y})` },
      s("rect", { width: c.w, height: c.h, rx: 8 }),
      c.lines.map((l, i) => s("text", { x: PAD_X, y: PAD_Y + TITLE + i * LINE, class: "title" }, l)),
      s("text", { x: PAD_X, y: c.h - PAD_Y - 2, class: "type" }, n.subtitle),
      s("text", { x: c.w - PAD_X + 2, y: c.h - PAD_Y - 2, class: "order", "text-anchor": "end" }));
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
  const first = rootIds.map((id) => L.coords.get(id)).find(Boolean) || null;
  const zoom = new Zoom(container, svg, L.width, L.height, first);
  return { svg, nodeEls, edgeEls, zoom };
}
