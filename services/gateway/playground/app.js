// The playground: key, uploads with live progress, the list of documents, and the page-by-page viewer.
import * as api from "./api.js";
import { showResult } from "./render.js";

const $ = (selector) => document.querySelector(selector);
const FINAL = new Set(["succeeded", "partial", "failed", "cancelled"]);
const EXTENSIONS = { markdown: "md", html: "html", latex: "tex", json: "json", chunks: "chunks.json" };
const rows = new Map();  // document id -> its table row
let formats = ["markdown", "json"];
let nextCursor = null;
let viewing = null;  // { state, json, page }

function say(text) { $("#message").textContent = text || ""; }
function fail(error) { say(error.message || String(error)); }

// documents table ---------------------------------------------------------------------------------------------

function row(state) {
  let tr = rows.get(state.id);
  if (!tr) {
    tr = document.createElement("tr");
    tr.dataset.id = state.id;
    tr.innerHTML = `<td class="file"></td><td class="status"></td>
      <td><span class="bar"><i></i></span> <span class="pct"></span></td><td class="created"></td>
      <td><button type="button" class="open">Open</button> <button type="button" class="remove danger">Delete</button></td>`;
    tr.querySelector(".open").addEventListener("click", () => open(state.id).catch(fail));
    tr.querySelector(".remove").addEventListener("click", (event) => remove(state.id, event.target).catch(fail));
    rows.set(state.id, tr);
  }
  update(tr, state);
  return tr;
}

function update(tr, state) {
  const total = state.pages_total || 0, ended = (state.pages_done || 0) + (state.pages_failed || 0);
  const percent = total ? Math.round((100 * ended) / total) : (FINAL.has(state.status) ? 100 : 0);
  if (state.filename !== undefined) tr.querySelector(".file").textContent = state.filename || "(erased)";
  if (state.created_at) tr.querySelector(".created").textContent = new Date(state.created_at).toLocaleString();
  const status = tr.querySelector(".status");
  status.textContent = state.status;
  status.className = `status status-${state.status}`;
  tr.querySelector(".bar > i").style.width = `${percent}%`;
  tr.querySelector(".pct").textContent = `${percent} %`;
  tr.dataset.status = state.status;
  tr.querySelector(".open").disabled = !FINAL.has(state.status) || state.status === "cancelled";
}

function showEmpty() { $("#list-empty").hidden = rows.size > 0; }

async function loadList(more = false) {
  if (!api.getKey()) return say("Paste an API key first.");
  const page = await api.listDocuments(more ? nextCursor : null);
  if (!more) { rows.clear(); $("#documents tbody").replaceChildren(); }
  for (const state of page.data) {
    $("#documents tbody").append(row(state));
    if (!FINAL.has(state.status)) track(state.id);
  }
  nextCursor = page.next_cursor;
  $("#more").hidden = !nextCursor;
  showEmpty();
}

// Live progress: the event stream, then long-polling if the stream breaks before the end.
async function track(id) {
  try {
    await api.followEvents(id, (type, data) => {
      const tr = rows.get(id);
      if (tr) update(tr, { ...data, status: data.status || type.replace("document.", "") });
    });
  } catch { /* the stream broke: long-poll below */ }
  let state = await api.getDocument(id);
  while (!FINAL.has(state.status)) state = await api.getDocument(id, 20);
  const tr = rows.get(id);
  if (tr) update(tr, state);
}

async function uploadFiles(files) {
  say("");
  if (!api.getKey()) return say("Paste an API key first.");
  const options = { mode: $("#mode").value, pages: $("#pages").value.trim() };
  for (const file of files) {
    try {
      const created = await api.upload(file, options);
      const tr = row({ ...created, filename: file.name, created_at: new Date().toISOString(), pages_done: 0,
                       pages_failed: 0 });
      $("#documents tbody").prepend(tr);
      showEmpty();
      track(created.id).catch(fail);
    } catch (error) { say(`${file.name}: ${error.message}`); }
  }
}

async function remove(id, button) {
  if (button.dataset.armed !== "1") {  // a second click confirms; no modal dialog
    button.dataset.armed = "1";
    button.textContent = "Really delete?";
    return;
  }
  await api.deleteDocument(id);
  rows.get(id)?.remove();
  rows.delete(id);
  if (viewing?.state.id === id) { $("#viewer").hidden = true; viewing = null; }
  showEmpty();
}

// viewer ------------------------------------------------------------------------------------------------------

async function open(id) {
  say("");
  const state = await api.getDocument(id);
  const json = formats.includes("json") ? await (await api.result(id, "json")).json() : { pages: [] };
  viewing = { state, json, page: 1 };
  $("#viewer").hidden = false;
  $("#viewer-title").textContent = `${state.filename} — ${state.status}, ${state.pages_done}/${state.pages_total} pages`;
  const links = formats.map((format) => {
    const link = document.createElement("a");
    link.href = "#";
    link.dataset.format = format;
    link.textContent = format;
    link.addEventListener("click", (event) => { event.preventDefault(); download(id, format).catch(fail); });
    return link;
  });
  $("#downloads").replaceChildren("download:", ...links);
  const remove = $("#delete");
  remove.dataset.armed = "";
  remove.textContent = "Delete document";
  await showPage();
  $("#viewer").scrollIntoView();
}

// Kept figures: each image fetched with the key and shown from a blob: URL (the page's CSP allows no other).
function showFigures(id, root) {
  for (const figure of root.querySelectorAll("figure.pm-figure[title]")) {
    api.figure(id, figure.title).then((blob) => {
      const image = document.createElement("img");
      image.alt = figure.textContent;
      image.src = URL.createObjectURL(blob);
      figure.prepend(image);
    }).catch(() => figure.classList.add("missing"));
  }
}

async function showPage() {
  const { state, json, page } = viewing;
  $("#page-label").textContent = `page ${page} of ${state.pages_total}`;
  $("#prev-page").disabled = page <= 1;
  $("#next-page").disabled = page >= state.pages_total;
  const entry = (json.pages || [])[page - 1] || {};
  const markdown = entry.markdown ?? "";
  showResult($("#view-html"), { html: entry.html ?? null, markdown });
  showFigures(state.id, $("#view-html"));
  $("#view-markdown").textContent = markdown;
  $("#view-json").textContent = JSON.stringify(entry, null, 2);
  const image = $("#page-image");
  const blob = await api.pageImage(state.id, page);
  if (image.src.startsWith("blob:")) URL.revokeObjectURL(image.src);
  image.dataset.page = String(page);
  await new Promise((resolve, reject) => { image.onload = resolve; image.onerror = reject; image.src = URL.createObjectURL(blob); });
  drawBoxes(entry, state.needs_review_below ?? 0.8);
}

// Element boxes are PDF points from the page's top-left corner; as percentages of the page's size they land
// on the image at any zoom. A server without elements (or a box it does not know: bbox null) draws nothing.
// An element whose own confidence is under the server's review threshold is shaded: the block to check.
function drawBoxes(entry, threshold) {
  const boxes = $("#boxes");
  boxes.dataset.document = entry.document_id || "";  // whose boxes these are, once drawn
  const elements = (entry.elements || []).filter((e) => Array.isArray(e.bbox));
  const { width, height } = entry;
  boxes.replaceChildren(...(width && height ? elements : []).map((element) => {
    const [x0, y0, x1, y1] = element.bbox;
    const box = document.createElement("div");
    box.className = "bbox";
    box.dataset.type = element.type;
    const rated = typeof element.confidence === "number";
    box.title = `${element.id}: ${element.type}` + (rated ? `, confidence ${element.confidence.toFixed(2)}` : "");
    if (rated) box.dataset.confidence = String(element.confidence);
    if (rated && element.confidence < threshold) box.classList.add("low-confidence");
    Object.assign(box.style, { left: `${(100 * x0) / width}%`, top: `${(100 * y0) / height}%`,
                               width: `${(100 * (x1 - x0)) / width}%`, height: `${(100 * (y1 - y0)) / height}%` });
    const label = document.createElement("span");
    label.textContent = element.type;
    box.append(label);
    return box;
  }));
  const low = boxes.querySelectorAll(".low-confidence").length;
  $("#box-note").textContent = boxes.children.length
    ? `${boxes.children.length} elements` + (low ? `, ${low} under confidence ${threshold} (shaded)` : "")
    : "no element boxes for this page";
}

async function download(id, format) {
  const blob = await (await api.result(id, format)).blob();
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = `${(viewing?.state.filename || id).replace(/\.[^.]+$/, "")}.${EXTENSIONS[format] || format}`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

function selectTab(name) {
  for (const tab of ["html", "markdown", "json"]) {
    $(`#tab-${tab}`).setAttribute("aria-selected", String(tab === name));
    $(`#view-${tab}`).hidden = tab !== name;
  }
}

// wiring ------------------------------------------------------------------------------------------------------

function wire() {
  $("#api-key").value = api.getKey();
  $("#remember-key").checked = Boolean(localStorage.getItem("pagemill.apiKey"));
  $("#key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    api.setKey($("#api-key").value, $("#remember-key").checked);
    $("#key-status").textContent = api.getKey() ? "key set" : "";
    loadList().catch(fail);
  });
  const zone = $("#drop-zone");
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    uploadFiles([...event.dataTransfer.files]);
  });
  $("#file-input").addEventListener("change", (event) => { uploadFiles([...event.target.files]); event.target.value = ""; });
  $("#refresh").addEventListener("click", () => loadList().catch(fail));
  $("#more").addEventListener("click", () => loadList(true).catch(fail));
  $("#prev-page").addEventListener("click", () => { viewing.page -= 1; showPage().catch(fail); });
  $("#next-page").addEventListener("click", () => { viewing.page += 1; showPage().catch(fail); });
  $("#show-boxes").addEventListener("change", (event) => $("#boxes").classList.toggle("hidden", !event.target.checked));
  $("#delete").addEventListener("click", (event) => viewing && remove(viewing.state.id, event.target).catch(fail));
  for (const tab of ["html", "markdown", "json"]) $(`#tab-${tab}`).addEventListener("click", () => selectTab(tab));
}

wire();
api.servedFormats().then((served) => { formats = served; }).catch(fail);
if (api.getKey()) loadList().catch(fail);
