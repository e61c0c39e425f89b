"use strict";
// erp-sim run viewer. Data lives in <script> elements of this page: "overview-data" (JSON),
// "chunk-K" (the run's distinct messages, gzip + base64) and "episode-I" (one episode's record,
// gzip + base64). Chunks and episodes are inflated on first use and cached.

const DATA = JSON.parse(document.getElementById("overview-data").textContent);
const CACHE = { chunks: new Map(), episodes: new Map() };
const app = document.getElementById("app");

// --- small helpers ------------------------------------------------------------------------------
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
const svgEl = (tag, attrs) => {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  return node;
};
const grouped = (n) => (n === null || n === undefined) ? "–" : Math.round(n).toLocaleString("en-US");
const short = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

async function inflate(elementId) {
  const b64 = document.getElementById(elementId).textContent;
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}
async function episode(index) {
  if (!CACHE.episodes.has(index)) CACHE.episodes.set(index, expandRuns(await inflate(`episode-${index}`)));
  return CACHE.episodes.get(index);
}
// A call stores the messages it showed as the transcript holds them, from the start, as their count
// ("kept": each is [transcript id, "kept", position]; "shown" lists the rest), and the positions it did
// not show as [start, end) ranges ("pruned_ranges"), so a record grows with its episode, not the square.
function expandRuns(record) {
  for (const call of record.calls) {
    if (call.kept) call.shown = record.transcript.slice(0, call.kept).map((id, i) => [id, "kept", i]).concat(call.shown);
    if (call.pruned_ranges) {
      call.pruned = [];
      for (const [start, end] of call.pruned_ranges) for (let p = start; p < end; p++) call.pruned.push(p);
    }
  }
  return record;
}
function chunkOf(id) {
  const starts = DATA.chunk_starts;
  let lo = 0, hi = starts.length - 1;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (starts[mid] <= id) lo = mid; else hi = mid - 1; }
  return lo;
}
// messages(ids) -> Map id -> [role, text, detail, tokens]
async function messages(ids) {
  const needed = [...new Set(ids.map(chunkOf))].filter((k) => !CACHE.chunks.has(k));
  for (const k of needed) CACHE.chunks.set(k, await inflate(`chunk-${k}`));
  const out = new Map();
  for (const id of ids) { const k = chunkOf(id); out.set(id, CACHE.chunks.get(k)[id - DATA.chunk_starts[k]]); }
  return out;
}
function allIds(record) {
  const ids = [...record.transcript];
  for (const call of record.calls) {
    for (const shown of call.shown || []) ids.push(shown[0]);
    for (const c of call.role_calls || []) if (c.sent) ids.push(...c.sent, c.answer);
  }
  return ids;
}

// --- formats ------------------------------------------------------------------------------------
function formatEstimate(metric, estimate) {
  const [mean, low, high] = estimate || [null, null, null];
  if (mean === null) return ["–", ""];
  const f = metric.percent ? (v) => (100 * v).toFixed(1) + "%" : (v) => (Math.abs(v) >= 100 ? grouped(v) : v.toFixed(2));
  // an interval without width (runs that agree) only repeats the mean: shown only when it has width
  return [f(mean), low === null || f(low) === f(high) ? "" : `[${f(low)}, ${f(high)}]`];
}
const OUTCOME_LABEL = (o) => o.replaceAll("_", " ");

// --- overview -----------------------------------------------------------------------------------
function filtersFrom(query) {
  const params = new URLSearchParams(query || "");
  return { config: params.get("config") || "", task: params.get("task") || "",
           outcome: params.get("outcome") || "", expense_type: params.get("expense_type") || "" };
}
function filterLink(filters, text) {
  const params = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
  return el("a", { href: `#overview/${params}`, "data-filter": params.toString() }, text);
}
function renderOverview(query) {
  const filters = filtersFrom(query);
  app.replaceChildren();
  app.append(el("h2", {}, "Results (means, 95% intervals)"), resultsTable(), el("h2", {}, "Failure taxonomy"),
             taxonomyTable());
  if (DATA.plots.length) {
    app.append(el("h2", {}, "Plots"), el("div", { class: "plots" }, DATA.plots.map((p) =>
      el("figure", {}, el("img", { src: p.data, alt: p.name }), el("figcaption", {}, p.name)))));
  }
  app.append(el("h2", { id: "episodes" }, "Episodes"), episodeList(filters));
  if (query) document.getElementById("episodes").scrollIntoView();
}
const HEADLINE = ["success", "strict_success", "itemized_amount", "input_tokens", "peak_tokens", "steps"];
function metricsTable(id, metrics) {
  const head = el("tr", {}, el("th", {}, "config"), el("th", {}, "policy"), el("th", {}, "user"),
                  el("th", { class: "num" }, "episodes"), metrics.map((m) => el("th", { class: "num" }, m.label)));
  const rows = DATA.configs.map((c) => el("tr", { "data-config": c.config },
    el("td", {}, filterLink({ config: c.config }, c.config)), el("td", {}, c.policy), el("td", {}, c.user),
    el("td", { class: "num" }, filterLink({ config: c.config }, String(c.n_episodes))),
    metrics.map((m) => {
      const [value, interval] = formatEstimate(m, c.estimates[m.key]);
      const target = m.key === "success" ? { config: c.config, outcome: "success" } : { config: c.config };
      return el("td", { class: "num" }, filterLink(target, value), el("div", { class: "ci" }, interval));
    })));
  return el("table", { id }, el("thead", {}, head), el("tbody", {}, rows));
}
function resultsTable() {
  const headline = DATA.metrics.filter((m) => HEADLINE.includes(m.key)), rest = DATA.metrics.filter((m) => !HEADLINE.includes(m.key));
  const note = el("p", { class: "ci" }, "Intervals: ", DATA.configs.map((c) => `${c.config} ${c.interval}`).join("; "),
                  ". Each number links to the episodes behind it.");
  return el("div", {}, metricsTable("results", headline), note,
            rest.length ? el("details", {}, el("summary", {}, "More metrics"), metricsTable("more-results", rest)) : null);
}
function taxonomyTable() {
  const outcomes = [...new Set(DATA.episodes.map((e) => e.outcome))].sort((a, b) =>
    (a === "success") - (b === "success") || a.localeCompare(b));
  const configs = DATA.configs.map((c) => c.config);
  const count = (config, outcome) => DATA.episodes.filter((e) => e.config === config && e.outcome === outcome).length;
  const head = el("tr", {}, el("th", {}, "outcome"), configs.map((c) => el("th", { class: "num" }, c)));
  const rows = outcomes.map((o) => el("tr", {}, el("td", {}, OUTCOME_LABEL(o)), configs.map((c) => {
    const n = count(c, o);
    return el("td", { class: "num" }, n ? filterLink({ config: c, outcome: o }, String(n)) : "0");
  })));
  return el("table", { id: "taxonomy" }, el("thead", {}, head), el("tbody", {}, rows));
}
function episodeList(filters) {
  const options = (key) => [...new Set(DATA.episodes.map((e) => e[key]).filter((v) => v !== undefined))].sort();
  const select = (key, label) => el("label", {}, label, el("select", { name: key, onchange: (event) => {
    const next = { ...filters, [key]: event.target.value };
    location.hash = `#overview/${new URLSearchParams(Object.entries(next).filter(([, v]) => v))}`;
  } }, el("option", { value: "" }, "all"), options(key === "task" ? "task_id" : key).map((v) =>
    el("option", { value: v, selected: filters[key] === String(v) }, key === "outcome" ? OUTCOME_LABEL(v) : v))));
  const shown = DATA.episodes.filter((e) => (!filters.config || e.config === filters.config) &&
    (!filters.task || e.task_id === filters.task) && (!filters.outcome || e.outcome === filters.outcome) &&
    (!filters.expense_type || e.expense_type === filters.expense_type));
  const head = el("tr", {}, ["config", "task", "run", "expense type", "difficulty", "outcome", "strict"].map((h) => el("th", {}, h)),
                  ["steps", "input tokens", "peak tokens"].map((h) => el("th", { class: "num" }, h)), el("th", {}, ""));
  const rows = shown.slice(0, 2000).map((e) => el("tr", { "data-episode": e.i },
    el("td", {}, e.config), el("td", {}, e.task_id), el("td", {}, e.run), el("td", {}, e.expense_type || ""),
    el("td", {}, e.difficulty || ""), el("td", { class: e.outcome === "success" ? "ok" : "bad" }, OUTCOME_LABEL(e.outcome)),
    el("td", {}, e.strict ? "yes" : "no"), el("td", { class: "num" }, e.steps ?? "–"),
    el("td", { class: "num" }, grouped(e.input_tokens)), el("td", { class: "num" }, grouped(e.peak_tokens)),
    el("td", {}, el("a", { href: `#episode/${e.i}` }, "open"))));
  return el("div", {},
    el("div", { class: "filters" }, select("config", "configuration"), select("task", "task"),
       select("outcome", "outcome"), select("expense_type", "expense type"),
       el("span", { class: "count", id: "episode-count" }, `${shown.length} of ${DATA.episodes.length} episodes`)),
    el("table", { id: "episode-list" }, el("thead", {}, head), el("tbody", {}, rows)));
}

// --- charts -------------------------------------------------------------------------------------
function lineChart(points, { width = 320, height = 90, caption, selected, step = false }) {
  const svg = svgEl("svg", { width, height, role: "img", "aria-label": caption });
  const values = points.map((p) => p[1]).filter((v) => Number.isFinite(v));
  if (!values.length) return el("div", { class: "chart" }, el("div", { class: "caption" }, `${caption}: no data`));
  const maxX = Math.max(1, ...points.map((p) => p[0])), maxY = Math.max(...values, 0), minY = Math.min(...values, 0);
  const x = (v) => 4 + (v / maxX) * (width - 8), y = (v) => height - 4 - ((v - minY) / ((maxY - minY) || 1)) * (height - 8);
  let d = "";
  points.forEach(([px, py], i) => {
    if (!Number.isFinite(py)) return;
    if (step && i > 0) d += `L${x(px)},${y(points[i - 1][1])}`;
    d += `${d ? "L" : "M"}${x(px)},${y(py)}`;
  });
  svg.append(svgEl("path", { d, fill: "none", stroke: "#0b5cad", "stroke-width": 1.5 }));
  const finite = points.filter(([, py]) => Number.isFinite(py));
  if (finite.length === 1) {  // a path through one point draws nothing: mark the point
    svg.append(svgEl("circle", { cx: x(finite[0][0]), cy: y(finite[0][1]), r: 3, fill: "#0b5cad" }));
  }
  if (selected !== undefined && selected <= maxX) {
    svg.append(svgEl("line", { x1: x(selected), x2: x(selected), y1: 0, y2: height, stroke: "#9a6700", "stroke-dasharray": "3 2" }));
  }
  return el("div", { class: "chart" }, svg, el("div", { class: "caption" }, `${caption} (max ${grouped(maxY)})`));
}
const amount = (text) => Number(String(text).replaceAll(",", ""));

// --- one episode --------------------------------------------------------------------------------
function messageBox(row, mark, { collapsed = false, only = false } = {}) {
  const [role, text, detail, tokens] = row;
  const calls = Array.isArray(detail) ? detail.map(([name, args]) => `${name}(${args})`).join("\n") : "";
  const box = el("div", { class: `msg ${mark}${collapsed ? " collapsed" : ""}${only ? " only" : ""}`, "data-mark": mark },
    el("div", { class: "head", onclick: () => box.classList.toggle("collapsed") },
       el("strong", {}, role), mark !== "kept" ? el("span", { class: `tag ${mark}` }, mark) : null,
       el("span", { class: "tokens" }, `${grouped(tokens)} tokens`)),
    el("pre", {}, [text, calls].filter(Boolean).join("\n")));
  return box;
}
// The context of one model call, in the order the model saw it, with the transcript messages it
// did not see greyed out where they stood.
function contextView(record, call, table, highlight) {
  const entry = record.calls[call];
  if (!entry || !entry.shown) {
    return el("p", { class: "notice" }, "This run did not store what the model was shown at each call.");
  }
  const out = [], pruned = new Set(entry.pruned), transcriptPrefix = record.transcript.slice(0, entry.assistant);
  let next = 0;
  const flushPruned = (upTo) => {
    for (; next < upTo; next++) if (pruned.has(next)) out.push(messageBox(table.get(transcriptPrefix[next]), "pruned", { collapsed: true }));
  };
  for (const [id, mark, twin] of entry.shown) {
    const position = twin ?? -1;  // kept, rewritten and folded-summary messages carry their transcript position
    if (position >= 0) { flushPruned(position); next = Math.max(next, position + 1); }
    const row = table.get(id);  // the system prompt is long and the same at every call: folded until clicked
    out.push(messageBox(row, mark, { only: highlight && highlight.has(id), collapsed: row[0] === "system" && mark === "kept" }));
  }
  flushPruned(transcriptPrefix.length);
  const shownTokens = entry.shown.reduce((sum, [id]) => sum + table.get(id)[3], 0);
  return el("div", {}, el("p", { class: "ci" },
    `Model call ${call}: ${entry.shown.length} messages shown (${grouped(shownTokens)} tokens of messages; ` +
    `${grouped(entry.input_tokens)} with the tool schemas${cacheText(entry)}), ${entry.pruned.length} transcript messages not shown.`),
    (entry.role_calls || []).map((c) => [el("p", { class: "ci" },
      `${c.role} model call in this step: ${grouped(c.input_tokens)} input tokens${cacheText(c)}, ${grouped(c.output_tokens)} output.`),
      roleRequest(c, table)]),
    out);
}
// What a kept role's call (the LLM summarizer's) was sent and answered, folded until opened.
function roleRequest(c, table) {
  if (!c.sent) return null;
  return el("details", { class: "role-request" },
    el("summary", {}, `What the ${c.role} was sent (${c.sent.length} messages) and answered`),
    c.sent.map((id) => messageBox(table.get(id), "request", { collapsed: table.get(id)[0] === "system" })),
    messageBox(table.get(c.answer), "answer"));
}
// A call's cacheable prefix (o200k, an upper bound of a provider's prompt cache) and the service's own counts beside it.
function cacheText(c) {
  if (c.cacheable_prefix_tokens === undefined) return "";
  const share = c.input_tokens ? ` (${Math.round((100 * c.cacheable_prefix_tokens) / c.input_tokens)}%)` : "";
  let text = ` (o200k); cacheable prefix ${grouped(c.cacheable_prefix_tokens)}${share}`;
  if (c.reported_input_tokens) {
    const spread = c.input_tokens ? (100 * (c.reported_input_tokens / c.input_tokens - 1)).toFixed(1) : "–";
    text += `; the service reported ${grouped(c.reported_input_tokens)} input (${spread > 0 ? "+" : ""}${spread}% vs o200k)`;
  }
  if (c.provider_cached_tokens !== undefined && c.provider_cached_tokens !== null) text += `, ${grouped(c.provider_cached_tokens)} cached`;
  if (c.provider_cache_write_tokens !== undefined && c.provider_cache_write_tokens !== null) text += `, ${grouped(c.provider_cache_write_tokens)} written to its cache`;
  if (c.reasoning_tokens !== undefined && c.reasoning_tokens !== null) text += `, ${grouped(c.reasoning_tokens)} reasoning tokens`;
  return text;
}
// The grade's own fields in its order (each workflow grades in its terms), success first and collateral last.
function gradeTable(record) {
  const g = record.grade || {};
  const list = (v) => (v.length ? v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join("; ") : "none");
  const shown = (v) => (Array.isArray(v) ? list(v) : v !== null && typeof v === "object" ? JSON.stringify(v) : v);
  const first = ["success", "strict_success"].filter((k) => k in g);
  const middle = Object.keys(g).filter((k) => !first.includes(k) && k !== "collateral");
  const name = (k) => (k === "collateral" ? "collateral changes" : k.replace(/_/g, " "));
  const rows = [...first, ...middle, ...("collateral" in g ? ["collateral"] : [])].map((k) => [name(k), shown(g[k])]);
  rows.push(["termination", record.termination], ["failure category", record.failure_category || "–"]);
  return el("table", { class: "grade", id: "grade" }, rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, String(v ?? "–")))));
}
function eventLabel(event) {
  if (event.kind === "tool") return `${event.name}(${short(event.text, 70)})`;
  if (event.kind === "error") return `error: ${short(event.text.replace(/\s+/g, " "), 80)}`;
  if (event.kind === "user") return `user: ${short(event.text, 80)}`;
  return `agent to user: ${short(event.text, 80)}`;
}
function siblings(e) {
  return DATA.episodes.filter((o) => o.task_id === e.task_id && o.task_set === e.task_set && o.i !== e.i);
}
// Names for two compared episodes: the config, plus the task and the run where those differ.
function sideLabels(a, b) {
  const task = (e) => (a.task_set !== b.task_set ? `${e.task_set}:${e.task_id}` : e.task_id);
  const label = (e) => [e.config, task(a) !== task(b) ? task(e) : "", a.run !== b.run ? `run ${e.run}` : ""].filter(Boolean).join(" ");
  const [la, lb] = [label(a), label(b)];
  return la === lb ? [`A: ${la}`, `B: ${lb}`] : [la, lb];
}
function compareTitle(a, b) {
  const [la, lb] = sideLabels(a, b);
  if (a.task_id !== b.task_id || a.task_set !== b.task_set) return `${la} vs ${lb} (different tasks)`;
  return `${a.task_id}${a.run === b.run ? ` · run ${a.run}` : ""}: ${la} vs ${lb}`;
}
async function renderEpisode(index, call) {
  const e = DATA.episodes[index];
  if (!e) { app.replaceChildren(el("p", {}, "No such episode.")); return; }
  const record = await episode(index);
  const table = await messages(allIds(record));
  const selected = Math.min(call ?? 0, Math.max(0, record.calls.length - 1));
  const others = siblings(e);
  const header = el("div", {}, el("h2", {}, `${e.config} · ${e.task_id} · run ${e.run} · `,
      el("span", { class: e.outcome === "success" ? "ok" : "bad" }, OUTCOME_LABEL(e.outcome))),
    others.length ? el("p", {}, "Compare with: ", others.map((o) => [el("a", { href: `#compare/${index}/${o.i}` }, sideLabels(e, o)[1]), " "])) : null);
  const timeline = el("ol", {}, record.events.map((event) => el("li", {
      class: `ev-${event.kind}${event.call === selected ? " selected" : ""}`, "data-call": event.call,
      onclick: () => { location.hash = `#episode/${index}/${event.call}`; } },
    el("span", { class: "call" }, `#${event.call}`), eventLabel(event))));
  const sizes = record.calls.map((c, i) => [i, c.input_tokens ?? NaN]);
  const cacheable = record.calls.map((c, i) => [i, c.cacheable_prefix_tokens ?? NaN]);
  const progress = record.progress.map(([i, v]) => [i, amount(v)]);
  app.replaceChildren(header, el("div", { class: "episode" },
    el("div", { class: "timeline" }, el("h3", {}, `Timeline (${record.calls.length} model calls)`), timeline),
    el("div", {},
      el("div", { class: "charts" }, lineChart(sizes, { caption: "context size (input tokens) per model call", selected }),
         lineChart(cacheable, { caption: "cacheable prefix (tokens) per model call", selected }),
         lineChart(progress, { caption: `${record.progress_label} per model call`, selected, step: true })),
      el("h3", {}, "Grade"), gradeTable(record),
      el("h3", {}, `What the model was shown at call ${selected}`),
      el("div", { class: "context", id: "context" }, contextView(record, selected, table)))));
}

// --- compare ------------------------------------------------------------------------------------
function actionAt(record, call) {
  return record.events.filter((e) => e.call === call && (e.kind === "tool" || e.kind === "agent"))
    .map((e) => (e.kind === "tool" ? `${e.name}(${e.text})` : `to user: ${e.text}`)).join("; ");
}
async function renderCompare(left, right, call) {
  const [a, b] = [DATA.episodes[left], DATA.episodes[right]];
  if (!a || !b) { app.replaceChildren(el("p", {}, "No such episodes.")); return; }
  const [ra, rb] = [await episode(left), await episode(right)];
  const table = await messages([...allIds(ra), ...allIds(rb)]);
  const n = Math.max(ra.calls.length, rb.calls.length);
  let first = -1;
  const rows = [];
  for (let k = 0; k < n; k++) {
    const [actA, actB] = [actionAt(ra, k), actionAt(rb, k)];
    const idsA = new Set((ra.calls[k]?.shown || []).map((s) => s[0])), idsB = new Set((rb.calls[k]?.shown || []).map((s) => s[0]));
    const onlyA = [...idsA].filter((id) => !idsB.has(id)).length, onlyB = [...idsB].filter((id) => !idsA.has(id)).length;
    const diverges = actA !== actB;
    if (diverges && first < 0) first = k;
    rows.push(el("tr", { class: [diverges ? "diverge" : "", k === first ? "first" : "", k === call ? "selected" : ""].join(" ").trim(),
                         "data-call": k, onclick: () => { location.hash = `#compare/${left}/${right}/${k}`; } },
      el("td", { class: "num" }, k), el("td", {}, short(actA || "–", 90)), el("td", { class: "num" }, grouped(ra.calls[k]?.input_tokens)),
      el("td", {}, short(actB || "–", 90)), el("td", { class: "num" }, grouped(rb.calls[k]?.input_tokens)),
      el("td", { class: "num" }, ra.calls[k] && rb.calls[k] ? `${onlyA} / ${onlyB}` : "–")));
  }
  const selected = call ?? Math.max(first, 0);
  const idsAt = (r) => new Set((r.calls[selected]?.shown || []).map((s) => s[0]));
  const [sa, sb] = [idsAt(ra), idsAt(rb)];
  const onlyIn = (x, y) => new Set([...x].filter((id) => !y.has(id)));
  const [labelA, labelB] = sideLabels(a, b);
  app.replaceChildren(el("div", { class: "compare" },
    el("h2", {}, compareTitle(a, b)),
    el("p", {}, first < 0 ? "The two episodes take the same actions at every model call."
      : `Actions first diverge at model call ${first} (marked); highlighted rows take different actions. ` +
        "The last column counts messages shown to one side only."),
    el("table", { id: "compare-table" }, el("thead", {}, el("tr", {}, el("th", { class: "num" }, "call"),
      el("th", {}, `${labelA} action`), el("th", { class: "num" }, "tokens"), el("th", {}, `${labelB} action`),
      el("th", { class: "num" }, "tokens"), el("th", { class: "num" }, "only A / only B"))), el("tbody", {}, rows)),
    el("h3", {}, `Contexts at model call ${selected} (messages only one side saw are outlined)`),
    el("div", { class: "cols" },
      el("div", { id: "context-a" }, el("h3", {}, el("a", { href: `#episode/${left}/${selected}` }, labelA)), contextView(ra, selected, table, onlyIn(sa, sb))),
      el("div", { id: "context-b" }, el("h3", {}, el("a", { href: `#episode/${right}/${selected}` }, labelB)), contextView(rb, selected, table, onlyIn(sb, sa))))));
}

// --- routing ------------------------------------------------------------------------------------
async function route() {
  const [view, ...rest] = location.hash.replace(/^#/, "").split("/");
  try {
    if (view === "episode") await renderEpisode(Number(rest[0]), rest[1] === undefined ? undefined : Number(rest[1]));
    else if (view === "compare") await renderCompare(Number(rest[0]), Number(rest[1]), rest[2] === undefined ? undefined : Number(rest[2]));
    else renderOverview(rest.join("/"));
  } catch (error) {
    app.replaceChildren(el("p", { class: "bad" }, `Could not show this view: ${error}`));
    throw error;
  }
  document.body.dataset.view = view || "overview";
}
document.getElementById("title").textContent = `erp-sim run: ${DATA.title}`;
document.getElementById("agent-note").textContent = DATA.scripted ? "agent: scripted (not an LLM)" : `agent: ${DATA.agents.join(", ")}`;
window.addEventListener("hashchange", route);
route();
