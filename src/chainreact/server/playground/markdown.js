// A small Markdown renderer for answers (CommonMark's common subset and GitHub's tables, strikethrough and
// bare links). It builds DOM nodes, never HTML text: raw HTML in an answer shows as the text it is, and
// nothing the model writes can add an element, an attribute or a script. Links keep only http(s), mailto
// and same-site addresses, open in a new tab with rel="noopener noreferrer"; images become such links
// (nothing is fetched from elsewhere).

import { h } from "./dom.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
const TABLE_SEP = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const MAX_DEPTH = 12; // nested quotes and lists deeper than this are shown as text

// The rendered answer as a DocumentFragment.
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  frag.append(...blocks(String(text ?? "").replace(/\r\n?/g, "\n").split("\n"), 0));
  return frag;
}

// Render `text` into `el` (its children replaced), with the class that styles answers.
export function fillMarkdown(el, text) {
  el.classList.add("md");
  el.replaceChildren(renderMarkdown(text));
}

function blocks(lines, depth) {
  const out = [];
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) out.push(h("p", {}, inline(para.join("\n"))));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (!line.trim()) {
      flush();
      i++;
    } else if ((m = FENCE.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !isClosing(lines[i], fence)) body.push(lines[i++]);
      i++; // the closing fence (an unclosed block runs to the end: an answer still streaming)
      const code = h("code", m[2] ? { class: "language-" + m[2].replace(/[^\w+-]/g, "") } : {}, body.join("\n"));
      out.push(h("pre", { class: "code" }, code));
    } else if ((m = HEADING.exec(line))) {
      flush();
      // An answer's headings sit inside the page's own (h2 for the view): # is h3, the rest follow.
      out.push(h("h" + Math.min(6, m[1].length + 2), {}, inline(m[2] || "")));
      i++;
    } else if (para.length && (m = /^ {0,3}(=+|-+)[ \t]*$/.exec(line))) {
      // A setext heading: the paragraph above, underlined.
      out.push(h(m[1][0] === "=" ? "h3" : "h4", {}, inline(para.join("\n"))));
      para = [];
      i++;
    } else if (RULE.test(line)) {
      flush();
      out.push(h("hr"));
      i++;
    } else if (QUOTE.test(line) && depth < MAX_DEPTH) {
      flush();
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        inner.push(m[1]);
        i++;
      }
      out.push(h("blockquote", {}, blocks(inner, depth + 1)));
    } else if ((m = ITEM.exec(line)) && depth < MAX_DEPTH && (!para.length || m[3])) {
      flush();
      i = list(lines, i, depth, out);
    } else if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && !para.length) {
      i = table(lines, i, out);
    } else {
      para.push(line.replace(/^ {1,3}/, ""));
      i++;
    }
  }
  flush();
  return out;
}

function isClosing(line, fence) {
  const t = line.trim();
  return t.length >= fence.length && t[0] === fence[0] && /^(`+|~+)$/.test(t);
}

// A list from lines[i] on: its items (their continuation lines indented past the marker, nested lists
// among them); returns the index after it.
function list(lines, i, depth, out) {
  const first = ITEM.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const indent = first[1].length;
  const items = [];
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const width = m[1].length + m[2].length + 1;
    const body = [m[3] || ""];
    i++;
    let blank = false;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        blank = true;
        body.push("");
        i++;
        continue;
      }
      const lead = line.length - line.trimStart().length;
      if (lead >= width || (lead > indent && ITEM.test(line))) {
        body.push(line.slice(Math.min(lead, width)));
      } else if (!blank && !ITEM.test(line) && !FENCE.test(line) && !HEADING.test(line) && !QUOTE.test(line)) {
        body.push(line.trimStart()); // a lazy continuation of the item's paragraph
      } else {
        break;
      }
      blank = false;
      i++;
    }
    while (body.length && !body[body.length - 1].trim()) body.pop();
    const kids = blocks(body, depth + 1);
    // A tight item (one paragraph, maybe a nested list) shows its text without a <p>.
    const content = kids.length && kids[0].tagName === "P" && !kids.slice(1).some((k) => k.tagName === "P")
      ? [...kids[0].childNodes, ...kids.slice(1)] : kids;
    items.push(h("li", {}, content));
  }
  const start = ordered ? parseInt(first[2], 10) : 1;
  out.push(ordered ? h("ol", start !== 1 ? { start } : {}, items) : h("ul", {}, items));
  return i;
}

function cells(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const out = [];
  let cur = "";
  for (let k = 0; k < s.length; k++) {
    if (s[k] === "\\" && s[k + 1] === "|") { cur += "|"; k++; } else if (s[k] === "|") { out.push(cur.trim()); cur = ""; } else cur += s[k];
  }
  out.push(cur.trim());
  return out;
}

function table(lines, i, out) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((c) => (c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : c.startsWith(":") ? "left" : null));
  i += 2;
  const rows = [];
  while (i < lines.length && lines[i].trim() && lines[i].includes("|")) rows.push(cells(lines[i++]));
  const cell = (tag, text, k) => h(tag, align[k] ? { class: "al-" + align[k] } : {}, inline(text));
  out.push(h("div", { class: "tablewrap" }, h("table", {},
    h("thead", {}, h("tr", {}, head.map((c, k) => cell("th", c, k)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, head.map((_, k) => cell("td", r[k] ?? "", k))))))));
  return i;
}

// --- inline ---------------------------------------------------------------------------------------------

const ESCAPABLE = "\\`*_{}[]()#+-.!|~<>\"'&$%^=:;,/?@";
const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: "\u00a0" };
const BARE_URL = /^https?:\/\/[^\s<]*[^\s<.,:;"')\]!?*_~]/;

function inline(text, depth = 0) {
  const out = [];
  let buf = "";
  const push = (node) => {
    if (buf) out.push(document.createTextNode(buf));
    buf = "";
    out.push(node);
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const rest = text.slice(i);
    let m;
    if (c === "\\" && i + 1 < text.length && ESCAPABLE.includes(text[i + 1])) {
      buf += text[i + 1];
      i += 2;
    } else if (c === "\\" && text[i + 1] === "\n") {
      push(h("br"));
      i += 2;
    } else if (c === "\n") {
      // A chat answer's line breaks are meant: kept as breaks rather than folded into spaces.
      push(h("br"));
      i++;
    } else if (c === "`" && (m = /^(`+)([^]*?[^`])\1(?!`)/.exec(rest))) {
      let code = m[2].replace(/\n/g, " ");
      if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
      push(h("code", {}, code));
      i += m[0].length;
    } else if (c === "`" && (m = /^`+/.exec(rest))) {
      buf += m[0]; // an unmatched run of backticks is text
      i += m[0].length;
    } else if ((c === "!" && text[i + 1] === "[") || c === "[") {
      const link = parseLink(text, c === "!" ? i + 1 : i);
      if (link && depth < MAX_DEPTH) {
        const label = c === "!" ? [link.label || "image"] : inline(link.label, depth + 1);
        push(anchor(link.dest, label, link.title, c === "!"));
        i = link.end;
      } else {
        buf += c;
        i++;
      }
    } else if (c === "<" && (m = /^<((?:https?|mailto):[^\s<>]*)>/i.exec(rest))) {
      push(anchor(m[1], [m[1]]));
      i += m[0].length;
    } else if (c === "h" && /[\s(*_~]$|^$/.test(text.slice(Math.max(0, i - 1), i)) && (m = BARE_URL.exec(rest))) {
      const url = trimParens(m[0]);
      push(anchor(url, [url]));
      i += url.length;
    } else if ((c === "*" || c === "_" || c === "~") && depth < MAX_DEPTH && (m = emphasis(text, i))) {
      push(h(m.tag, {}, inline(m.inner, depth + 1)));
      i = m.end;
    } else if (c === "&" && (m = /^&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]+);/.exec(rest)) && entity(m[1]) !== null) {
      buf += entity(m[1]);
      i += m[0].length;
    } else {
      buf += c;
      i++;
    }
  }
  if (buf) out.push(document.createTextNode(buf));
  return out;
}

function entity(name) {
  if (name[0] !== "#") return Object.hasOwn(ENTITIES, name) ? ENTITIES[name] : null;
  const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
  return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "\ufffd";
}

// A bare URL's closing parentheses belong to it only as far as they are balanced inside it.
function trimParens(url) {
  while (url.endsWith(")") && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) url = url.slice(0, -1);
  return url;
}

// **strong**, __strong__, *em*, _em_ (not inside a word), ~~del~~: the delimiter run at text[i] and its
// closing run, or null.
function emphasis(text, i) {
  const c = text[i];
  const run = /^(\*+|_+|~+)/.exec(text.slice(i))[0];
  if (c === "~" && run.length !== 2) return null;
  const n = c === "~" ? 2 : Math.min(run.length, 2);
  const before = i > 0 ? text[i - 1] : " ";
  const after = text[i + n] ?? " ";
  if (/\s/.test(after)) return null;
  if (c === "_" && /[\p{L}\p{N}]/u.test(before)) return null;
  const delim = c.repeat(n);
  let j = i + n;
  while ((j = text.indexOf(delim, j)) !== -1) {
    const prev = text[j - 1];
    const next = text[j + n] ?? " ";
    const closes = j > i + n && !/\s/.test(prev) && next !== c && (c !== "_" || !/[\p{L}\p{N}]/u.test(next));
    if (closes && text[j - 1] !== "\\") {
      return { tag: c === "~" ? "del" : n === 2 ? "strong" : "em", inner: text.slice(i + n, j), end: j + n };
    }
    j++;
  }
  return null;
}

// [label](dest "title") starting at text[i] ("["): {label, dest, title, end}, or null.
function parseLink(text, i) {
  let depth = 0;
  let j = i;
  for (; j < text.length; j++) {
    if (text[j] === "\\") { j++; continue; }
    if (text[j] === "[") depth++;
    else if (text[j] === "]" && --depth === 0) break;
  }
  if (j >= text.length || text[j + 1] !== "(") return null;
  const m = /^\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*)(?:\s+("[^"]*"|'[^']*'))?\s*\)/.exec(text.slice(j + 1));
  if (!m) return null;
  const dest = m[1].startsWith("<") ? m[1].slice(1, -1) : m[1];
  return { label: text.slice(i + 1, j), dest, title: m[2] ? m[2].slice(1, -1) : null, end: j + 1 + m[0].length };
}

// The address a link may point to, or null: entities and escapes decoded first (so that an encoded
// "javascript:" is seen as such), then only http, https and mailto (a relative address is on this site).
export function safeHref(dest) {
  const decoded = String(dest).replace(/\\(.)/g, "$1")
    .replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]+);/g, (all, name) => entity(name) ?? all);
  // Browsers drop tabs, newlines and control characters inside a scheme ("java\tscript:"): so do we.
  const cleaned = decoded.replace(/[\u0000-\u0020\u007f-\u009f]/g, "");
  if (!cleaned) return null;
  let url;
  try {
    url = new URL(cleaned, location.href);
  } catch (_) {
    return null;
  }
  return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : null;
}

function anchor(dest, label, title = null, image = false) {
  const href = safeHref(dest);
  if (href === null) return h("span", { class: "badlink", title: "link removed: only http, https and mailto links are kept" }, label);
  return h("a", { href, target: "_blank", rel: "noopener noreferrer", title: title || (image ? "image: " + href : null),
    class: image ? "imagelink" : null }, label);
}
