// The console page: polls /api/state (same origin) and draws with hand-rolled SVG; nothing loaded from elsewhere.
"use strict";
const LOCS = ["cache_local", "node_local", "rack_local", "off_switch"];
const COLORS = {cache_local: "#6a1b9a", node_local: "#2e7d32", rack_local: "#f9a825", off_switch: "#c62828"};
const SVGNS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
// Plots span at least this many samples (one a second), newest at the right, so a young engine's first seconds
// are not stretched across the whole width.
const MIN_WINDOW = 120;

function fmt(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return "-";
  return Number(v).toFixed(digits === undefined ? 0 : digits);
}
function duration(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + (s % 60) + "s";
}
function clock(t) { return new Date(t * 1000).toLocaleTimeString(); }
function el(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function rows(table, pairs) {
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const cells of pairs) {
    const tr = document.createElement("tr");
    for (const c of cells) { const td = document.createElement("td"); td.textContent = c; tr.appendChild(td); }
    body.appendChild(tr);
  }
}

// Lines: [{values, color, label}] over n points; y from 0 to the maximum.
function lineChart(svg, lines, unit) {
  svg.replaceChildren();
  const W = 600, H = svg.viewBox.baseVal.height, pad = 16;
  let max = 0, n = 0;
  for (const l of lines) { n = Math.max(n, l.values.length); for (const v of l.values) if (v !== null) max = Math.max(max, v); }
  const win = Math.max(n, MIN_WINDOW), off = win - n;
  if (n < 2) { svg.appendChild(el("text", {x: 8, y: 20, fill: "#999", "font-size": 12}, "collecting…")); return; }
  max = max > 0 ? max * 1.1 : 1;
  for (const l of lines) {
    let d = "";
    l.values.forEach((v, i) => {
      if (v === null) return;
      const x = (i + off) * W / (win - 1), y = H - pad - (v / max) * (H - 2 * pad);
      d += (d ? "L" : "M") + x.toFixed(1) + "," + y.toFixed(1);
    });
    if (d) svg.appendChild(el("path", {d: d, fill: "none", stroke: l.color, "stroke-width": 1.5,
                                         "vector-effect": "non-scaling-stroke"}));
  }
  svg.appendChild(el("text", {x: 4, y: 12, fill: "#555", "font-size": 11}, fmt(max, max < 10 ? 2 : 0) + " " + unit));
  svg.appendChild(el("text", {x: 4, y: H - 3, fill: "#555", "font-size": 10}, "-" + win + " s"));
  let x = 120;
  for (const l of lines) if (l.label) {
    svg.appendChild(el("text", {x: x, y: 12, fill: l.color, "font-size": 11}, l.label)); x += 60;
  }
}

// The share of each locality per BIN seconds, stacked to 100 % (a gap where nothing was placed).
const BIN = 5;
function mixChart(svg, series) {
  svg.replaceChildren();
  const W = 600, H = svg.viewBox.baseVal.height;
  const n = series[LOCS[0]] ? series[LOCS[0]].length : 0;
  if (n < 1) { svg.appendChild(el("text", {x: 8, y: 20, fill: "#999", "font-size": 12}, "collecting…")); return; }
  const win = Math.max(n, MIN_WINDOW), bins = Math.ceil(win / BIN), w = W / bins, off = win - n;
  for (let b = 0; b < bins; b++) {
    const sums = {};
    let total = 0;
    for (const loc of LOCS) {
      sums[loc] = 0;
      for (let j = b * BIN; j < (b + 1) * BIN; j++) {
        const i = j - off;
        if (i >= 0 && i < n) sums[loc] += series[loc][i];
      }
      total += sums[loc];
    }
    if (total <= 0) continue;
    let y = 0;
    for (const loc of LOCS) {
      const h = sums[loc] / total * H;
      if (h > 0) svg.appendChild(el("rect", {x: (b * w).toFixed(2), y: y.toFixed(2), width: (w - 1).toFixed(2),
                                             height: h.toFixed(2), fill: COLORS[loc]}));
      y += h;
    }
  }
  svg.appendChild(el("text", {x: 4, y: H - 4, fill: "#555", "font-size": 10}, "-" + win + " s, " + BIN + " s bars"));
}

function mixBar(div, totals) {
  div.replaceChildren();
  let total = 0;
  for (const loc of LOCS) total += totals[loc] || 0;
  div.dataset.total = total;
  for (const loc of LOCS) {
    const v = totals[loc] || 0;
    div.dataset[loc.replace("_", "")] = v;
    if (v <= 0) continue;
    const s = document.createElement("span");
    s.className = "loc-" + loc;
    s.style.flexGrow = String(v);
    s.textContent = loc.split("_")[0] + " " + fmt(100 * v / total, 0) + "%";
    s.title = loc.replace("_", "-") + ": " + fmt(v) + " containers (" + fmt(100 * v / total, 1) + "%)";
    s.dataset.locality = loc;
    s.dataset.count = v;
    div.appendChild(s);
  }
  if (total === 0) { const s = document.createElement("span"); s.textContent = "none yet"; s.className = "muted"; div.appendChild(s); }
  const counts = document.getElementById(div.id + "-counts");
  if (counts) counts.textContent = total ? LOCS.map(loc => loc.replace("_", "-") + " " + fmt(totals[loc] || 0)).join(" · ") + " containers" : "";
}

function render(st) {
  const e = st.engine;
  $("policy").textContent = e.policy;
  $("model-version").textContent = e.model_version || "(no model)";
  $("model-checksum").textContent = e.model_checksum || "-";
  $("engine-version").textContent = e.engine_version;
  $("uptime").textContent = duration(e.uptime_s);
  $("security").textContent = e.security;
  rows($("reloads"), st.reloads.slice().reverse().map(r => [clock(r.time), r.reason, r.result + (r.error ? ": " + r.error : ""), r.from + " → " + r.to]));
  $("reloads-empty").classList.toggle("hidden", st.reloads.length > 0);
  $("reloads").classList.toggle("hidden", st.reloads.length === 0);

  $("decisions-total").textContent = fmt(st.decisions_total);
  const rate = st.series.decisions_per_s || [];
  $("decisions-rate").textContent = rate.length ? fmt(rate[rate.length - 1], 1) : "-";
  $("latency-p50").textContent = fmt(st.latency_ms.p50, 3);
  $("latency-p99").textContent = fmt(st.latency_ms.p99, 3);
  lineChart($("chart-rate"), [{values: rate, color: "#1565c0"}], "/s");
  lineChart($("chart-latency"), [{values: st.series.p50_ms || [], color: "#2e7d32", label: "p50"},
                                 {values: st.series.p99_ms || [], color: "#c62828", label: "p99"}], "ms");
  const errs = Object.entries(st.errors);
  rows($("errors"), errs.map(([code, n]) => [code, fmt(n)]));
  $("errors-empty").classList.toggle("hidden", errs.length > 0);

  mixBar($("mix-engine"), st.locality.engine.totals);
  mixChart($("chart-mix-engine"), st.locality.engine.series);
  const shadow = st.shadow.decisions > 0 || st.shadow.placements_seen > 0;
  $("shadow").classList.toggle("hidden", !shadow);
  $("shadow-decisions").textContent = fmt(st.shadow.decisions);
  $("shadow-placements").textContent = fmt(st.shadow.placements_seen);
  mixBar($("mix-shadow-engine"), st.locality.shadow_engine.totals);
  mixBar($("mix-shadow-yarn"), st.locality.shadow_yarn.totals);
  mixChart($("chart-mix-shadow-engine"), st.locality.shadow_engine.series);
  mixChart($("chart-mix-shadow-yarn"), st.locality.shadow_yarn.series);

  const rm = st.rm;
  const rmp = $("rm-status");
  if (rm.ok === null) { rmp.textContent = "not watched (serve with --rm-address HOST:8088 to read the plugin's JMX)"; rmp.className = "muted"; }
  else if (!rm.ok) { rmp.textContent = "ResourceManager unreachable: " + rm.error; rmp.className = "warn"; }
  else { rmp.textContent = "ResourceManager " + rm.address; rmp.className = ""; }
  rows($("fallbacks"), rm.ok ? Object.entries(rm.fallbacks).map(([k, v]) => ["fallbacks " + k, fmt(v)]) : []);
  rows($("breakers"), rm.ok ? rm.schedulers.map(s => ["breaker " + s.breaker, s.engine, s.last_error]) : []);

  const l = st.learner;
  $("learner").textContent = l ? "queue " + l.queue + ", updates " + l.updates + ", dropped " +
      (Object.entries(l.dropped).map(([k, v]) => k + " " + fmt(v)).join(", ") || "0") + ", errors " + l.errors
    : "this policy does not learn online";
  $("updated").textContent = clock(st.now);
  document.body.dataset.updated = st.now;
}

async function poll() {
  const status = $("status");
  try {
    const r = await fetch("api/state", {cache: "no-store", credentials: "same-origin"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    status.textContent = "live"; status.className = "status ok";
  } catch (err) {
    status.textContent = "engine unreachable (" + err.message + ")"; status.className = "status bad";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const legend = $("legend");
  for (const loc of LOCS) {
    const s = document.createElement("span"), i = document.createElement("i");
    i.className = "loc-" + loc; s.appendChild(i); s.appendChild(document.createTextNode(loc.replace("_", "-")));
    legend.appendChild(s);
  }
  poll();
  setInterval(poll, 1000);
});
