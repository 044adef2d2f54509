// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The live view's page and its script (tools/observe/web_view.h serves them).
// No library: the fabric is drawn by Graphviz on the daemon's side; the
// script only fetches the state twice a second and recolours what changed,
// and replays the last sweep (GET /api/sweep) a few steps a second.
// Text from the fabric (node descriptions can be set by any SM) goes in
// with textContent, never as markup.

namespace ibemu::tools {

extern const char kWebPage[];
extern const char kWebScript[];

const char kWebPage[] = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ibemu: live view</title>
<style>
body { font: 13px sans-serif; margin: 0; display: grid; grid-template-columns: 3fr 2fr; height: 100vh; }
#map { overflow: auto; border-right: 1px solid #ccc; padding: 6px; }
#map svg { max-width: 100%; height: auto; } /* fitted to the page; the zoom button: its own size */
#map.natural svg { max-width: none; }
#zoom { float: right; }
#map g.node.at ellipse, #map g.node.at polygon { fill: gold; stroke-width: 3; }
#step { font-family: monospace; font-size: 11px; min-height: 2.6em; }
#side { overflow: auto; padding: 6px 10px; }
h1 { font-size: 16px; margin: 4px 0; } h2 { font-size: 14px; margin: 12px 0 4px; }
table { border-collapse: collapse; } td, th { padding: 1px 6px; text-align: left; font-family: monospace; }
tr:nth-child(even) { background: #f4f4f4; }
#map g.node { cursor: pointer; }
#map g.edge[data-state=active] path { stroke: forestgreen; }
#map g.edge[data-state=up] path { stroke: orange; }
#map g.edge[data-state=down] path, #map g.edge[data-state=pulled] path { stroke: red; stroke-dasharray: 6,3; }
#map g.edge[data-state=elsewhere] path { stroke: gray; stroke-dasharray: 2,3; }
tr[data-state=Active] .state { color: forestgreen; } tr[data-state=Armed] .state, tr[data-state=Init] .state { color: darkorange; }
tr[data-state=Down] .state { color: red; }
.errors { color: red; } #mads { font-family: monospace; font-size: 11px; padding-left: 0; list-style: none; }
#node { background: #eef; padding: 4px; display: none; }
</style>
<script src="/app.js" defer></script>
</head>
<body>
<div id="map">loading the fabric...</div>
<div id="side">
<button id="zoom" type="button">zoom in</button>
<h1 id="title">ibemu</h1>
<div id="sm"></div>
<div id="summary"></div>
<p><button id="replay" type="button">replay the last sweep</button></p>
<div id="step"></div>
<div id="node"></div>
<h2>Ports</h2>
<table id="ports"><thead><tr><th>node</th><th>port</th><th>LID</th><th>state</th><th>physical</th><th>xmit pkts</th><th>rcv pkts</th><th>errors</th></tr></thead><tbody></tbody></table>
<h2>Recent MADs</h2>
<ol id="mads"></ol>
<h2>Faults and events</h2>
<ul id="events"></ul>
</div>
</body>
</html>
)html";

const char kWebScript[] = R"js("use strict";
let picture = null;
const cableColours = { active: "forestgreen", up: "orange", down: "red", pulled: "red", elsewhere: "gray" };

function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function row(cells, attrs) {
  const tr = el("tr", undefined, attrs);
  for (const c of cells) tr.appendChild(typeof c === "object" ? c : el("td", c));
  return tr;
}

async function showNode(index) {
  const r = await fetch("/api/node/" + index);
  if (!r.ok) return;
  const n = await r.json();
  const box = document.getElementById("node");
  box.replaceChildren();
  box.dataset.node = index;
  box.style.display = "block";
  box.appendChild(el("h2", n.name));
  box.appendChild(el("div", `${n.type}, ${n.num_ports} ports, node GUID ${n.node_guid} (${n.node_id})`));
  const t = el("table");
  t.appendChild(row(["port", "GUID", "LID", "SM LID", "state", "physical", "width", "speed", "MTU"]));
  for (const p of n.ports)
    t.appendChild(row([p.port, p.port_guid, p.lid, p.sm_lid, p.state, p.phys, p.width + "x", p.speed, p.mtu],
                      { "data-state": p.state }));
  box.appendChild(t);
  if (n.lft) {
    box.appendChild(el("div", `LinearForwardingTable (LinearFDBTop ${n.linear_fdb_top}): ` +
                              (n.lft.length ? n.lft.map(([lid, port]) => `${lid}→${port}`).join(" ") : "empty")));
  }
}

function hookNodes() {
  for (const g of document.querySelectorAll("#map g.node")) {
    const m = /^n(\d+)$/.exec(g.id);
    if (m) g.addEventListener("click", () => showNode(m[1]));
  }
}

/* cables (id → state) coloured */
function paint(cables) {
  for (const [id, state] of Object.entries(cables)) {
    const g = document.getElementById(id);
    if (!g || g.dataset.state === state) continue;
    g.dataset.state = state;
    for (const p of g.querySelectorAll("path")) p.setAttribute("stroke", cableColours[state] || "gray");
  }
}

/* The replay of the last sweep: the cables as it found them, then one of
 * its MADs every stepEvery ms, its target node marked and the cables it
 * changed recoloured; the live colours again at its end */
const stepEvery = 250;
let replaying = null, starting = false;
let shown = { cables: {}, at: null }; /* what the replay shows, kept over a new picture */

function mark(node) {
  for (const g of document.querySelectorAll("#map g.node.at")) g.classList.remove("at");
  const g = node && document.getElementById(node);
  if (g) g.classList.add("at");
}

function endReplay(said) {
  clearInterval(replaying);
  replaying = null;
  mark(null);
  document.getElementById("replay").textContent = "replay the last sweep";
  document.getElementById("step").textContent = said;
  for (const g of document.querySelectorAll("#map g.edge")) delete g.dataset.state; /* the live ones again */
  refresh();
}

async function replay() {
  if (replaying) return endReplay("replay stopped");
  if (starting) return; /* a second click while the sweep is fetched */
  starting = true;
  let sweep;
  try {
    const r = await fetch("/api/sweep");
    sweep = r.ok ? await r.json() : null;
  } catch (e) {
    sweep = null;
  }
  starting = false;
  if (!sweep) return;
  const steps = sweep.steps || [];
  if (!steps.length) {
    document.getElementById("step").textContent = "no sweep recorded yet: start an SM (ibemu up --sm)";
    return;
  }
  shown = { cables: Object.assign({}, sweep.start || {}), at: null };
  paint(shown.cables);
  let i = 0;
  document.getElementById("replay").textContent = "stop the replay";
  replaying = setInterval(() => {
    if (i >= steps.length) return endReplay(`replayed the last sweep: ${steps.length} MADs sent`);
    const st = steps[i++];
    Object.assign(shown.cables, st.cables || {});
    shown.at = st.to;
    paint(st.cables || {});
    mark(st.to);
    document.getElementById("step").textContent = `${i}/${steps.length} +${st.t.toFixed(3)} s: ${st.text}`;
  }, stepEvery);
}

async function refresh() {
  let s;
  try {
    const r = await fetch("/api/state");
    s = await r.json();
  } catch (e) {
    document.getElementById("title").textContent = "ibemu: the daemon does not answer";
    return;
  }
  document.getElementById("title").textContent = "ibemu instance " + (s.instance || "");
  if (s.picture !== picture) {
    const r = await fetch("/api/picture.svg");
    if (r.ok) {
      document.getElementById("map").innerHTML = await r.text();
      /* drawn for an older state while the daemon spaces its builds:
       * asked for again at the next look */
      picture = Number(r.headers.get("X-Picture")) === s.picture ? s.picture : null;
      hookNodes();
      if (replaying) { /* the new picture in the replay's colours */
        paint(shown.cables);
        mark(shown.at);
      }
    }
  }
  if (!replaying) paint(s.cables || {});
  const sm = s.sm || {};
  document.getElementById("sm").textContent =
    sm.lid ? `SM: LID ${sm.lid} on ${sm.node} port ${sm.port}` : "SM: " + (sm.state || "none");
  document.getElementById("summary").textContent =
    "ports: " + Object.entries(s.states || {}).map(([k, v]) => `${v} ${k}`).join(", ");
  const body = document.querySelector("#ports tbody");
  body.replaceChildren();
  for (const p of s.ports || []) {
    const state = el("td", p.state, { class: "state" });
    const errors = el("td", p.errors, p.errors ? { class: "errors" } : {});
    body.appendChild(row([p.name, p.port, p.lid || "", state, p.phys, p.xmit_pkts, p.rcv_pkts, errors],
                         { id: `port-${p.node}-${p.port}`, "data-state": p.state }));
  }
  if (s.ports_omitted)
    body.appendChild(row([`${s.ports_omitted} ports: too many to list`]));
  const mads = document.getElementById("mads");
  mads.replaceChildren();
  for (const m of (s.mads || []).slice().reverse())
    mads.appendChild(el("li", `${m.port} ${m.dir === "out" ? "→" : "←"} ${m.text}`));
  const events = document.getElementById("events");
  events.replaceChildren();
  const f = s.faults || {};
  for (const c of f.pulled_cables || []) events.appendChild(el("li", `pulled cable: ${c.port} -- ${c.peer}`));
  for (const n of f.silent_nodes || []) events.appendChild(el("li", "silent node: " + words(n)));
  for (const p of f.lossy_ports || [])
    events.appendChild(el("li", `lossy cable at ${p.port}: drop ${p.drop}, corrupt ${p.corrupt}: ` +
                                `${p.dropped} dropped, ${p.corrupted} corrupted`));
  for (const d of f.degraded_links || [])
    events.appendChild(el("li", `degraded cable at ${d.port}: at most ${d.width} ${d.speed}`));
  for (const e of (f.recent_events || []).slice().reverse()) {
    const rest = Object.fromEntries(Object.entries(e).filter(([k]) => !["seq", "time", "op", "source"].includes(k)));
    events.appendChild(el("li", `${e.time} ${e.op} (${e.source}) ${words(rest)}`));
  }
}

/* an event's fields as a person reads them: "node ibemu-sw1, port 7" */
function words(v) {
  if (v === null || typeof v !== "object") return String(v);
  if (Array.isArray(v)) return v.map(words).join(", ");
  return Object.entries(v).map(([k, x]) => `${k} ${typeof x === "object" && x !== null ? "(" + words(x) + ")" : x}`)
    .join(", ");
}

document.getElementById("replay").addEventListener("click", replay);
document.getElementById("zoom").addEventListener("click", (ev) => {
  const natural = document.getElementById("map").classList.toggle("natural");
  ev.target.textContent = natural ? "fit to the page" : "zoom in";
});

setInterval(refresh, 500);
refresh();
/* a link to one node: #node=N */
const wanted = /^#node=(\d+)$/.exec(location.hash);
if (wanted) showNode(wanted[1]);
)js";

} /* namespace ibemu::tools */
