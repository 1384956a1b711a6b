// The tsmon dashboard: answers with their bound bands over time, newest events, progress.
// Reads /answers, /answers/history and the server-sent events of /events (docs/http.md).
"use strict";

const EVENTS_SHOWN = 25;
const events = [];

function fmt(x) {
  if (x === null || x === undefined) return "–";
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x)) return String(x);
  return Math.abs(x) >= 1e6 || (Math.abs(x) < 1e-3 && x !== 0) ? x.toExponential(4) : x.toPrecision(6);
}

function iso(ms) {
  return ms === null || ms === undefined ? "–" : new Date(ms).toISOString().replace(".000Z", "Z");
}

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function showProgress(p, totals, deadLetters) {
  if (p.batchId === undefined) return;
  const status = document.getElementById("status");
  status.textContent = "running";
  status.className = "running";
  const box = document.getElementById("progress");
  box.dataset.batch = p.batchId;
  const running = Object.values(p.queries || {}).reduce((n, q) => n + q.length, 0);
  const dead = Object.entries(deadLetters || {}).map(([r, n]) => `${r} ${n}`).join(", ") || "none";
  box.textContent =
    `batch ${p.batchId} · points ${p.numInputRows} (total ${totals ? totals.numInputRows : "?"})` +
    ` · rows to coordinator ${p.rowsToCoordinator} · watermark ${iso(p.watermark)}` +
    ` · driver ${fmt(p.driverMs)} ms · previous batch ${fmt(p.previousBatchDurationMs)} ms` +
    ` · ${running} queries running · dead letters: ${dead}`;
}

function showAnswers(byPart, bands) {
  const body = document.querySelector("#answers tbody");
  body.replaceChildren();
  let n = 0;
  for (const [part, answers] of Object.entries(byPart)) {
    for (const [query, a] of Object.entries(answers)) {
      const row = body.insertRow();
      row.dataset.query = query;
      cell(row, query);
      cell(row, part);
      const b = bands[query];
      if (b === undefined) {  // no number (top-k): its members
        const td = cell(row, (a.members || []).join(", "));
        td.colSpan = 3;
      } else {
        for (const key of ["value", "lo", "hi"]) {
          const td = cell(row, fmt(b[key]), "num " + key);
          if (b[key] !== null) td.dataset.exact = String(b[key]);  // the number as sent
        }
      }
      n += 1;
    }
  }
  document.getElementById("no-answers").hidden = n > 0;
}

function drawChart(canvas, points) {
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height, L = 60, R = 8, T = 8, B = 22;
  ctx.clearRect(0, 0, W, H);
  const ys = [];
  for (const p of points) for (const y of [p.value, p.lo, p.hi]) if (y !== null) ys.push(y);
  if (points.length === 0 || ys.length === 0) return;
  let lo = Math.min(...ys), hi = Math.max(...ys);
  if (hi === lo) { hi += 1; lo -= 1; }
  const b0 = points[0].batch, b1 = Math.max(points[points.length - 1].batch, b0 + 1);
  const x = (b) => L + (W - L - R) * (b - b0) / (b1 - b0);
  const y = (v) => T + (H - T - B) * (hi - v) / (hi - lo);
  ctx.strokeStyle = "#bbb"; ctx.fillStyle = "#555"; ctx.font = "11px sans-serif";
  ctx.strokeRect(L, T, W - L - R, H - T - B);
  ctx.fillText(fmt(hi), 2, T + 9); ctx.fillText(fmt(lo), 2, H - B);
  ctx.fillText(`batch ${b0}`, L, H - 6); ctx.fillText(`${b1}`, W - R - 24, H - 6);
  const banded = points.filter((p) => p.lo !== null && p.hi !== null);
  if (banded.length > 0) {  // the bound band
    ctx.fillStyle = "rgba(31, 119, 180, 0.22)";
    ctx.beginPath();
    banded.forEach((p, i) => (i ? ctx.lineTo(x(p.batch), y(p.hi)) : ctx.moveTo(x(p.batch), y(p.hi))));
    for (const p of banded.slice().reverse()) ctx.lineTo(x(p.batch), y(p.lo));
    ctx.closePath(); ctx.fill();
  }
  ctx.strokeStyle = "#1f77b4"; ctx.lineWidth = 1.5; ctx.beginPath();
  let down = false;
  for (const p of points) {
    if (p.value === null) { down = false; continue; }
    down ? ctx.lineTo(x(p.batch), y(p.value)) : ctx.moveTo(x(p.batch), y(p.value));
    down = true;
  }
  ctx.stroke();
}

function showHistory(history) {
  const box = document.getElementById("charts");
  for (const [query, h] of Object.entries(history)) {
    const id = "chart-" + query;
    let fig = document.getElementById(id);
    if (!fig) {
      fig = document.createElement("figure");
      fig.id = id;
      fig.dataset.query = query;
      const cap = document.createElement("figcaption");
      fig.append(cap, Object.assign(document.createElement("canvas"), { width: 420, height: 170 }));
      box.append(fig);
    }
    fig.dataset.points = h.points.length;
    fig.querySelector("figcaption").textContent =
      `${query} (${h.part || "removed"}, ${h.points.length} batches)`;
    drawChart(fig.querySelector("canvas"), h.points);
  }
}

function showEvents() {
  const body = document.querySelector("#events tbody");
  body.replaceChildren();
  for (const e of events.slice(-EVENTS_SHOWN).reverse()) {
    const row = body.insertRow();
    row.dataset.seq = e.seq;
    cell(row, e.seq, "num");
    cell(row, e.query);
    cell(row, e.series);
    cell(row, iso(e.ts_ms));
    cell(row, fmt(e.value), "num");
    cell(row, JSON.stringify(e.payload));
  }
  document.getElementById("event-count").textContent = `(${events.length ? events[events.length - 1].seq + 1 : 0} so far)`;
}

async function refresh() {
  const [snap, history] = await Promise.all(
    ["answers", "answers/history"].map((p) => fetch(p).then((r) => r.json())));
  showProgress(snap.progress, snap.totals, snap.deadLetters);
  if (snap.fromCheckpoint) {  // a restarted job before its first batch
    document.getElementById("progress").textContent =
      `no batch since the restart · answers of batch ${snap.batch}, from the checkpoint`;
  }
  showAnswers(snap.answers, snap.bands);
  showHistory(history);
}

function connect() {
  const source = new EventSource("events");
  source.addEventListener("event", (m) => {
    events.push(JSON.parse(m.data));
    if (events.length > 500) events.splice(0, events.length - 500);
    showEvents();
  });
  source.addEventListener("batch", () => refresh().catch(() => {}));
  source.onerror = () => {
    const status = document.getElementById("status");
    status.textContent = "connection lost, retrying";
    status.className = "lost";
  };
}

refresh().catch(() => {});
connect();
