// The dashboard's pages: a hash router, each page a render() that fetches /api/... and fills #page. The server's
// event stream (/api/events) ticks every second; the current page then reloads its data (never its forms, which
// live outside the data containers, so what is being typed stays).
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const page = $("#page");
let readOnly = false;
let current = null;  // {refresh: async fn}
let broker = "";     // "" = the first broker

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
const numberFormat = new Intl.NumberFormat("en-US");  // one formatter: toLocaleString makes one per call
const fmtNum = n => (n === null || n === undefined || n === "") ? "" : numberFormat.format(Number(n));
const fmtTime = ms => ms ? new Date(ms).toISOString().replace("T", " ").replace("Z", "") : "never";

function notice(text, kind = "error") {
  const el = $("#notice");
  el.textContent = text;
  el.className = kind;
  el.hidden = !text;
}

async function api(path, body) {
  const sep = path.includes("?") ? "&" : "?";
  const url = broker ? `${path}${sep}broker=${encodeURIComponent(broker)}` : path;
  const init = body === undefined ? {} : {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify(body)};
  const resp = await fetch(url, init);
  const data = await resp.json().catch(() => ({error: `HTTP ${resp.status}`}));
  if (!resp.ok) throw new Error(data.error || `HTTP ${resp.status}`);
  return data;
}

function table(id, columns, rows, total) {
  const head = columns.map(c => `<th class="${c.num ? "num" : ""}">${esc(c.title)}</th>`).join("");
  const cell = (c, r) => {
    const value = r[c.key];  // a totals row has words ("total") or nothing in some number columns
    const v = c.render ? c.render(r) : esc(c.num && typeof value === "number" ? fmtNum(value) : value ?? "");
    return `<td class="${c.num ? "num" : ""}" data-col="${esc(c.key || c.title)}">${v}</td>`;
  };
  const body = rows.map(r => `<tr>${columns.map(c => cell(c, r)).join("")}</tr>`).join("");
  const foot = total ? `<tr class="total">${columns.map(c => cell(c, total)).join("")}</tr>` : "";
  return `<table data-testid="${id}"><thead><tr>${head}</tr></thead><tbody>${body}${foot}</tbody></table>`;
}

// Long lists (1,000 topics) show their first PAGE rows matching the filter box: a page paints fast, and the
// filter finds the rest. "show all" lifts the limit for the current page.
const PAGE = 100;
let showAll = false;

function limited(rows, key) {
  const filter = ($("#filter")?.value || "").trim().toLowerCase();
  const matching = filter ? rows.filter(r => String(r[key]).toLowerCase().includes(filter)) : rows;
  const shown = showAll ? matching : matching.slice(0, PAGE);
  const more = matching.length - shown.length;
  const note = `<p class="muted" data-testid="shown">${shown.length} of ${matching.length}` +
    (filter ? ` matching "${esc(filter)}"` : "") + (more ? ` · <a href="#" id="show-all">show all</a>` : "") + `</p>`;
  return [shown, note];
}

function bindShowAll() {
  const a = $("#show-all");
  if (a) a.onclick = ev => { ev.preventDefault(); showAll = true; current.refresh(); };
}

const filterBox = what => `<label>filter <input id="filter" placeholder="${esc(what)} name contains"></label>`;

// Namespaces (a 4.x client's setNamespace makes `ns%Orders`): a select of the namespaces present, rows grouped by
// namespace, and a namespace column when some row has one.
const namespaceBox = () => `<label>namespace <select id="namespace"><option value="*">all</option></select></label>`;

function byNamespace(rows) {
  const select = $("#namespace");
  const names = [...new Set(rows.map(r => r.namespace || ""))].sort();
  const wanted = select ? select.value : "*";
  if (select) {
    select.innerHTML = `<option value="*">all</option>` +
      names.map(n => `<option value="${esc(n)}">${n ? esc(n) : "(none)"}</option>`).join("");
    select.value = wanted === "*" || names.includes(wanted) ? wanted : "*";
  }
  const chosen = select && select.value !== "*" ? rows.filter(r => (r.namespace || "") === select.value) : rows;
  const grouped = chosen.slice().sort((a, b) => (a.namespace || "").localeCompare(b.namespace || ""));
  return [grouped, names.some(n => n) ? [{title: "namespace", key: "namespace"}] : []];
}

function formData(form) {
  const out = {};
  for (const [k, v] of new FormData(form).entries()) out[k] = v;
  return out;
}

function bindForm(sel, handler) {
  const form = $(sel);
  if (!form) return;
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    try {
      await handler(formData(form), ev.submitter);
    } catch (e) {
      notice(e.message);
    }
  });
}

// -- pages -------------------------------------------------------------------------------------------
// Charts: the broker's samples (/api/series/..., series.py) as SVG drawn here, no library: one line per series
// (a missing sample breaks it), the events as dashed vertical lines (hover for what happened), the latest value
// of each series in the legend.
const COLORS = {put: "#2563eb", get: "#16a34a", diff: "#dc2626", ready: "#d97706", inflight: "#9333ea"};
const LABELS = {put: "put/s", get: "got/s", diff: "behind", ready: "ready", inflight: "in flight"};
const clock = ms => new Date(ms).toISOString().slice(11, 19);

// A chart's data changes once a sample (every sampleSeconds): fetched again only then, not at every refresh.
const seriesCache = new Map();  // url -> {at, data}
async function series(path) {
  const hit = seriesCache.get(path + broker);
  if (hit && Date.now() - hit.at < (hit.data.sampleSeconds || 5) * 1000) return hit.data;
  const data = await api(path);
  seriesCache.set(path + broker, {at: Date.now(), data});
  return data;
}

function chart(id, title, data, names) {
  const t = data.t || [];
  const last = n => { const v = (data.series[n] || []).filter(x => x !== null); return v.length ? v[v.length - 1] : null; };
  const legend = names.map(n => `<span class="key" data-series="${n}" data-last="${last(n) ?? ""}">` +
    `<i style="background:${COLORS[n]}"></i>${esc(LABELS[n])} ${last(n) === null ? "–" : fmtNum(last(n))}</span>`).join(" ");
  const kept = data.keepSeconds >= 3600 ? `${data.keepSeconds / 3600} h` : `${Math.round(data.keepSeconds / 60)} min`;
  const head = `<figcaption>${esc(title)} <span class="muted">(every ${data.sampleSeconds} s, the last ${kept})</span> ${legend}</figcaption>`;
  if (data.tracked === false)
    return `<figure class="chart" data-testid="${id}">${head}<p class="muted">not charted: the broker keeps at most 1,000 series of each kind</p></figure>`;
  if (t.length < 2)
    return `<figure class="chart" data-testid="${id}" data-points="${t.length}">${head}<p class="muted">collecting samples…</p></figure>`;
  const W = 640, H = 150, L = 52, R = 10, T = 8, B = 18;
  const t0 = t[0], t1 = Math.max(t[t.length - 1], t0 + 1);
  let max = 0;
  for (const n of names) for (const v of data.series[n] || []) if (v !== null && v > max) max = v;
  max = max > 0 ? max : 1;
  const x = ms => (L + (ms - t0) / (t1 - t0) * (W - L - R)).toFixed(1);
  const y = v => (T + (1 - v / max) * (H - T - B)).toFixed(1);
  const lines = names.map(n => {
    let d = "", pen = "M";
    (data.series[n] || []).forEach((v, i) => {
      if (v === null) { pen = "M"; return; }
      d += `${pen}${x(t[i])},${y(v)} `;
      pen = "L";
    });
    return `<path data-series="${n}" d="${d.trim()}" fill="none" stroke="${COLORS[n]}" stroke-width="1.5"/>`;
  }).join("");
  const marks = (data.events || []).filter(e => e.t >= t0 && e.t <= t1).map(e =>
    `<g class="event" data-kind="${esc(e.kind)}"><line x1="${x(e.t)}" x2="${x(e.t)}" y1="${T}" y2="${H - B}"
      stroke="#64748b" stroke-dasharray="3,3"/><title>${esc(clock(e.t) + " " + e.text)}</title>
      <text x="${Number(x(e.t)) + 2}" y="${T + 8}" font-size="9" fill="#475569">${esc(e.kind)}</text></g>`).join("");
  const axes = `<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#cbd5e1"/>
    <text x="${L - 4}" y="${T + 8}" text-anchor="end" font-size="10">${fmtNum(Math.round(max))}</text>
    <text x="${L - 4}" y="${H - B}" text-anchor="end" font-size="10">0</text>
    <text x="${L}" y="${H - 4}" font-size="10">${clock(t0)}</text>
    <text x="${W - R}" y="${H - 4}" text-anchor="end" font-size="10">${clock(t1)}</text>`;
  return `<figure class="chart" data-testid="${id}" data-points="${t.length}" data-events="${(data.events || []).length}">
    ${head}<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(title)}">${axes}${lines}${marks}</svg></figure>`;
}

const pages = {};

pages.overview = async () => {
  page.innerHTML = `<h2>Overview</h2><div id="data"></div>`;
  return async () => {
    const o = await api("/api/overview");
    readOnly = o.readOnly;
    document.body.classList.toggle("read-only", readOnly);
    const data = await series("/api/series/overview");
    $("#data").innerHTML = chart("chart-broker", "messages per second", data, ["put", "get"]) + `<div class="cards">
        <div class="card">cluster<b data-testid="cluster">${esc(o.cluster)}</b>name server ${esc(o.namesrv)}</div>
        <div class="card">brokers<b>${o.brokers.length}</b>${o.stoppedBrokers.length ? "stopped: " + esc(o.stoppedBrokers.join(", ")) : "all running"}</div>
        <div class="card">gRPC (5.x clients)<b>${esc(o.grpc || "off")}</b>wire trace: ${esc(o.trace || "off")}</div>
      </div><h3>Brokers</h3>` + table("brokers", [
        {title: "broker", key: "name"}, {title: "address", key: "addr"}, {title: "topics", key: "topics", num: 1},
        {title: "groups", key: "groups", num: 1}, {title: "put/s", key: "putTps", num: 1},
        {title: "get/s", key: "getTps", num: 1}, {title: "messages put", key: "messagesPut", num: 1},
        {title: "store bytes", key: "storeBytes", num: 1}, {title: "commitlog min", key: "commitlogMinOffset", num: 1},
        {title: "commitlog max", key: "commitlogMaxOffset", num: 1},
        {title: "uptime", render: r => esc(Math.round(r.uptimeSeconds) + " s")}], o.brokers) +
      `<label>broker shown on the other pages <select id="broker-pick">${o.brokers.map(b =>
        `<option ${b.name === broker ? "selected" : ""}>${esc(b.name)}</option>`).join("")}</select></label>`;
    $("#broker-pick").addEventListener("change", ev => { broker = ev.target.value; });
  };
};

pages.topics = async () => {
  page.innerHTML = `<h2>Topics</h2>
    <form id="create-topic" class="action"><label>topic <input name="topic" required></label>
      <label>queues <input name="queues" value="4" size="4"></label><button>Create</button></form>
    ${filterBox("topic")} ${namespaceBox()}
    <label><input type="checkbox" id="system"> show system, retry and DLQ topics</label><div id="data"></div>`;
  $("#filter").addEventListener("input", () => current.refresh());
  $("#namespace").addEventListener("change", () => current.refresh());
  bindForm("#create-topic", async d => {
    const r = await api("/api/topics", d);
    notice(`topic ${r.created} created with ${r.queues} queues`, "ok");
    await current.refresh();
  });
  $("#system").addEventListener("change", () => current.refresh());
  return async () => {
    const [all, nsColumn] = byNamespace(await api("/api/topics" + ($("#system").checked ? "?system=true" : "")));
    const [rows, note] = limited(all, "topic");
    $("#data").innerHTML = note + table("topics", [...nsColumn,
      {title: "topic", key: "topic", render: r => `<a href="#/topic/${encodeURIComponent(r.topic)}">${esc(r.topic)}</a>`},
      {title: "queues", key: "readQueues", num: 1}, {title: "messages", key: "messages", num: 1},
      {title: "last stored", render: r => esc(fmtTime(r.lastStoreTime))}, {title: "kind", key: "kind"},
      {title: "", render: r => `<button class="danger action" data-delete="${esc(r.topic)}">Delete</button>`}], rows);
    bindShowAll();
    for (const btn of page.querySelectorAll("[data-delete]")) {
      btn.onclick = async () => {
        if (!confirm(`Delete topic ${btn.dataset.delete} and its messages' queues?`)) return;
        try { await api(`/api/topics/${encodeURIComponent(btn.dataset.delete)}/delete`, {}); await current.refresh(); }
        catch (e) { notice(e.message); }
      };
    }
  };
};

pages.topic = async (name) => {
  page.innerHTML = `<h2>Topic ${esc(name)}</h2><div id="data"></div>
    <h3>Send a test message</h3>
    <form id="send" class="action"><input type="hidden" name="topic" value="${esc(name)}">
      <label>tag <input name="tag"></label><label>keys <input name="keys"></label>
      <label>body <textarea name="body" rows="2" cols="40"></textarea></label>
      <label>properties (k=v, one per line) <textarea name="props" rows="2" cols="20"></textarea></label>
      <button>Send</button></form>
    <p><a href="#/messages?topic=${encodeURIComponent(name)}">Browse its messages</a></p>`;
  bindForm("#send", async d => {
    const properties = {};
    for (const line of (d.props || "").split("\n")) {
      const i = line.indexOf("=");
      if (i > 0) properties[line.slice(0, i).trim()] = line.slice(i + 1);
    }
    const r = await api("/api/send", {topic: d.topic, tag: d.tag, keys: d.keys, body: d.body, properties});
    notice(`sent ${r.msgId} to queue ${r.queueId} at offset ${r.queueOffset}`, "ok");
  });
  return async () => {
    const t = await api(`/api/topics/${encodeURIComponent(name)}`);
    const data = await series(`/api/series/topics/${encodeURIComponent(name)}`);
    $("#data").innerHTML = chart("chart-topic", "messages put and pulled per second", data, ["put", "get"]) + table("queues", [
      {title: "queue", key: "queueId", num: 1}, {title: "min offset", key: "minOffset", num: 1},
      {title: "max offset", key: "maxOffset", num: 1}, {title: "messages", key: "messages", num: 1},
      {title: "last stored", render: r => esc(fmtTime(r.lastStoreTime))}], t.queues,
      {queueId: "total", messages: t.messages, lastStoreTime: t.lastStoreTime}) +
      `<p>groups with offsets: ${t.groups.map(g => `<a href="#/group/${encodeURIComponent(g)}">${esc(g)}</a>`).join(", ") || "none"}</p>`;
  };
};

function messageTable(rows, topic) {
  return table("messages", [
    {title: "msgId", render: r => `<a href="#/message/${encodeURIComponent(r.msgId)}?topic=${encodeURIComponent(topic || r.topic)}">${esc(r.msgId)}</a>`},
    {title: "queue", key: "queueId", num: 1}, {title: "offset", key: "queueOffset", num: 1},
    {title: "tags", key: "tags"}, {title: "keys", key: "keys"}, {title: "stored", render: r => esc(fmtTime(r.storeTimestamp))},
    {title: "reconsume", key: "reconsumeTimes", num: 1},
    {title: "", render: r => `<a href="#/story/${encodeURIComponent(r.msgId)}?topic=${encodeURIComponent(topic || r.topic)}">story</a>`},
    {title: "body", render: r => `${r.bodyKind === "binary" ? '<span class="marker">binary</span> ' : ""}${esc(r.body)}${r.truncated ? ' <span class="marker">truncated</span>' : ""}`}],
    rows);
}

pages.messages = async (_, params) => {
  const p = new URLSearchParams(params || "");
  page.innerHTML = `<h2>Messages</h2>
    <form id="browse"><label>topic <input name="topic" value="${esc(p.get("topic") || "")}" required></label>
      <label>queue <input name="queue" size="4" value="${esc(p.get("queue") || "")}" placeholder="all"></label>
      <label>from offset <input name="offset" size="8" value="${esc(p.get("offset") || "0")}"></label>
      <label>count <input name="count" size="4" value="${esc(p.get("count") || "20")}"></label>
      <label>or stored at/after <input name="time" placeholder="2026-11-25T10:00:00" value="${esc(p.get("time") || "")}"></label>
      <label>or key <input name="key" value="${esc(p.get("key") || "")}"></label><button>Browse</button></form>
    <form id="by-id"><label>message id (offset id, or unique key with the topic) <input name="msgId" size="40"></label>
      <label>topic <input name="topic" value="${esc(p.get("topic") || "")}"></label><button>Open</button></form>
    <div id="data"></div>`;
  bindForm("#browse", async d => { location.hash = "#/messages?" + new URLSearchParams(d); });
  bindForm("#by-id", async d => { location.hash = `#/message/${encodeURIComponent(d.msgId)}?topic=${encodeURIComponent(d.topic)}`; });
  if (!p.get("topic")) return async () => {};
  const loaded = async () => {
    const q = new URLSearchParams();
    for (const k of ["queue", "offset", "count", "time", "key"]) if (p.get(k)) q.set(k, p.get(k));
    const rows = await api(`/api/topics/${encodeURIComponent(p.get("topic"))}/messages?${q}`);
    $("#data").innerHTML = `<p data-testid="found">${rows.length} message(s)</p>` + messageTable(rows, p.get("topic"));
  };
  return loaded;
};

pages.message = async (id, params) => {
  const topic = new URLSearchParams(params || "").get("topic") || "";
  page.innerHTML = `<h2>Message ${esc(id)}</h2><div id="data"></div>`;
  const m = await api(`/api/messages/${encodeURIComponent(id)}?topic=${encodeURIComponent(topic)}`);
  const props = Object.entries(m.properties).map(([k, v]) => ({k, v}));
  $("#data").innerHTML = table("message", [{title: "field", key: "f"}, {title: "value", key: "v"}], [
      {f: "topic", v: m.topic}, {f: "queue / offset", v: `${m.queueId} / ${m.queueOffset}`},
      {f: "offset msgId", v: m.offsetMsgId}, {f: "tags", v: m.tags}, {f: "keys", v: m.keys},
      {f: "born", v: `${fmtTime(m.bornTimestamp)} at ${m.bornHost}`}, {f: "stored", v: `${fmtTime(m.storeTimestamp)} at ${m.storeHost}`},
      {f: "reconsume times", v: m.reconsumeTimes}, {f: "body size", v: m.bodySize}]) +
    `<h3>Properties</h3>` + table("properties", [{title: "name", key: "k"}, {title: "value", key: "v"}], props) +
    `<h3>Body <span class="marker" data-testid="body-kind">${esc(m.bodyKind)}</span>${m.truncated ? ' <span class="marker">truncated</span>' : ""}</h3>
     <pre data-testid="body">${esc(m.body)}</pre>
     <p><a data-testid="story-link" href="#/story/${encodeURIComponent(m.offsetMsgId)}?topic=${encodeURIComponent(m.topic)}">Its whole story</a></p>`;
  return null;  // a message does not change: no refresh
};

pages.groups = async () => {
  page.innerHTML = `<h2>Consumer groups</h2>${filterBox("group")} ${namespaceBox()}<div id="data"></div>`;
  $("#filter").addEventListener("input", () => current.refresh());
  $("#namespace").addEventListener("change", () => current.refresh());
  return async () => {
    const [all, nsColumn] = byNamespace(await api("/api/groups"));
    const [rows, note] = limited(all, "group");
    $("#data").innerHTML = note + table("groups", [...nsColumn,
      {title: "group", key: "group", render: r => `<a href="#/group/${encodeURIComponent(r.group)}">${esc(r.group)}</a>`},
      {title: "state", key: "state"}, {title: "clients", key: "clients", num: 1},
      {title: "topics", render: r => esc(r.topics.join(", "))}, {title: "messages behind", key: "diff", num: 1},
      {title: "popped, not acked", key: "inflight", num: 1}], rows);
    bindShowAll();
  };
};

pages.group = async (name) => {
  const g = encodeURIComponent(name);
  page.innerHTML = `<h2>Group ${esc(name)}</h2><div id="data"></div>
    <h3>Reset offsets</h3>
    <form id="reset" class="action"><label>topic <input name="topic" required></label>
      <label>to <select name="mode"><option value="time">a time</option><option value="earliest">earliest</option>
        <option value="latest">latest</option><option value="offset">an offset (one queue)</option></select></label>
      <label>time <input name="time" placeholder="epoch ms or 2026-11-25T10:00:00"></label>
      <label>queue <input name="queueId" size="4" placeholder="all"></label>
      <label>offset <input name="offset" size="8"></label>
      <button name="do" value="preview">Preview</button><button name="do" value="apply">Apply</button></form>
    <div id="preview"></div>
    <h3>Where is a message for this group?</h3>
    <form id="where"><label>message id <input name="msgId" size="40" required></label>
      <label>topic <input name="topic"></label><button>Find</button></form><div id="where-result"></div>
    <h3>Popped, not acked (POP)</h3><div id="unacked"></div>
    <h3>Offset history</h3><div id="history"></div>
    <h3>Dead-letter queue</h3><div id="dlq"></div>`;
  bindForm("#reset", async (d, submitter) => {
    const apply = submitter && submitter.value === "apply";
    const r = await api(`/api/groups/${g}/reset${apply ? "" : "/preview"}`, d);
    $("#preview").innerHTML = `<p>${apply ? "applied" : "preview (nothing changed yet)"}:</p>` +
      table("reset-targets", [{title: "queue", key: "queueId", num: 1}, {title: "from", key: "from", num: 1},
                              {title: "to", key: "to", num: 1}], r.targets);
    if (apply) notice(`reset of ${name} on ${d.topic} applied`, "ok");
  });
  bindForm("#where", async d => {
    const r = await api(`/api/groups/${g}/where?msgId=${encodeURIComponent(d.msgId)}&topic=${encodeURIComponent(d.topic)}`);
    $("#where-result").innerHTML = table("where", [{title: "where", key: "where"}, {title: "detail", key: "detail"},
      {title: "due", render: r => esc(r.dueTime ? fmtTime(r.dueTime) : "")}], r.places);
  });
  return async () => {
    const d = await api(`/api/groups/${g}`);
    const history = await api(`/api/groups/${g}/history`);
    const data = await series(`/api/series/groups/${g}`);
    $("#data").innerHTML = `<p>state: <b data-testid="group-state">${esc(d.state)}</b> · model: ${esc(d.messageModel)}
        · consume ${fmtNum(d.consumeTps)}/s${d.popInflight ? ` · popped, not acked: ${fmtNum(d.popInflight)}` : ""}
        ${d.note ? `<br><span class="muted">${esc(d.note)}</span>` : ""}</p>` +
      chart("chart-lag", "messages behind, ready and in flight", data, ["diff", "ready", "inflight"]) +
      chart("chart-get", "messages pulled per second", data, ["get"]) + `
      <h3>Clients</h3>` + (d.clients.length ? table("clients", [{title: "client id", key: "clientId"},
        {title: "address", key: "addr"}, {title: "language", key: "language"}, {title: "version", key: "version", num: 1},
        {title: "last heartbeat", render: r => esc(r.lastHeartbeatSecondsAgo + " s ago")}], d.clients)
        : `<p class="muted">offline: no client connected</p>`) +
      (d.subscriptions.length ? table("subscriptions", [{title: "topic", key: "topic"}, {title: "expression", key: "expression"},
        {title: "type", key: "type"}], d.subscriptions) : "") +
      `<h3>Progress</h3>` + table("progress", [{title: "topic", key: "topic"}, {title: "queue", key: "queueId", num: 1},
        {title: "broker offset", key: "brokerOffset", num: 1},
        {title: "committed", key: "consumerOffset", render: r => r.consumerOffset === null ? '<span class="muted">none yet</span>' : esc(fmtNum(r.consumerOffset))},
        {title: "pulled", key: "pulledOffset", render: r => r.pulledOffset === null ? '<span class="muted">none yet</span>' : esc(fmtNum(r.pulledOffset))},
        {title: "diff", key: "diff", num: 1}, {title: "inflight", key: "inflight", num: 1}, {title: "ready", key: "ready", num: 1},
        {title: "last consumed", render: r => r.lastConsumeTime === undefined ? "" : esc(fmtTime(r.lastConsumeTime))}],
        d.queues, Object.assign({topic: "total", consumerOffset: "", pulledOffset: ""}, d.totals));
    $("#history").innerHTML = table("history", [{title: "time", render: r => esc(fmtTime(r.time_ms))},
      {title: "topic", key: "topic"}, {title: "queue", key: "queue_id", num: 1}, {title: "what", key: "kind"},
      {title: "offset", key: "offset", num: 1}, {title: "before", key: "previous", num: 1}, {title: "by", key: "by"}],
      history.slice(0, 100));
    $("#unacked").innerHTML = d.unacked.length ? table("unacked", [{title: "topic", key: "topic"},
        {title: "queue", key: "queueId", num: 1}, {title: "offset", key: "offset", num: 1},
        {title: "invisible until", render: r => esc(fmtTime(r.invisibleUntil)) +
          (r.invisibleUntil <= Date.now() ? ' <span class="marker">revive due</span>' : "")}], d.unacked)
      : '<p class="muted">none</p>';
    if (document.activeElement?.closest("#dlq")) return;  // the resend form is being filled in: leave it
    // only a group whose DLQ topic exists: asking for one that does not would be a 404 at every refresh
    const dlq = d.dlq ? await api(`/api/topics/${encodeURIComponent("%DLQ%" + name)}/messages?count=50`).catch(() => null)
      : null;
    $("#dlq").innerHTML = dlq === null ? '<p class="muted">none: no message of this group went to its DLQ</p>' :
      messageTable(dlq) + '<form id="resend" class="action"><label>message id <input name="msgId" size="40"></label>' +
      `<input type="hidden" name="topic" value="%DLQ%${esc(name)}"><button>Resend to its topic</button></form>`;
    bindForm("#resend", async f => {
      const r = await api("/api/resend", f);
      notice(`sent again to ${r.topic} (queue ${r.queueId}, offset ${r.queueOffset})`, "ok");
    });
  };
};

pages.controls = async () => {
  page.innerHTML = `<h2>Test controls</h2>
    <p>These act on the broker shown (broker-a unless picked on the overview).</p>
    <p class="action"><button id="expire">Expire every stored message now</button> the store's retention, as
      <code>rocketmq_broker.expire_now()</code>: every queue's min offset moves to its max.</p>
    <p class="action"><button id="drop">Drop every client connection</button> clients reconnect, as
      <code>rocketmq_broker.drop_connections()</code>.</p>
    <form id="advance" class="action"><label>seconds <input name="seconds" value="3600" size="8"></label>
      <button>Advance the broker clock</button> everything due by then happens now: delayed messages and retries,
      POP invisible times, transaction check-backs, retention (as <code>admin advanceTime -s SECONDS</code>).</form>
    <p class="muted">Pause (SIGSTOP) stops this very process, so it is done from outside:
      <code>rocketmq_broker.pause()</code> in the pytest plugin, or <code>kill -STOP</code>.</p>
    <h3>Brokers of this process</h3>
    <p>Masters and slaves (<code>serve --slaves 1</code>): kill one as a crash, pause it (it answers nothing, its
      connections stay open), start it again on its store and port (as <code>admin killBroker</code>,
      <code>pauseBroker</code>, <code>startBroker</code>).</p><div id="cluster"></div>`;
  const controls = {running: ["kill", "pause", "stop"], paused: ["resume", "kill"], stopped: ["start"]};
  const showCluster = async () => {
    const c = await api("/api/cluster");
    $("#cluster").innerHTML = table("cluster", [{title: "broker", key: "key"}, {title: "role", key: "role"},
      {title: "address", key: "addr"}, {title: "state", render: r => `<span data-state="${esc(r.key)}">${esc(r.state)}</span>`},
      {title: "", render: r => controls[r.state].map(w =>
        `<button class="action${w === "kill" || w === "stop" ? " danger" : ""}" data-broker="${esc(r.key)}"
          data-control="${w}">${w[0].toUpperCase() + w.slice(1)}</button>`).join(" ")}], c.brokers);
    for (const btn of page.querySelectorAll("[data-control]")) {
      btn.onclick = async () => {
        try {
          const r = await api(`/api/cluster/${btn.dataset.broker}/${btn.dataset.control}`, {});
          notice(`${r.broker} ${r.done}`, "ok");
        } catch (e) { notice(e.message); }
        await showCluster();
      };
    }
  };
  await showCluster();
  bindForm("#advance", async d => {
    const r = await api("/api/controls/advance", d);
    notice(`clock now ${r.offsetMillis / 1000} s ahead: ${r.delivered} delayed message(s) delivered, ` +
           `${r.revived} POP message(s) revived, ${r.filesDeleted} file(s) expired`, "ok");
  });
  $("#expire").onclick = async () => {
    try { const r = await api("/api/controls/expire", {}); notice(`expired: ${r.deletedFiles} file(s) deleted`, "ok"); }
    catch (e) { notice(e.message); }
  };
  $("#drop").onclick = async () => {
    try { const r = await api("/api/controls/drop-connections", {}); notice(`dropped ${r.dropped} connection(s)`, "ok"); }
    catch (e) { notice(e.message); }
  };
  return null;
};

pages.trace = async () => {
  page.innerHTML = `<h2>Wire trace</h2>
    <form id="trace-filter"><label>codes <input name="codes" placeholder="PULL_MESSAGE,SEND_MESSAGE_V2"></label>
      <label>group <input name="group"></label><label>topic <input name="topic"></label><button>Filter</button></form>
    <pre id="trace" data-testid="trace"></pre>`;
  let filter = {};
  bindForm("#trace-filter", async d => { filter = d; await current.refresh(); });
  return async () => {
    const q = new URLSearchParams(Object.entries(filter).filter(([, v]) => v));
    const t = await api(`/api/trace?${q}`);
    $("#trace").textContent = t.lines.join("\n") || "(no traced request yet)";
  };
};

// -- routing and live refresh --------------------------------------------------------------------------
// A message's story (/api/messages/{id}/story, story.py): its life in order, and where it is now for each group.
pages.story = async (id, params) => {
  const topic = new URLSearchParams(params || "").get("topic") || "";
  page.innerHTML = `<h2>The story of message ${esc(id)}</h2>
    <form id="story"><label>message id (offset id, or unique key with the topic) <input name="msgId" size="40" value="${esc(id)}"></label>
      <label>topic <input name="topic" value="${esc(topic)}"></label>
      <label>or its key (with the topic: the messages with it, each with its story) <input name="key"></label>
      <button>Show</button></form><div id="data"></div>`;
  bindForm("#story", async d => {
    location.hash = d.key ? `#/messages?topic=${encodeURIComponent(d.topic)}&key=${encodeURIComponent(d.key)}`
                          : `#/story/${encodeURIComponent(d.msgId)}?topic=${encodeURIComponent(d.topic)}`;
  });
  if (!id) return null;
  return async () => {
    const s = await api(`/api/messages/${encodeURIComponent(id)}/story?topic=${encodeURIComponent(topic)}`);
    const m = s.message;
    $("#data").innerHTML = `<p>${esc(m.topic)} queue ${m.queueId} offset ${m.queueOffset} · tags ${esc(m.tags || "")} ·
        keys ${esc(m.keys || "")} · <a href="#/message/${encodeURIComponent(m.offsetMsgId)}?topic=${encodeURIComponent(m.topic)}">the message</a></p>` +
      (s.recorded ? "" : `<p class="muted">deliveries are recorded while the dashboard runs; none for this broker</p>`) +
      table("story", [{title: "time", render: r => esc(fmtTime(r.t))}, {title: "group", key: "group"},
                      {title: "what", key: "what"}, {title: "detail", key: "detail"}], s.steps) +
      `<h3>Now</h3>` + (s.now.length ? table("story-now", [{title: "group", key: "group"}, {title: "where", key: "where"},
                                                           {title: "detail", key: "detail"}], s.now)
                                     : `<p class="muted">no group has offsets in ${esc(m.topic)}</p>`);
  };
};

async function route() {
  notice("");
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, params] = hash.split("?");
  const [name, ...rest] = path.split("/");
  const key = name || "overview";
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.nav === key);
  const render = pages[key] || pages.overview;
  current = null;
  showAll = false;
  try {
    const refresh = await render(decodeURIComponent(rest.join("/")), params);
    current = refresh ? {refresh} : null;
    if (current) await current.refresh();
  } catch (e) {
    notice(e.message);
  }
}

window.addEventListener("hashchange", route);
api("/api/overview").then(o => {
  readOnly = o.readOnly;
  document.body.classList.toggle("read-only", readOnly);
}).catch(() => {});
route();

const events = new EventSource("/api/events");
events.onmessage = async () => {
  $("#live").classList.remove("stale");
  if (current) {
    try { await current.refresh(); } catch (e) { notice(e.message); }
  }
};
events.onerror = () => $("#live").classList.add("stale");
