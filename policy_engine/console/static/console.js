// The console page: polls /api/state every second and draws hand-rolled SVG charts (no network, no libraries).
"use strict";
const LOC = ["cache_local", "node_local", "rack_local", "off_switch"];
const COLOR = {cache_local: "#6a3d9a", node_local: "#33a02c", rack_local: "#ff7f00", off_switch: "#e31a1c",
               p50: "#1f78b4", p99: "#e31a1c", rate: "#1f78b4"};
const token = new URLSearchParams(location.search).get("token");
const $ = (id) => document.getElementById(id);
const NS = "http://www.w3.org/2000/svg";
const fmt = (v, d = 0) => (v === null || v === undefined || Number.isNaN(v)) ? "-" : Number(v).toFixed(d);

function el(tag, attrs) { const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]); return e; }

function axes(svg, maxY, unit) {
  svg.replaceChildren();
  svg.appendChild(el("line", {x1: 40, y1: 140, x2: 595, y2: 140, stroke: "#999"}));
  svg.appendChild(el("line", {x1: 40, y1: 10, x2: 40, y2: 140, stroke: "#999"}));
  const t = el("text", {x: 2, y: 16, "font-size": 11, fill: "#666"}); t.textContent = fmt(maxY, maxY < 10 ? 2 : 0);
  svg.appendChild(t);
  const u = el("text", {x: 2, y: 138, "font-size": 11, fill: "#666"}); u.textContent = unit || "0"; svg.appendChild(u);
}

function lines(svg, points, keys, unit) {  // one polyline per key over time
  const vals = points.flatMap((p) => keys.map((k) => p[k])).filter((v) => v !== null && v !== undefined);
  const maxY = Math.max(1e-9, ...vals);
  axes(svg, maxY, unit);
  const n = points.length;
  for (const k of keys) {
    const xy = points.map((p, i) => p[k] === null || p[k] === undefined ? null :
      `${40 + 555 * (n > 1 ? i / (n - 1) : 1)},${140 - 130 * p[k] / maxY}`).filter(Boolean);
    if (xy.length) svg.appendChild(el("polyline", {points: xy.join(" "), fill: "none", stroke: COLOR[k],
                                                   "stroke-width": 1.5, class: "line-" + k}));
  }
}

function stacked(svg, points, key) {  // share of each locality per interval, stacked to 100%
  axes(svg, 100, "%");
  const n = points.length, w = 555 / Math.max(n, 1);
  points.forEach((p, i) => {
    const mix = p[key] || {}; const sum = LOC.reduce((s, l) => s + (mix[l] || 0), 0);
    if (sum <= 0) return;
    let y = 140;
    for (const l of LOC) {
      const h = 130 * (mix[l] || 0) / sum;
      if (h > 0) svg.appendChild(el("rect", {x: 40 + i * w, y: y - h, width: Math.max(w, 1), height: h, fill: COLOR[l]}));
      y -= h;
    }
  });
}

function mixText(div, totals) {  // cumulative counts and shares: data-* attributes are what the browser test reads
  const sum = LOC.reduce((s, l) => s + (totals[l] || 0), 0);
  div.replaceChildren();
  for (const l of LOC) {
    const s = document.createElement("span");
    s.className = "count"; s.dataset.locality = l; s.dataset.count = totals[l] || 0;
    s.textContent = `${l.replace("_", "-")} ${fmt(totals[l] || 0)} (${sum ? fmt(100 * (totals[l] || 0) / sum) : 0}%)  `;
    div.appendChild(s);
  }
}

function list(ul, entries) {
  ul.replaceChildren();
  if (!entries.length) { const li = document.createElement("li"); li.textContent = "none"; ul.appendChild(li); return; }
  for (const [k, v] of entries) { const li = document.createElement("li"); li.textContent = `${k}: ${v}`;
    li.dataset.key = k; ul.appendChild(li); }
}

function render(s) {
  const i = s.info, t = s.latest, pts = s.series.filter((p) => p.rate !== undefined);
  $("policy").textContent = i.policy; $("model").textContent = i.model || "-";
  $("version").textContent = i.version || "-"; $("checksum").textContent = i.checksum || "-";
  $("uptime").textContent = `${fmt(i.uptime_s)} s`;
  const shadow = (t.shadow_decisions || 0) > 0;
  $("mode").textContent = shadow ? `shadow seen (${fmt(t.shadow_decisions)} shadow decisions)` : "active";
  list($("reloads"), (i.reloads || []).map((r) => [new Date(r.time * 1000).toISOString(),
    `${r.result} (${r.reason}) ${r.from || "-"} → ${r.to || "-"}${r.error ? ": " + r.error : ""}`]));
  $("decisions-total").textContent = fmt(t.decisions);
  const last = pts[pts.length - 1] || {};
  $("decisions-rate").textContent = fmt(last.rate, 1);
  const lat = pts.filter((p) => p.p50_ms !== null && p.p50_ms !== undefined);
  const l = lat[lat.length - 1] || {};
  $("p50").textContent = l.p50_ms === undefined ? "-" : `${fmt(l.p50_ms, 3)} ms`;
  $("p99").textContent = l.p99_ms === undefined ? "-" : `${fmt(l.p99_ms, 3)} ms`;
  $("reports").textContent = fmt(t.reports);
  list($("errors"), Object.entries(t.errors || {}));
  $("learner-queue").textContent = fmt(t.learner_queue); $("learner-dropped").textContent = fmt(t.learner_dropped);
  $("learner-errors").textContent = fmt(t.learner_errors);
  const rm = s.rm, div = $("rm");
  if (!rm.configured) div.textContent = "not configured (serve --ui-rm http://RM:8088 to read the plugin's JMX)";
  else if (!rm.ok) { div.textContent = rm.error || "waiting for the RM"; div.className = "bad"; }
  else { div.className = ""; div.replaceChildren();
    const b = document.createElement("p"); b.id = "breaker"; b.textContent = `breaker: ${rm.breaker}`;
    b.className = rm.breaker === "CLOSED" || rm.breaker === "DISABLED" ? "ok" : "bad"; div.appendChild(b);
    const ul = document.createElement("ul"); div.appendChild(ul);
    list(ul, Object.entries(rm.fallbacks || {})); }
  lines($("chart-rate"), pts, ["rate"], "/s");
  lines($("chart-latency"), lat, ["p50_ms", "p99_ms"].map((k) => k), "ms");
  stacked($("chart-assigned"), pts, "assigned"); mixText($("mix-assigned"), t.assigned || {});
  $("shadow-figure").style.display = shadow ? "" : "none";
  stacked($("chart-shadow-engine"), pts, "shadow_engine"); mixText($("mix-shadow-engine"), t.shadow_engine || {});
  stacked($("chart-shadow-yarn"), pts, "shadow_yarn"); mixText($("mix-shadow-yarn"), t.shadow_yarn || {});
  $("status").textContent = `updated ${new Date().toLocaleTimeString()}`; $("status").className = "";
  document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
}

async function tick() {
  try {
    const r = await fetch("api/state" + (token ? `?token=${encodeURIComponent(token)}` : ""), {cache: "no-store"});
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    render(await r.json());
  } catch (e) { $("status").textContent = `engine unreachable: ${e.message}`; $("status").className = "bad"; }
}
COLOR.p50_ms = COLOR.p50; COLOR.p99_ms = COLOR.p99;
tick(); setInterval(tick, 1000);
