// evoforge dashboard: draws the charts of a page from the JSON endpoints and polls the run.
// Text from a run only ever reaches the page through textContent (never innerHTML).
(function () {
  "use strict";
  const page = document.body.dataset.page;
  const run = document.body.dataset.run;
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
  const CLASS_COLORS = { evaluated: "#2ca02c", invalid: "#ff7f0e", no_solution: "#d62728",
                         unchanged: "#9467bd", no_diff: "#7f7f7f" };
  const plots = {};

  function get(url) {
    return fetch(url, { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error(url + ": " + r.status);
      return r.json();
    });
  }

  function message(box, text) {
    box.textContent = "";
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = text;
    box.appendChild(p);
  }

  // one uPlot chart in the element `id`; data is uPlot's aligned form [x, y1, y2, ...]
  function plot(id, series, data, opts) {
    const box = document.getElementById(id);
    if (!box) return;
    if (plots[id]) { plots[id].destroy(); delete plots[id]; }
    const n = data[0] ? data[0].length : 0;
    box.dataset.points = String(n);
    box.dataset.series = String(series.length);
    if (!n) { message(box, "no data yet"); return; }
    box.textContent = "";
    const o = Object.assign({ width: Math.max(320, box.clientWidth || 560), height: 260,
                              series: [{}].concat(series), legend: { live: true } }, opts || {});
    plots[id] = new uPlot(o, data, box);
    box.dataset.drawn = "1";
    return plots[id];
  }

  const stepped = uPlot.paths.stepped({ align: 1 });
  const noLine = function () { return null; };
  function line(label, color, extra) {
    return Object.assign({ label: label, stroke: color, width: 2, spanGaps: true, points: { show: false } }, extra || {});
  }
  function dots(label, color) {
    return { label: label, stroke: color, paths: noLine, points: { show: true, size: 3, stroke: color, fill: color } };
  }
  function flat(xs, value) { return xs.length ? [[xs[0], xs[xs.length - 1]], [value, value]] : [[], []]; }

  function bestCharts(curve) {
    const b = curve.best, s = curve.scores;
    const tables = [[b.x, b.y], [s.x, s.lo], [s.x, s.hi]];
    const series = [line("best so far", PALETTE[0], { paths: stepped }), dots("score (min)", "#9ab"), dots("score (max)", "#678")];
    if (curve.target != null && b.x.length) {
      tables.push(flat([1, curve.evaluations], curve.target));
      series.push(line("best known", "#d62728", { dash: [6, 4], width: 1 }));
    }
    plot("best-evals", series, uPlot.join(tables), { scales: { x: { time: false } } });
    const t = curve.time;
    const tt = [[t.x, t.y]], ts = [line("best so far", PALETTE[0], { paths: stepped })];
    if (curve.target != null && t.x.length) {
      tt.push(flat(t.x, curve.target));
      ts.push(line("best known", "#d62728", { dash: [6, 4], width: 1 }));
    }
    plot("best-time", ts, uPlot.join(tt), { scales: { x: { time: false } } });
  }

  function stepCharts(st) {
    const names = Object.keys(st.classes);
    plot("classes", names.map(function (c) { return line(c, CLASS_COLORS[c] || "#333"); }),
         [st.x].concat(names.map(function (c) { return st.classes[c]; })), { scales: { x: { time: false } } });
    plot("rate", [line("children/s", PALETTE[3])], [st.rate.x, st.rate.y], { scales: { x: { time: false } } });
    const keys = Object.keys(st.train);
    const box = document.getElementById("train-plots");
    if (!box || !keys.length) return;
    document.getElementById("train").classList.remove("hidden");
    keys.forEach(function (k, i) {
      const id = "train-" + i;
      if (!document.getElementById(id)) {
        const sec = document.createElement("section");
        sec.className = "chart";
        const h = document.createElement("h2");
        h.textContent = k;
        const div = document.createElement("div");
        div.className = "plot";
        div.id = id;
        sec.appendChild(h);
        sec.appendChild(div);
        box.appendChild(sec);
      }
      plot(id, [line(k, PALETTE[i % PALETTE.length])], [st.train[k].x, st.train[k].y], { scales: { x: { time: false } } });
    });
  }

  function timesChart(h) {
    const xs = [], ys = [];
    for (let i = 0; i < h.counts.length; i++) { xs.push((h.edges[i] + h.edges[i + 1]) / 2); ys.push(h.counts[i]); }
    plot("times", [{ label: "evaluations", stroke: PALETTE[4], fill: "rgba(255,127,14,0.35)",
                     paths: uPlot.paths.bars({ size: [0.9, 40] }), points: { show: false } }],
         [xs, ys], { scales: { x: { time: false } } });
  }

  function drawRun() {
    return Promise.all([
      get("/api/run/" + run + "/curve").then(bestCharts),
      get("/api/run/" + run + "/steps").then(stepCharts),
      get("/api/run/" + run + "/eval_times").then(timesChart),
    ]);
  }

  function drawOverview() {
    return get("/api/runs").then(function (runs) {
      return Promise.all(runs.map(function (r, k) { return get("/api/run/" + k + "/curve"); })).then(function (curves) {
        const ev = [], evs = [], tm = [], tms = [];
        curves.forEach(function (c, k) {
          const color = PALETTE[k % PALETTE.length];
          ev.push([c.best.x, c.best.y]);
          evs.push(line(runs[k].name, color, { paths: stepped }));
          tm.push([c.time.x, c.time.y]);
          tms.push(line(runs[k].name, color, { paths: stepped }));
        });
        const targets = Array.from(new Set(runs.map(function (r) { return r.target; }).filter(function (t) { return t != null; })));
        const maxEval = Math.max.apply(null, curves.map(function (c) { return c.evaluations || 1; }));
        const maxT = Math.max.apply(null, curves.map(function (c) { return c.time.x.length ? c.time.x[c.time.x.length - 1] : 1; }));
        targets.forEach(function (t) {
          ev.push(flat([1, maxEval], t));
          evs.push(line("best known " + t, "#d62728", { dash: [6, 4], width: 1 }));
          tm.push(flat([0, maxT], t));
          tms.push(line("best known " + t, "#d62728", { dash: [6, 4], width: 1 }));
        });
        plot("overlay-evals", evs, uPlot.join(ev), { scales: { x: { time: false } } });
        plot("overlay-time", tms, uPlot.join(tm), { scales: { x: { time: false } } });
      });
    });
  }

  function drawTree() {
    const node = new URLSearchParams(location.search).get("node");
    const forest = get("/api/run/" + run + "/forest").then(function (f) {
      drawForest(f, Number(document.getElementById("forest").dataset.node));
    });
    const lineage = get("/api/run/" + run + "/tree" + (node ? "?node=" + encodeURIComponent(node) : "")).then(function (t) {
      if (!t) return;
      const a = t.ancestors;
      const u = plot("lineage-plot", [line("score", PALETTE[0], { points: { show: true, size: 7 } })],
                     [a.map(function (_, i) { return i; }), a.map(function (r) { return r.score; })],
                     { scales: { x: { time: false } }, axes: [{ label: "generation" }, {}] });
      if (u) {
        u.over.addEventListener("click", function () {
          const i = u.cursor.idx;
          if (i != null && a[i]) location.href = "/run/" + run + "/program/" + a[i].id;
        });
      }
    });
    return Promise.all([forest, lineage]);
  }

  // the program tree: x = step, leaves stacked top to bottom (depth-first), a parent at the middle
  // of its children; the current node and its ancestors are outlined. SVG built with DOM calls only.
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, parent) {
    const el = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { el.setAttribute(k, String(attrs[k])); });
    if (parent) parent.appendChild(el);
    return el;
  }
  function colour(t) {  // 0..1 -> a blue-to-yellow ramp
    const a = [68, 1, 84], b = [33, 145, 140], c = [253, 231, 37];
    const m = t < 0.5 ? [a, b, t * 2] : [b, c, (t - 0.5) * 2];
    return "rgb(" + [0, 1, 2].map(function (i) { return Math.round(m[0][i] + (m[1][i] - m[0][i]) * m[2]); }).join(",") + ")";
  }
  function drawForest(data, current) {
    const box = document.getElementById("forest");
    if (!box) return;
    box.textContent = "";
    const nodes = data.nodes, byId = {}, kids = {};
    nodes.forEach(function (n) { byId[n.id] = n; kids[n.id] = []; });
    const roots = [];
    nodes.forEach(function (n) { if (n.parent != null && byId[n.parent]) kids[n.parent].push(n); else roots.push(n); });
    const path = {};
    for (let n = byId[current]; n; n = n.parent != null ? byId[n.parent] : null) path[n.id] = true;
    let leaf = 0;
    const stack = roots.slice().reverse().map(function (n) { return [n, false]; });
    while (stack.length) {  // iterative post-order: lineages can be thousands deep
      const top = stack.pop(), n = top[0];
      if (!top[1] && kids[n.id].length) {
        stack.push([n, true]);
        kids[n.id].slice().reverse().forEach(function (c) { stack.push([c, false]); });
      } else if (!kids[n.id].length) {
        n.y = leaf++;
      } else {
        n.y = kids[n.id].reduce(function (s, c) { return s + c.y; }, 0) / kids[n.id].length;
      }
    }
    const scores = nodes.map(function (n) { return n.score; }).filter(function (v) { return v != null; });
    const lo = Math.min.apply(null, scores), hi = Math.max.apply(null, scores);
    const maxStep = Math.max.apply(null, nodes.map(function (n) { return n.step; }).concat([1]));
    const W = Math.max(600, box.clientWidth || 900), H = Math.max(120, 16 * leaf + 30), pad = 14;
    const X = function (n) { return pad + (W - 2 * pad) * n.step / maxStep; };
    const Y = function (n) { return pad + (H - 2 * pad) * (leaf > 1 ? n.y / (leaf - 1) : 0.5); };
    const root = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" }, box);
    nodes.forEach(function (n) {
      if (n.parent != null && byId[n.parent]) {
        const p = byId[n.parent], on = path[n.id] && path[p.id];
        svg("path", { d: "M" + X(p) + "," + Y(p) + " H" + (X(p) + X(n)) / 2 + " V" + Y(n) + " H" + X(n),
                      fill: "none", stroke: on ? "#d62728" : "#b8c0c8", "stroke-width": on ? 2 : 1 }, root);
      }
    });
    const sign = data.direction === "min" ? -1 : 1;
    nodes.forEach(function (n) {
      const a = svg("a", { href: "/run/" + run + "/tree?node=" + n.id }, root);
      const t = n.score == null || hi === lo ? 0.5 : (sign * (n.score - lo) / (hi - lo) + (sign < 0 ? 1 : 0));
      const dot = svg("circle", { cx: X(n), cy: Y(n), r: n.id === current ? 7 : 5, fill: colour(t),
                                  stroke: path[n.id] ? "#d62728" : "#fff", "stroke-width": path[n.id] ? 2 : 1 }, a);
      dot.setAttribute("data-id", String(n.id));
      const title = svg("title", {}, dot);
      title.textContent = "#" + n.id + "  step " + n.step + "  score " + n.score;
    });
    box.dataset.nodes = String(nodes.length);
  }

  const DRAW = { overview: drawOverview, run: drawRun, tree: drawTree };

  // the live badge: poll a small endpoint; redraw the charts when the run moved on
  let version = null;
  function poll() {
    const url = run !== undefined ? "/api/run/" + run + "/live" : "/api/runs";
    get(url).then(function (d) {
      const runs = Array.isArray(d) ? d : [d];
      const v = runs.map(function (r) { return r.version + ":" + r.children; }).join(",");
      const badge = document.getElementById("live");
      if (badge) {
        const r = runs[0] || {};
        const age = r.last_step_at ? Math.max(0, Date.now() / 1000 - r.last_step_at) : null;
        badge.textContent = (runs.length > 1 ? runs.length + " runs · " : "") + "step " + r.steps + " · " +
          r.evaluated + " evaluations · best " + (r.best_score == null ? "-" : Number(r.best_score).toPrecision(8)) +
          (age == null ? "" : " · last step " + Math.round(age) + " s ago");
        badge.classList.toggle("running", age != null && age < 30);
      }
      if (!Array.isArray(d)) {
        document.querySelectorAll("[data-live]").forEach(function (el) {
          const x = d[el.dataset.live];
          if (x != null) el.textContent = typeof x === "number" && !Number.isInteger(x) ? String(+x.toPrecision(10)) : String(x);
        });
      }
      if (version !== null && v !== version && DRAW[page]) DRAW[page]();
      version = v;
    }).catch(function () {
      const badge = document.getElementById("live");
      if (badge) badge.textContent = "dashboard unreachable";
    }).finally(function () { setTimeout(poll, 2000); });
  }

  window.addEventListener("resize", function () {
    Object.keys(plots).forEach(function (id) {
      const box = document.getElementById(id);
      if (box) plots[id].setSize({ width: Math.max(320, box.clientWidth), height: 260 });
    });
  });

  const first = DRAW[page] ? DRAW[page]() : Promise.resolve();
  first.catch(function (err) { console.error(err); }).finally(function () {
    document.body.dataset.ready = "1";
    poll();
  });
})();
