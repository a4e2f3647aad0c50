// Showing a result safely: Markdown (with the HTML tables and LaTeX formulas pagemill writes) turned into HTML,
// every piece of HTML passed through an allow-list sanitizer (a document is untrusted input), and math typeset
// with the vendored KaTeX.
const ALLOWED = new Set(["P", "H1", "H2", "H3", "H4", "H5", "H6", "TABLE", "THEAD", "TBODY", "TFOOT", "TR", "TD",
  "TH", "CAPTION", "UL", "OL", "LI", "STRONG", "B", "EM", "I", "U", "S", "CODE", "PRE", "BR", "HR", "SPAN", "DIV",
  "SUP", "SUB", "BLOCKQUOTE", "A", "SECTION", "ARTICLE", "FIGURE", "FIGCAPTION", "HEADER", "FOOTER", "SMALL",
  // MathML (formulas as the browser typesets them natively)
  "MATH", "SEMANTICS", "MROW", "MI", "MO", "MN", "MS", "MTEXT", "MSUP", "MSUB", "MSUBSUP", "MFRAC", "MSQRT",
  "MROOT", "MOVER", "MUNDER", "MUNDEROVER", "MTABLE", "MTR", "MTD", "MSPACE", "MSTYLE", "MPADDED", "MPHANTOM"]);
const ATTRIBUTES = new Set(["colspan", "rowspan", "class", "data-tex", "data-display", "href", "title", "display",
  "mathvariant"]);
const DROP = new Set(["SCRIPT", "STYLE", "IFRAME", "OBJECT", "EMBED", "LINK", "META", "TEMPLATE", "SVG", "FORM",
  "INPUT", "BUTTON", "TEXTAREA", "SELECT", "BASE", "NOSCRIPT", "ANNOTATION", "ANNOTATION-XML", "TITLE"]);

// `![caption](figures/p3-e5.png)`: a figure pagemill kept (its name is an element id, nothing else passes)
const FIGURE = /^!\[([^\]]*)\]\((figures\/p\d+-e\d+\.(?:png|jpg))\)$/;

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escape = (text) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
// Markdown text (not code): an entity reference (`&lt;`, `&#60;`, `&#x3C;`) stands for its character, as
// CommonMark says, so it is left for the HTML parser to decode, as text (it opens no tag); every other `&`, and
// every `<`, is escaped. pagemill's Markdown writes a `<` that could open a tag as `&lt;`.
const ENTITY = /^&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});/;
const escapeText = (text) => text.replace(/[&<>"']/g,
  (c, at) => (c === "&" && ENTITY.test(text.slice(at, at + 40)) ? c : ESCAPES[c]));

function mathSpan(tex, display) {
  return `<span class="math" data-display="${display ? 1 : 0}" data-tex="${escape(tex)}"></span>`;
}

function inline(text) {
  const math = [];
  const keep = (html) => { math.push(html); return `\u0000${math.length - 1}\u0000`; };
  let out = text
    .replace(/\\\((.+?)\\\)/g, (_, tex) => keep(mathSpan(tex, false)))
    .replace(/\$([^$\n]+?)\$/g, (_, tex) => keep(mathSpan(tex, false)))
    .replace(/`([^`]+)`/g, (_, code) => keep(`<code>${escape(code)}</code>`));
  out = escapeText(out)
    .replace(/\*\*(.+?)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*?)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2">$1</a>');
  return out.replace(/\u0000(\d+)\u0000/g, (_, i) => math[Number(i)]);
}

function pipeTable(lines) {
  const cells = (line) => line.trim().replace(/^\||\|$/g, "").split("|").map((c) => inline(c.trim()));
  const [head, , ...rows] = lines;
  return `<table><thead><tr>${cells(head).map((c) => `<th>${c}</th>`).join("")}</tr></thead><tbody>` +
    rows.map((r) => `<tr>${cells(r).map((c) => `<td>${c}</td>`).join("")}</tr>`).join("") + "</tbody></table>";
}

export function markdownToHtml(markdown) {
  const html = [];
  const blocks = markdown.replace(/\r\n/g, "\n").split(/\n{2,}/);
  for (let i = 0; i < blocks.length; i++) {
    let block = blocks[i].trim();
    if (!block) continue;
    if (block.startsWith("```")) {  // a fence may hold blank lines: join until it closes
      while (!/\n```\s*$/.test(block) && i + 1 < blocks.length) block += "\n\n" + blocks[++i];
      html.push(`<pre><code>${escape(block.replace(/^```\w*\n?/, "").replace(/\n?```\s*$/, ""))}</code></pre>`);
    } else if (/^<!--\s*page\s+(\d+)\s*-->/.test(block)) {
      const rest = block.replace(/^<!--\s*page\s+(\d+)\s*-->\s*/, "");
      html.push(`<hr class="page-break" title="${escape(block.match(/\d+/)[0])}">`);
      if (rest) blocks.splice(i + 1, 0, rest);
    } else if (FIGURE.test(block)) {  // a kept figure: its image is fetched with the key (app.js)
      const [, alt, path] = block.match(FIGURE);
      html.push(`<figure class="pm-figure" title="${escape(path)}"><figcaption>${inline(alt)}</figcaption></figure>`);
    } else if (/^\[[ xX]\] /.test(block)) {  // a checkbox or form field: visible, not a control
      const checked = block[1] !== " ";
      html.push(`<p class="pm-check"><span class="pm-box" title="${checked ? "checked" : "not checked"}">` +
        `${checked ? "\u2612" : "\u2610"}</span> ${inline(block.slice(4))}</p>`);
    } else if (/^(\$\$|\\\[)/.test(block)) {
      html.push(mathSpan(block.replace(/^(\$\$|\\\[)|(\$\$|\\\])$/g, "").trim(), true));
    } else if (/^#{1,6}\s/.test(block)) {
      const level = block.match(/^#+/)[0].length;
      html.push(`<h${level}>${inline(block.replace(/^#+\s*/, ""))}</h${level}>`);
    } else if (block.startsWith("<")) {
      html.push(block);  // HTML tables as pagemill writes them; sanitized below with everything else
    } else if (/^\|.*\|\s*\n\|[\s:|-]+\|/.test(block)) {
      html.push(pipeTable(block.split("\n")));
    } else if (/^([-*+]|\d+[.)])\s/.test(block)) {
      const ordered = /^\d/.test(block);
      const items = block.split(/\n(?=[-*+]\s|\d+[.)]\s)/).map((item) => `<li>${inline(item.replace(/^([-*+]|\d+[.)])\s+/, ""))}</li>`);
      html.push(ordered ? `<ol>${items.join("")}</ol>` : `<ul>${items.join("")}</ul>`);
    } else {
      html.push(`<p>${inline(block).replace(/\n/g, "<br>")}</p>`);
    }
  }
  return html.join("\n");
}

function clean(node) {
  for (const child of [...node.childNodes]) {
    if (child.nodeType === Node.COMMENT_NODE) { child.remove(); continue; }
    if (child.nodeType !== Node.ELEMENT_NODE) continue;
    const tag = child.tagName.toUpperCase();  // MathML names are lower case
    if (DROP.has(tag)) { child.remove(); continue; }
    clean(child);
    if (!ALLOWED.has(tag)) { child.replaceWith(...child.childNodes); continue; }
    for (const attribute of [...child.attributes]) {
      const name = attribute.name.toLowerCase();
      if (!ATTRIBUTES.has(name) || (name === "href" && !/^https?:/i.test(attribute.value))) child.removeAttribute(attribute.name);
    }
    if (child.tagName === "A") child.setAttribute("rel", "noopener noreferrer");
  }
}

// Text delimited as math in HTML the server rendered: \( \), \[ \], $$ $$.
function markMath(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) if (/\\\(|\\\[|\$\$/.test(walker.currentNode.nodeValue)) nodes.push(walker.currentNode);
  for (const node of nodes) {
    if (node.parentElement.closest("code, pre, .math")) continue;
    const parts = node.nodeValue.split(/(\\\(.+?\\\)|\\\[[\s\S]+?\\\]|\$\$[\s\S]+?\$\$)/);
    const fragment = document.createDocumentFragment();
    for (const part of parts) {
      const display = /^(\\\[|\$\$)/.test(part);
      if (/^(\\\(|\\\[|\$\$)/.test(part)) {
        const span = document.createElement("span");
        span.className = "math";
        span.dataset.display = display ? "1" : "0";
        span.dataset.tex = part.slice(2, -2);
        fragment.append(span);
      } else if (part) fragment.append(part);
    }
    node.replaceWith(fragment);
  }
}

function typeset(root) {
  for (const span of root.querySelectorAll("span.math[data-tex]")) {
    const tex = span.dataset.tex, display = span.dataset.display === "1";
    if (window.katex) {
      // KaTeX output is built from the TeX alone (trust: false), so it is safe to insert.
      span.innerHTML = window.katex.renderToString(tex, { displayMode: display, throwOnError: false, trust: false });
    } else span.textContent = display ? `$$${tex}$$` : `$${tex}$`;
  }
}

// Puts sanitized, typeset HTML into `target`. `html` is server HTML, or null to render `markdown`.
export function showResult(target, { html = null, markdown = "" }) {
  const parsed = new DOMParser().parseFromString(html ?? markdownToHtml(markdown), "text/html");
  clean(parsed.body);
  if (html !== null) markMath(parsed.body);
  target.replaceChildren(...parsed.body.childNodes);
  typeset(target);
}
