// A request's path: one trace as swimlanes, one lane per component (the span's service;
// for the kubelet and kube-proxy, which run on every node, one lane per node), spans to
// time scale with their durations, an arrow wherever the work passes from one component
// to another (a span whose parent is in another lane), and a click on a span shows its
// attributes and events. "follow": the object's spans as they come (the
// receiver's follow stream), the newest trace redrawn with each.
import { html, svg, titled } from "./dom.js";
import { fetchTraces, followTraces, milliseconds } from "./traces.js";

const LABEL = 170;     // the lane names' column
const ROW = 20;        // one row of spans in a lane
const AXIS = 22;
const PER_NODE = new Set(["kubelet", "kube-proxy"]);  // services with one process per node

// Each span's lane: its service, and for a per-node one its node too ("kubelet node-1"):
// the span's "node" attribute, or that of its nearest ancestor in the same service (a CRI
// call under its SyncPod carries none).
function laneNames(spans) {
  const byId = new Map(spans.map((span) => [span.spanId, span]));
  const nodeOf = (span) => {
    for (let at = span, steps = 0; at && steps <= spans.length; steps++) {
      const node = (at.attributes || {}).node;
      if (node) return String(node);
      const parent = byId.get(at.parentSpanId);
      at = parent && parent.service === span.service ? parent : null;
    }
    return "";
  };
  return new Map(spans.map((span) => {
    const node = PER_NODE.has(span.service) ? nodeOf(span) : "";
    return [span.spanId, node ? `${span.service} ${node}` : span.service];
  }));
}

export class TraceView {
  constructor(dashboard) {
    this.dashboard = dashboard;
    this.root = document.getElementById("swimlanes");
    this.form = document.getElementById("trace-form");
    this.choice = document.getElementById("trace-choice");
    this.message = document.getElementById("trace-message");
    this.traces = [];
    this.following = null;  // the AbortController of the follow stream being read
    this.frame = 0;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      const query = Object.fromEntries(new FormData(this.form));
      if (query.follow && !query.traceId) this.follow(query); else this.load(query);
    });
    this.choice.addEventListener("change", () => this.draw(this.traces[this.choice.value]));
  }

  // Open this tab on the traces of one object.
  showObject(resource, namespace, name) {
    this.form.resource.value = resource;
    this.form.namespace.value = namespace;
    this.form.name.value = name;
    this.form.traceId.value = "";
    this.form.follow.checked = false;
    this.dashboard.show("trace");
    this.load({ resource, namespace, name, traceId: "" });
  }

  // Open this tab on one trace.
  showTrace(traceId) {
    this.form.traceId.value = traceId;
    this.form.follow.checked = false;
    this.dashboard.show("trace");
    this.load({ traceId });
  }

  async load(query) {
    this.stopFollowing();
    this.message.textContent = "loading…";
    let found;
    try {
      found = await fetchTraces(query);
    } catch (error) {
      this.message.textContent = error.message;
      return;
    }
    this.traces = (found.traces || []).filter((t) => t.spans.length);
    this.showNewest(found.message || "No traces found.");
  }

  // Follow: every span of the object's traces, then each new one; redraw as they come.
  async follow({ resource, namespace, name }) {
    this.stopFollowing();
    const following = new AbortController();
    this.following = following;
    this.traces = [];
    this.root.replaceChildren();
    this.message.textContent = `following ${resource}/${name}: waiting for spans…`;
    const byId = new Map();
    try {
      await followTraces({ resource, namespace, name }, following.signal, (span) => {
        if (!byId.has(span.traceId)) {
          byId.set(span.traceId, { traceId: span.traceId, spans: [] });
          this.traces.push(byId.get(span.traceId));
        }
        byId.get(span.traceId).spans.push(span);
        this.message.textContent = `following ${resource}/${name}`;
        if (!this.frame) {
          this.frame = requestAnimationFrame(() => { this.frame = 0; this.showNewest(""); });
        }
      });
      if (this.following === following) {  // the receiver ended the stream
        this.following = null;
        this.message.textContent = `stopped following ${resource}/${name}: the stream ended`;
      }
    } catch (error) {
      if (error.name !== "AbortError") this.message.textContent = error.message;
    }
  }

  stopFollowing() {
    if (this.following) this.following.abort();
    this.following = null;
  }

  // The trace choice filled in (oldest first), the newest trace drawn.
  showNewest(none) {
    const first = (trace) => Math.min(...trace.spans.map((s) => s.start));
    this.traces.sort((a, b) => first(a) - first(b));
    this.choice.replaceChildren(...this.traces.map((trace, i) => html("option", { value: i },
      `${trace.traceId.slice(0, 12)}… ${trace.spans[0].name} (${trace.spans.length} spans)`)));
    this.choice.hidden = this.traces.length < 2;
    if (!this.traces.length) {
      this.message.textContent = none;
      this.root.replaceChildren();
      return;
    }
    this.choice.value = this.traces.length - 1;
    if (!this.following) this.message.textContent = "";
    this.draw(this.traces[this.traces.length - 1]);
  }

  draw(trace) {
    const spans = [...trace.spans].sort((a, b) => a.start - b.start);
    const start = spans[0].start;
    const end = Math.max(...spans.map((s) => s.end || s.start));
    const width = Math.max(this.root.clientWidth || 0, 600);
    const x = (t) => LABEL + ((t - start) / Math.max(end - start, 1)) * (width - LABEL - 20);

    // lanes in the order their component first worked on the request; a lane has as many
    // rows as it needs for its spans not to overlap
    const lanes = new Map();
    const names = laneNames(spans);
    for (const span of spans) {
      span.lane = names.get(span.spanId);
      if (!lanes.has(span.lane)) lanes.set(span.lane, { service: span.service, rows: [] });
      const { rows } = lanes.get(span.lane);
      let row = rows.findIndex((rowEnd) => rowEnd <= span.start);
      if (row < 0) { row = rows.length; rows.push(0); }
      rows[row] = span.end || span.start;
      span.row = row;
    }
    const laneTop = new Map();
    let y = AXIS;
    const children = [svg("defs", {}, "")];
    children[0].appendChild(this.arrowhead());
    [...lanes.entries()].forEach(([name, { service, rows }], i) => {
      const height = rows.length * ROW + 8;
      laneTop.set(name, y);
      const lane = svg("g", { class: "lane" });
      lane.dataset.service = service;
      lane.dataset.lane = name;
      lane.append(
        svg("rect", { class: `lane-bg${i % 2 ? " odd" : ""}`, x: 0, y, width, height }),
        svg("text", { class: "lane-label", x: 6, y: y + 15 }, name));
      children.push(lane);
      y += height;
    });
    children.push(this.axis(start, end, x, y));

    const boxes = new Map();
    for (const span of spans) {
      const top = laneTop.get(span.lane) + 4 + span.row * ROW;
      const left = x(span.start);
      const right = Math.max(left + 2, x(span.end || span.start));
      boxes.set(span.spanId, { left, right, top, span });
      const error = (span.status || {}).code === 2;
      const group = svg("g", { class: `span${error ? " error" : ""}` });
      group.dataset.spanId = span.spanId;
      group.dataset.service = span.service;
      group.dataset.lane = span.lane;
      group.dataset.name = span.name;
      const duration = milliseconds((span.end || span.start) - span.start);
      group.append(svg("rect", { x: left, y: top, width: right - left, height: ROW - 4, rx: 2 }));
      if (right - left > 60) {
        group.append(svg("text", { x: left + 3, y: top + 12 }, `${span.name} ${duration}`));
      }
      titled(group, `${span.lane}: ${span.name} (${duration})`);
      group.addEventListener("click", () => this.select(span, group));
      children.push(group);
    }
    for (const { left, top, span } of boxes.values()) {
      const parent = boxes.get(span.parentSpanId);
      if (!parent || parent.span.lane === span.lane) continue;
      const from = [Math.min(Math.max(left, parent.left), parent.right), parent.top + ROW - 4];
      const to = [left, top];
      if (to[1] < from[1]) { from[1] = parent.top; to[1] = top + ROW - 4; }
      const arrow = svg("path", { class: "arrow",
        d: `M${from[0]},${from[1]} C${from[0]},${(from[1] + to[1]) / 2} ` +
           `${to[0]},${(from[1] + to[1]) / 2} ${to[0]},${to[1]}` });
      arrow.dataset.from = parent.span.spanId;
      arrow.dataset.to = span.spanId;
      children.push(arrow);
    }
    this.root.replaceChildren(...children);
    this.root.setAttribute("height", y + 4);
    this.root.dataset.traceId = trace.traceId;
    document.getElementById("span-details").hidden = true;
  }

  arrowhead() {
    const marker = svg("marker", { id: "arrowhead", viewBox: "0 0 10 10", refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#d35400" }));
    return marker;
  }

  axis(start, end, x, bottom) {
    const group = svg("g", { class: "axis" });
    const span = Math.max(end - start, 1);
    const step = 10 ** Math.floor(Math.log10(span / 5));
    const tick = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 8);
    for (let t = 0; t <= span; t += tick) {
      group.append(svg("line", { x1: x(start + t), x2: x(start + t), y1: AXIS - 4, y2: bottom }),
        svg("text", { x: x(start + t) + 2, y: AXIS - 8 }, milliseconds(t)));
    }
    return group;
  }

  select(span, group) {
    for (const other of this.root.querySelectorAll(".span.selected")) {
      other.classList.remove("selected");
    }
    group.classList.add("selected");
    document.getElementById("span-title").textContent =
      `${span.lane}: ${span.name} (${milliseconds((span.end || span.start) - span.start)})`;
    const rows = Object.entries(span.attributes || {}).map(([key, value]) => {
      const row = html("tr");
      row.append(html("td", {}, key), html("td", {}, JSON.stringify(value)));
      return row;
    });
    document.getElementById("span-attributes").replaceChildren(...rows);
    document.getElementById("span-events").replaceChildren(...(span.events || []).map(
      (event) => html("li", {}, `${event.name} ${JSON.stringify(event.attributes)}`)));
    document.getElementById("span-details").hidden = false;
  }
}
