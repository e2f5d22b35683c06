// Zoom and pan for a drawing (an SVG with a viewBox of `width` x `height`) in a scrolling pane. The SVG is
// sized to width x height times the zoom, so panning is the pane's own scrolling (scroll bars, wheel,
// arrow keys, and dragging the background); Ctrl + wheel (a pinch on a touchpad) zooms around the pointer,
// the toolbar's buttons and the + - 0 keys around the middle. A drawing starts shrunk to fit the pane if that
// keeps it at READABLE or more (its smallest text, 12 px, stays 11 px or more), else at 100 %, scrolled to
// its first node.

import { h } from "./dom.js";

const READABLE = 11 / 12, MIN = 0.05, MAX = 3, STEP = 1.25;

export class Zoom {
  constructor(container, svg, width, height, focus = null) {
    this.svg = svg;
    this.width = width;
    this.height = height;
    this.level = 1;
    this.scroller = h("div", { class: "graphscroll", tabindex: 0,
      "aria-label": "The graph: drag or use the arrow keys to move, + and - to zoom, 0 for 100 %" }, svg);
    this.readout = h("output", { class: "zoomlevel", "aria-live": "polite" });
    const button = (cls, label, title, fn) => h("button", { type: "button", class: "secondary " + cls, title,
      "aria-label": title, onclick: fn }, label);
    const bar = h("div", { class: "zoombar", role: "toolbar", "aria-label": "Zoom" },
      button("zoom-out", "−", "Zoom out", () => this.by(1 / STEP)),
      this.readout,
      button("zoom-in", "+", "Zoom in", () => this.by(STEP)),
      button("zoom-fit", "Fit", "Fit the whole graph in view", () => this.fit()),
      button("zoom-reset", "100 %", "Actual size", () => this.set(1)));
    container.replaceChildren(bar, this.scroller);
    this.listen();
    const fit = this.fitLevel();
    this.set(fit >= READABLE ? Math.min(1, fit) : 1); // what cannot fit legibly starts at full size
    if (focus && fit < READABLE) { // larger than the pane: start at the first node
      this.scroller.scrollLeft = Math.max(0, focus.x * this.level - 24);
      this.scroller.scrollTop = Math.max(0, (focus.y + focus.h / 2) * this.level - this.scroller.clientHeight / 2);
    }
  }

  fitLevel() {
    const w = this.scroller.clientWidth, hgt = this.scroller.clientHeight;
    if (!w || !hgt) return 1; // not laid out (hidden): full size
    return Math.min((w - 4) / this.width, (hgt - 4) / this.height);
  }

  fit() {
    this.set(Math.max(MIN, Math.min(MAX, this.fitLevel())));
    this.scroller.scrollLeft = 0;
    this.scroller.scrollTop = 0;
  }

  by(factor, at = null) {
    this.set(this.level * factor, at);
  }

  // Zoom to `level`, keeping the drawing's point under `at` ({x, y} in the pane; default: its middle).
  set(level, at = null) {
    const sc = this.scroller;
    const ax = at ? at.x : sc.clientWidth / 2, ay = at ? at.y : sc.clientHeight / 2;
    const old = this.level;
    const cx = (sc.scrollLeft + ax) / old, cy = (sc.scrollTop + ay) / old;
    this.level = Math.max(MIN, Math.min(MAX, level));
    this.svg.style.width = Math.round(this.width * this.level) + "px";
    this.svg.style.height = Math.round(this.height * this.level) + "px";
    this.svg.dataset.zoom = String(this.level);
    sc.scrollLeft = cx * this.level - ax;
    sc.scrollTop = cy * this.level - ay;
    this.readout.textContent = Math.round(this.level * 100) + " %";
  }

  listen() {
    const sc = this.scroller;
    sc.addEventListener("wheel", (ev) => {
      if (!ev.ctrlKey && !ev.metaKey) return; // a plain wheel scrolls
      ev.preventDefault();
      const r = sc.getBoundingClientRect();
      this.by(Math.exp(-ev.deltaY * 0.002), { x: ev.clientX - r.left, y: ev.clientY - r.top });
    }, { passive: false });
    sc.addEventListener("keydown", (ev) => {
      if (ev.target !== sc) return; // a focused node's own keys
      if (ev.key === "+" || ev.key === "=") this.by(STEP);
      else if (ev.key === "-" || ev.key === "_") this.by(1 / STEP);
      else if (ev.key === "0") this.set(1);
      else return;
      ev.preventDefault();
    });
    // Dragging the background pans; a press on a node is left to the node (click, focus).
    let drag = null;
    sc.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0 || ev.target.closest(".node")) return;
      drag = { x: ev.clientX, y: ev.clientY, left: sc.scrollLeft, top: sc.scrollTop, id: ev.pointerId };
      sc.setPointerCapture(ev.pointerId);
      sc.classList.add("panning");
    });
    sc.addEventListener("pointermove", (ev) => {
      if (!drag || ev.pointerId !== drag.id) return;
      sc.scrollLeft = drag.left - (ev.clientX - drag.x);
      sc.scrollTop = drag.top - (ev.clientY - drag.y);
    });
    const end = (ev) => {
      if (!drag || ev.pointerId !== drag.id) return;
      drag = null;
      sc.classList.remove("panning");
    };
    sc.addEventListener("pointerup", end);
    sc.addEventListener("pointercancel", end);
  }
}
