// The cluster, live: nodes as boxes (conditions, taints, allocatable), their pods inside
// coloured by phase, the pods no node has yet in a pending lane, and the Services with
// their endpoints. Elements are kept by object, so that a watch event moves, recolours or
// removes one element, with its animation, and redraws nothing else: each drawing first
// lays every object out (plain arithmetic), then writes to the page only the elements
// whose place or look differs from what they show (`shown`). With 1,000 pods changing
// 30 times a second, writing every element each frame kept the page's main thread busy
// all the time (benchmarks/dashboard.py). A pod is one <rect> and nothing more: its
// name, phase and IP show in one tip shared by every pod, on hover.
import { animate, html, keyOf, svg, titled } from "./dom.js";

const NODE_WIDTH = 250;
const GAP = 12;
const POD = 13;          // a pod's square, and its step
const POD_STEP = 16;
const HEADER = 66;       // a node box's text lines above its pods
const LANE_HEADER = 22;

function podsPerRow(width) { return Math.max(1, Math.floor((width - 12) / POD_STEP)); }

function quantity(allocatable) {
  return ["cpu", "memory", "pods"].filter((r) => allocatable[r] !== undefined)
    .map((r) => `${r} ${allocatable[r]}`).join(" · ");
}

function conditionsText(node) {
  const ready = node.conditions.find((c) => c.type === "Ready");
  const troubles = node.conditions.filter((c) => c.type !== "Ready" && c.status === "True")
    .map((c) => c.type);
  return [`Ready=${ready ? ready.status : "Unknown"}`, ...troubles].join(" · ");
}

export class ClusterView {
  constructor(dashboard) {
    this.dashboard = dashboard;
    this.root = document.getElementById("cluster");
    this.layers = {};
    for (const name of ["lanes", "nodes", "services", "pods"]) {
      this.layers[name] = this.root.appendChild(svg("g", { class: `layer-${name}` }));
    }
    this.nodes = new Map();      // node name -> <g>
    this.services = new Map();   // namespace/name -> <g>
    this.pods = new Map();       // namespace/name -> <rect>
    this.changes = new Map();    // element key -> the watch event type to animate
    this.shown = new WeakMap();  // element -> what it was last drawn from (see same())
    this.selected = "";
    this.frame = 0;
    this.tip = document.getElementById("pod-tip");
    // one listener each for every pod
    this.layers.pods.addEventListener("click", (event) => {
      if (!event.target.dataset.name) return;
      this.selected = event.target.dataset.name;
      this.showSelection();
      this.schedule();  // the pod's outline
    });
    this.layers.pods.addEventListener("mouseover", (event) => this.showTip(event));
    this.layers.pods.addEventListener("mouseout", () => { this.tip.hidden = true; });
    document.getElementById("selection-trace").addEventListener("click", () => {
      const [namespace, name] = this.selected.split("/");
      this.dashboard.trace.showObject("pods", namespace, name);
    });
    document.getElementById("selection-scheduler").addEventListener("click", () => {
      const [namespace, name] = this.selected.split("/");
      this.dashboard.scheduler.showPod(namespace, name);
    });
  }

  reset() {
    for (const element of [...this.nodes.values(), ...this.services.values(),
      ...this.pods.values()]) element.remove();
    this.nodes.clear();
    this.services.clear();
    this.pods.clear();
    this.changes.clear();
    this.schedule();
  }

  changed(kind, type, object) {
    if (kind === "EndpointSlice") {
      this.changes.set(`Service:${object.namespace}/${object.service}`, "MODIFIED");
    } else if (kind === "Node" || kind === "Pod" || kind === "Service") {
      this.changes.set(`${kind}:${keyOf(object)}`, type);
    } else {
      return;
    }
    this.schedule();
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  }

  draw() {
    const state = this.dashboard.state;
    const width = Math.max(this.root.clientWidth || 0, NODE_WIDTH + 2 * GAP);
    const columns = Math.max(1, Math.floor((width - GAP) / (NODE_WIDTH + GAP)));
    const perRow = podsPerRow(NODE_WIDTH);
    const byNode = new Map([...state.Node.keys()].map((name) => [name, []]));
    const pending = [];
    for (const key of [...state.Pod.keys()].sort()) {
      const pod = state.Pod.get(key);
      const list = pod.nodeName && byNode.get(pod.nodeName);
      if (list) list.push(pod); else pending.push(pod);
    }
    const places = new Map();  // pod key -> [x, y, node name]

    // the pending lane: pods the scheduler has not placed (or whose node is not known)
    const laneWidth = columns * (NODE_WIDTH + GAP) - GAP;
    const laneRows = Math.max(1, Math.ceil(pending.length / podsPerRow(laneWidth)));
    const laneHeight = LANE_HEADER + laneRows * POD_STEP + 6;
    this.drawLane(laneWidth, laneHeight, pending.length);
    pending.forEach((pod, i) => {
      const across = podsPerRow(laneWidth);
      places.set(keyOf(pod), [GAP + 6 + (i % across) * POD_STEP,
        GAP + LANE_HEADER + Math.floor(i / across) * POD_STEP, ""]);
    });

    // the nodes, in rows of `columns`
    let y = GAP + laneHeight + GAP;
    const names = [...byNode.keys()].sort();
    for (let row = 0; row < names.length; row += columns) {
      const inRow = names.slice(row, row + columns);
      const height = HEADER + 8 + Math.max(1, ...inRow.map(
        (name) => Math.ceil(byNode.get(name).length / perRow))) * POD_STEP;
      inRow.forEach((name, column) => {
        const x = GAP + column * (NODE_WIDTH + GAP);
        this.drawNode(state.Node.get(name), x, y, height);
        byNode.get(name).forEach((pod, i) => {
          places.set(keyOf(pod), [x + 6 + (i % perRow) * POD_STEP,
            y + HEADER + Math.floor(i / perRow) * POD_STEP, name]);
        });
      });
      y += height + GAP;
    }
    this.removeGone(this.nodes, state.Node, "Node");

    // the Services, with the endpoints their EndpointSlices list
    const endpoints = new Map();
    for (const slice of state.EndpointSlice.values()) {
      const key = `${slice.namespace}/${slice.service}`;
      endpoints.set(key, [...(endpoints.get(key) || []), ...slice.endpoints]);
    }
    const services = [...state.Service.values()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    for (let row = 0; row < services.length; row += columns) {
      const inRow = services.slice(row, row + columns);
      const height = 44 + Math.max(1, ...inRow.map(
        (s) => Math.ceil((endpoints.get(keyOf(s)) || []).length / perRow))) * POD_STEP;
      inRow.forEach((service, column) => {
        this.drawService(service, endpoints.get(keyOf(service)) || [],
          GAP + column * (NODE_WIDTH + GAP), y, height);
      });
      y += height + GAP;
    }
    this.removeGone(this.services, state.Service, "Service");

    for (const pod of state.Pod.values()) this.drawPod(pod, places.get(keyOf(pod)));
    this.removeGone(this.pods, state.Pod, "Pod");
    if (this.root.getAttribute("height") !== String(y)) this.root.setAttribute("height", y);
    // (no changes: a fresh snapshot, or a pod clicked)
    const selectedChanged = !this.changes.size || this.changes.has(`Pod:${this.selected}`);
    this.changes.clear();
    this.root.dataset.drawn = String(performance.now());
    if (!this.root.dataset.painted) {  // the first paint: the frame after the first drawing
      requestAnimationFrame(() => setTimeout(() => {
        this.root.dataset.painted = String(performance.now());
      }));
    }
    if (selectedChanged) this.showSelection();
  }

  // True when `element` was last drawn from `what` (the same values, in order); else
  // remember `what` for the next drawing. Objects compare by identity: the state holds a
  // new object for every watch event.
  same(element, ...what) {
    const before = this.shown.get(element);
    if (before && before.length === what.length && before.every((v, i) => v === what[i])) {
      return true;
    }
    this.shown.set(element, what);
    return false;
  }

  drawLane(width, height, count) {
    if (!this.lane) {
      this.lane = this.layers.lanes.appendChild(svg("g", { class: "lane", id: "pending-lane" }));
    }
    if (this.same(this.lane, width, height, count)) return;
    this.lane.replaceChildren(
      svg("rect", { class: "box", x: GAP, y: GAP, width, height, rx: 4 }),
      svg("text", { x: GAP + 6, y: GAP + 15 }, `Pending: no node yet (${count})`));
  }

  drawNode(node, x, y, height) {
    let group = this.nodes.get(node.name);
    if (!group) {
      group = this.layers.nodes.appendChild(svg("g", { class: "node" }));
      group.dataset.name = node.name;
      this.nodes.set(node.name, group);
    }
    this.animateChange(group, `Node:${node.name}`);
    if (this.same(group, node, x, y, height)) return;
    const ready = node.conditions.some((c) => c.type === "Ready" && c.status === "True");
    group.classList.toggle("not-ready", !ready);
    group.classList.toggle("cordoned", node.unschedulable);
    const taints = node.taints.map((t) => `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`);
    const lines = [
      svg("rect", { class: "box", x, y, width: NODE_WIDTH, height, rx: 4 }),
      svg("text", { class: "name", x: x + 6, y: y + 15 },
        node.name + (node.unschedulable ? " (cordoned)" : "")),
      svg("text", { class: "detail conditions", x: x + 6, y: y + 29 }, conditionsText(node)),
      svg("text", { class: "detail taints", x: x + 6, y: y + 42 },
        taints.length ? `taints: ${taints.join(", ")}` : "no taints"),
      svg("text", { class: "detail allocatable", x: x + 6, y: y + 55 },
        quantity(node.allocatable)),
    ];
    group.replaceChildren(...lines);
    titled(group, node.conditions.map((c) => `${c.type}=${c.status} ${c.reason}`).join("\n"));
  }

  drawService(service, endpoints, x, y, height) {
    const key = keyOf(service);
    let group = this.services.get(key);
    if (!group) {
      group = this.layers.services.appendChild(svg("g", { class: "service" }));
      group.dataset.name = key;
      this.services.set(key, group);
    }
    this.animateChange(group, `Service:${key}`);
    if (this.same(group, service, JSON.stringify(endpoints), x, y, height)) return;
    const ports = service.ports.map((p) => `${p.port}/${p.protocol}`).join(",");
    const children = [
      svg("rect", { class: "box", x, y, width: NODE_WIDTH, height, rx: 4 }),
      svg("text", { class: "name", x: x + 6, y: y + 15 }, `svc ${key}`),
      svg("text", { class: "detail", x: x + 6, y: y + 29 },
        `${service.type} ${service.clusterIP || "None"} ${ports}`),
    ];
    const perRow = podsPerRow(NODE_WIDTH);
    endpoints.forEach((endpoint, i) => {
      const circle = svg("circle", {
        class: `endpoint ${endpoint.ready ? "ready" : "not-ready"}`,
        cx: x + 12 + (i % perRow) * POD_STEP, cy: y + 44 + Math.floor(i / perRow) * POD_STEP,
        r: 5, "data-address": endpoint.addresses.join(","),
      });
      children.push(titled(circle, `${endpoint.addresses.join(",")} ${endpoint.pod} ` +
        `${endpoint.ready ? "ready" : "not ready"}`));
    });
    group.replaceChildren(...children);
  }

  drawPod(pod, [x, y, node]) {
    const key = keyOf(pod);
    let rect = this.pods.get(key);
    if (!rect) {
      rect = this.layers.pods.appendChild(svg("rect", { width: POD, height: POD, rx: 2 }));
      rect.dataset.name = key;
      this.pods.set(key, rect);
    }
    this.animateChange(rect, `Pod:${key}`);
    const classes = `pod ${pod.phase}` + (pod.ready ? "" : " not-ready") +
      (pod.deleting ? " deleting" : "") + (key === this.selected ? " selected" : "");
    if (this.same(rect, x, y, node, classes)) return;
    rect.setAttribute("x", x);
    rect.setAttribute("y", y);
    rect.setAttribute("class", classes);
    rect.dataset.node = node;
    rect.dataset.phase = pod.phase;
  }

  animateChange(element, key) {
    const type = this.changes.get(key);
    if (type && type !== "DELETED") animate(element, type);
  }

  // DELETED: the element plays its animation where it was, then goes.
  removeGone(elements, objects, kind) {
    for (const [key, element] of elements) {
      if (objects.has(key)) continue;
      elements.delete(key);
      animate(element, "DELETED");
      element.dataset.gone = "true";
      setTimeout(() => element.remove(), 650);
    }
  }

  // The tip of the pod under the mouse: its name, phase and IP as the state has them now.
  showTip(event) {
    const key = event.target.dataset.name;
    const pod = key && this.dashboard.state.Pod.get(key);
    if (!pod) return;
    this.tip.textContent = `${key} ${pod.phase}${pod.podIP ? " " + pod.podIP : ""}`;
    this.tip.style.left = `${event.clientX + 12}px`;
    this.tip.style.top = `${event.clientY + 12}px`;
    this.tip.hidden = false;
  }

  showSelection() {
    const aside = document.getElementById("selection");
    const pod = this.dashboard.state.Pod.get(this.selected);
    aside.hidden = !pod;
    if (!pod) return;
    document.getElementById("selection-title").textContent = `pod ${this.selected}`;
    const details = document.getElementById("selection-details");
    details.replaceChildren();
    for (const [term, value] of [["phase", pod.phase], ["ready", String(pod.ready)],
      ["node", pod.nodeName || "(none yet)"], ["pod IP", pod.podIP || "(none yet)"],
      ["uid", pod.uid]]) {
      details.append(html("dt", {}, term), html("dd", {}, value));
    }
  }
}
