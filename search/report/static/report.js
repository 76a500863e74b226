// nader-search report: the tree and the plots. Untrusted strings (block text, changes,
// diagnostics, LLM plans) are only ever set with textContent, never as markup.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const archs = data.archs;
  const byId = new Map(archs.map((a) => [a.id, a]));
  const accs = archs.map((a) => a.valid).filter((v) => v !== null && v !== undefined);
  const color = d3.scaleSequential(d3.interpolateViridis)
    .domain(accs.length ? [d3.min(accs), Math.max(d3.max(accs), d3.min(accs) + 1e-9)] : [0, 100]);
  const BAD = new Set(["invalid", "failed", "diverged", "over-budget"]);

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  const fmt = (v, digits) => (v === null || v === undefined ? "-" : Number(v).toFixed(digits));
  const big = (v) => (v === null || v === undefined ? "-" : Number(v).toLocaleString("en-US"));

  // ---------------------------------------------------------------- details panel
  function showDetails(a) {
    const panel = document.getElementById("details");
    panel.replaceChildren();
    panel.append(el("h3", "Architecture " + a.id));
    const rows = [["status", a.status], ["parent", a.parent === null ? "(root)" : a.parent],
      ["validation", fmt(a.valid, 2) + " %"], ["test", fmt(a.test, 2) + " %"],
      ["params", big(a.params)], ["FLOPs", big(a.flops)], ["train time", fmt(a.seconds, 1) + " s"]];
    if (a.duplicate_of) rows.push(["duplicate of", a.duplicate_of]);
    if (a.tokens) rows.push(["tokens", big(a.tokens)], ["cost", "$" + fmt(a.cost, 4)]);
    if (a.llm_rounds) rows.push(["LLM rounds", a.llm_rounds]);
    if (a.repaired) rows.push(["repair", a.repaired]);
    if (a.error_kind || a.error) rows.push(["failure", [a.error_kind, a.error].filter(Boolean).join(": ")]);
    const table = el("table");
    for (const [k, v] of rows) {
      const tr = el("tr");
      tr.append(el("th", k), el("td", v));
      table.append(tr);
    }
    panel.append(table);
    if (a.change && Object.keys(a.change).length) {
      panel.append(el("h4", "Change from its parent"));
      panel.append(el("pre", JSON.stringify(a.change, null, 1), "change"));
    }
    if (a.diagnostics && a.diagnostics.length) {
      panel.append(el("h4", "Diagnostics"));
      const ul = el("ul", null, "diagnostics");
      for (const d of a.diagnostics) {
        ul.append(el("li", [d.code, d.line ? "line " + d.line : null, d.message].filter(Boolean).join("  ")));
      }
      panel.append(ul);
    }
    panel.append(el("h4", "nadc text"));
    panel.append(el("pre", a.text || "", "arch-text"));
  }

  // ---------------------------------------------------------------- tree
  function drawTree() {
    const svg = d3.select("#tree");
    if (!archs.length) return;
    const ids = new Set(archs.map((a) => a.id));
    const rows = archs.map((a) => ({ id: a.id, parentId: a.parent !== null && ids.has(a.parent) ? a.parent : "__root__" }));
    const roots = rows.filter((r) => r.parentId === "__root__");
    let hidden = false;
    if (roots.length !== 1) { rows.push({ id: "__root__", parentId: null }); hidden = true; }
    else roots[0].parentId = null;
    const root = d3.stratify().id((d) => d.id).parentId((d) => d.parentId)(rows);
    const dx = 22, dy = 90;
    d3.tree().nodeSize([dx, dy])(root);
    const g = svg.append("g");
    const zoom = d3.zoom().scaleExtent([0.05, 4]).on("zoom", (ev) => g.attr("transform", ev.transform));
    svg.call(zoom);
    const links = root.links().filter((l) => !(hidden && l.source.id === "__root__"));
    g.append("g").selectAll("path").data(links).join("path").attr("class", "tree-link")
      .attr("d", d3.linkHorizontal().x((d) => d.y).y((d) => d.x));
    const nodes = root.descendants().filter((d) => d.id !== "__root__");
    const node = g.append("g").selectAll("g").data(nodes).join("g")
      .attr("class", "tree-node").attr("data-id", (d) => d.id)
      .attr("transform", (d) => `translate(${d.y},${d.x})`)
      .on("click", (ev, d) => {
        d3.selectAll(".tree-node").classed("selected", false);
        d3.select(ev.currentTarget).classed("selected", true);
        showDetails(byId.get(d.id));
      });
    node.append("circle").attr("r", 7)
      .attr("fill", (d) => { const a = byId.get(d.id); return a.valid !== null && a.valid !== undefined ? color(a.valid) : "#fff"; })
      .attr("stroke", (d) => { const a = byId.get(d.id); return BAD.has(a.status) ? "#c00" : "#555"; })
      .attr("stroke-dasharray", (d) => (byId.get(d.id).status === "duplicate" ? "2,2" : null));
    node.filter((d) => BAD.has(byId.get(d.id).status)).append("path")
      .attr("d", "M-4,-4L4,4M-4,4L4,-4").attr("stroke", "#c00").attr("stroke-width", 2);
    node.append("title").text((d) => { const a = byId.get(d.id); return `#${a.id} ${a.status} ${fmt(a.valid, 2)}`; });
    // fit the whole tree in view
    const xs = nodes.map((d) => d.x), ys = nodes.map((d) => d.y);
    const box = svg.node().getBoundingClientRect();
    const w = d3.max(ys) - d3.min(ys) + 2 * dy, h = d3.max(xs) - d3.min(xs) + 2 * dx;
    const k = Math.min(1.5, box.width / w, box.height / h);
    svg.call(zoom.transform, d3.zoomIdentity.translate(20 - d3.min(ys) * k + dy * k / 2, box.height / 2 - ((d3.min(xs) + d3.max(xs)) / 2) * k).scale(k));
    // legend
    if (accs.length) {
      const legend = svg.append("g").attr("transform", `translate(${box.width - 40},20)`);
      const steps = d3.range(0, 1.0001, 0.1);
      legend.selectAll("rect").data(steps).join("rect").attr("x", 0).attr("y", (s, i) => (steps.length - 1 - i) * 12)
        .attr("width", 14).attr("height", 12).attr("fill", (s) => color(color.domain()[0] + s * (color.domain()[1] - color.domain()[0])));
      legend.append("text").attr("x", -4).attr("y", 8).attr("text-anchor", "end").attr("font-size", 10).text(fmt(color.domain()[1], 1));
      legend.append("text").attr("x", -4).attr("y", steps.length * 12).attr("text-anchor", "end").attr("font-size", 10).text(fmt(color.domain()[0], 1));
    }
  }

  // ---------------------------------------------------------------- plots
  const M = { top: 12, right: 14, bottom: 32, left: 46 };
  function frame(id, xDomain, yDomain, xLabel, log) {
    const svg = d3.select(id);
    const box = svg.node().getBoundingClientRect();
    const W = box.width || 440, H = box.height || 260;
    const x = (log ? d3.scaleLog() : d3.scaleLinear()).domain(xDomain).nice().range([M.left, W - M.right]);
    const y = d3.scaleLinear().domain(yDomain).nice().range([H - M.bottom, M.top]);
    svg.append("g").attr("transform", `translate(0,${H - M.bottom})`).call(d3.axisBottom(x).ticks(6, log ? "~s" : undefined));
    svg.append("g").attr("transform", `translate(${M.left},0)`).call(d3.axisLeft(y).ticks(5));
    svg.append("text").attr("x", W - M.right).attr("y", H - 4).attr("text-anchor", "end").attr("font-size", 10).text(xLabel);
    return { svg, x, y };
  }
  function padded(values) {
    const lo = d3.min(values), hi = d3.max(values);
    return lo === hi ? [lo - 1, hi + 1] : [lo, hi];
  }
  function bestCurve(id, key, label) {
    const pts = data.best_so_far;
    if (!pts.length) return;
    const { svg, x, y } = frame(id, padded(pts.map((p) => p[key])), padded(pts.map((p) => p.valid)), label);
    svg.append("path").datum(pts).attr("class", "line")
      .attr("d", d3.line().curve(d3.curveStepAfter).x((p) => x(p[key])).y((p) => y(p.valid)));
    svg.append("g").selectAll("circle").data(pts).join("circle").attr("class", "point").attr("r", 2.5)
      .attr("cx", (p) => x(p[key])).attr("cy", (p) => y(p.valid)).append("title").text((p) => `#${p.id}: ${fmt(p.valid, 2)}`);
  }
  function scatter(id, key, frontIds, label) {
    const pts = archs.filter((a) => a.status === "ok" && a.valid !== null && a[key]);
    if (!pts.length) return;
    const front = new Set(frontIds);
    const { svg, x, y } = frame(id, padded(pts.map((a) => a[key])), padded(pts.map((a) => a.valid)), label, true);
    const line = frontIds.map((i) => byId.get(i));
    svg.append("path").datum(line).attr("class", "front-line")
      .attr("d", d3.line().curve(d3.curveStepAfter).x((a) => x(a[key])).y((a) => y(a.valid)));
    svg.append("g").selectAll("circle").data(pts).join("circle")
      .attr("class", (a) => (front.has(a.id) ? "point front" : "point")).attr("r", 3.5)
      .attr("cx", (a) => x(a[key])).attr("cy", (a) => y(a.valid))
      .on("click", (ev, a) => showDetails(a))
      .append("title").text((a) => `#${a.id}: ${fmt(a.valid, 2)} %, ${big(a[key])}`);
  }

  function objectiveFront(id) {  // several objectives: the first two, the Pareto set over all marked
    const o = data.objectives;
    if (!o || !o.points.length) return;
    const front = new Set(o.front);
    const { svg, x, y } = frame(id, padded(o.points.map((p) => p.x)), padded(o.points.map((p) => p.y)), o.x);
    const line = o.points.filter((p) => front.has(p.id)).sort((a, b) => a.x - b.x);
    svg.append("path").datum(line).attr("class", "front-line")
      .attr("d", d3.line().x((p) => x(p.x)).y((p) => y(p.y)));
    svg.append("g").selectAll("circle").data(o.points).join("circle")
      .attr("class", (p) => (front.has(p.id) ? "point front" : "point")).attr("r", 3.5)
      .attr("cx", (p) => x(p.x)).attr("cy", (p) => y(p.y))
      .on("click", (ev, p) => showDetails(byId.get(p.id)))
      .append("title").text((p) => `#${p.id}: ${o.x} ${fmt(p.x, 4)}, ${o.y} ${fmt(p.y, 4)}`);
  }

  // ---------------------------------------------------------------- copy buttons
  for (const button of document.querySelectorAll("button.copy")) {
    button.addEventListener("click", () => {
      const text = document.getElementById(button.dataset.target).textContent;
      const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, () => {});
      else {
        const area = el("textarea", text);
        document.body.append(area);
        area.select();
        try { document.execCommand("copy"); done(); } finally { area.remove(); }
      }
    });
  }

  drawTree();
  bestCurve("#plot-trials", "trial", "trials");
  bestCurve("#plot-time", "seconds", "seconds");
  scatter("#plot-params", "params", data.pareto_params, "parameters");
  scatter("#plot-flops", "flops", data.pareto_flops, "FLOPs");
  objectiveFront("#plot-objectives");
  document.body.dataset.ready = "1";
})();
