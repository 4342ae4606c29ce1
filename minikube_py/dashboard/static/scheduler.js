// The scheduler's decision for a pod, as the scheduler recorded it in its "schedule" span
// of the pod's trace: one Filter event per node (fits, or the reason and the plugin that
// gave it), one Score event per feasible node (the total and, for the three best nodes,
// by plugin name, each Score plugin's normalized score times its weight: a column each),
// the node chosen (or why none was). One table per attempt.
import { html } from "./dom.js";
import { fetchTraces, milliseconds } from "./traces.js";

function decisionTable(span) {
  const nodes = new Map();
  const row = (node) => {
    if (!nodes.has(node)) nodes.set(node, { filter: "", plugin: "", scores: {} });
    return nodes.get(node);
  };
  const plugins = new Set();
  for (const event of span.events || []) {
    const { node, ...rest } = event.attributes || {};
    if (!node) continue;
    if (event.name === "Filter") {
      row(node).filter = rest.result;
      row(node).plugin = rest.plugin || "";
    } else if (event.name === "Score") {
      for (const [name, value] of Object.entries(rest)) {
        if (name !== "score") plugins.add(name);
        row(node).scores[name] = value;
      }
    }
  }
  const table = html("table", { class: "decision-table" });
  const head = html("tr");
  head.append(html("th", {}, "node"), html("th", {}, "filter"));
  for (const name of plugins) {
    head.append(html("th", { title: `${name}: normalized score (0-100) x its weight` }, name));
  }
  head.append(html("th", {}, "score (total)"));
  table.append(head);
  for (const [node, { filter, plugin, scores }] of [...nodes].sort(
    (a, b) => (b[1].scores.score ?? -1) - (a[1].scores.score ?? -1) || a[0].localeCompare(b[0]))) {
    const tr = html("tr", { "data-node": node });
    if (node === span.attributes.node) tr.classList.add("chosen");
    const fits = filter === "fits";
    tr.append(html("td", {}, node),
      html("td", { class: fits ? "fits" : "rejected" },
        fits ? "fits" : `${plugin ? plugin + ": " : ""}${filter || "not evaluated"}`));
    for (const name of plugins) tr.append(html("td", {}, String(scores[name] ?? "")));
    tr.append(html("td", {}, String(scores.score ?? (fits ? "(only node left)" : ""))));
    table.append(tr);
  }
  return table;
}

export class SchedulerView {
  constructor(dashboard) {
    this.dashboard = dashboard;
    this.form = document.getElementById("scheduler-form");
    this.message = document.getElementById("scheduler-message");
    this.decisions = document.getElementById("scheduler-decisions");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.load(this.form.namespace.value, this.form.name.value);
    });
  }

  // Open this tab on one pod's scheduling.
  showPod(namespace, name) {
    this.form.namespace.value = namespace;
    this.form.name.value = name;
    this.dashboard.show("scheduler");
    this.load(namespace, name);
  }

  async load(namespace, name) {
    this.message.textContent = "loading…";
    this.decisions.replaceChildren();
    let found;
    try {
      found = await fetchTraces({ resource: "pods", namespace, name });
    } catch (error) {
      this.message.textContent = error.message;
      return;
    }
    const attempts = (found.traces || []).flatMap((trace) => trace.spans)
      .filter((span) => span.name === "schedule"
        && (span.attributes || {})["k8s.name"] === name
        && ((span.attributes || {})["k8s.namespace"] || "") === namespace)
      .sort((a, b) => a.start - b.start);
    if (!attempts.length) {
      this.message.textContent = `No scheduling of pod ${namespace}/${name} was traced.`;
      return;
    }
    this.message.textContent = "";
    attempts.forEach((span, i) => {
      const attributes = span.attributes || {};
      const outcome = attributes.node ? `bound to ${attributes.node}`
        : `${attributes.result || "not placed"}: ${attributes.message || ""}`;
      const section = html("div", { class: "decision" });
      section.append(
        html("h2", {}, `attempt ${i + 1}: ${outcome}`),
        html("p", {}, `waited ${attributes["queue.wait_ms"] ?? "?"} ms in the queue; ` +
          `the cycle took ${milliseconds(span.end - span.start)}`),
        decisionTable(span));
      this.decisions.append(section);
    });
  }
}
