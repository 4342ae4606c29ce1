// The page: its tabs, the one event stream from the server, and the state every view reads.
//
//   api/watch (Server-Sent Events; index.html opens it before the modules load)
//                                  --> state (one Map per kind, by namespace/name)
//                                  --> each view's changed(kind, type, object): it redraws
//                                      on the next animation frame, animating the change
//
// Links into the page (its URL's fragment):
//   #trace/<resource>/<namespace>/<name>   an object's path (namespace empty for a node)
//   #trace/<trace id>                      one trace
//   #scheduler/<namespace>/<pod>           the scheduler's decision for a pod
//   #events/<namespace>/<Kind>/<name>      the Events of one object
import { ClusterView } from "./cluster.js";
import { keyOf } from "./dom.js";
import { EventsView } from "./events.js";
import { SchedulerView } from "./scheduler.js";
import { TraceView } from "./trace.js";

const KINDS = ["Node", "Pod", "Service", "EndpointSlice", "Event"];

class Dashboard {
  constructor() {
    this.state = Object.fromEntries(KINDS.map((kind) => [kind, new Map()]));
    this.trace = new TraceView(this);
    this.scheduler = new SchedulerView(this);
    this.cluster = new ClusterView(this);
    this.events = new EventsView(this);
    this.views = [this.cluster, this.events];
    for (const button of document.querySelectorAll("nav button")) {
      button.addEventListener("click", () => this.show(button.dataset.view));
    }
  }

  // Follow a link into the page (the fragment, without its #).
  route(fragment) {
    const [view, ...parts] = fragment.split("/").map(decodeURIComponent);
    if (view === "trace" && parts.length === 3) this.trace.showObject(...parts);
    else if (view === "trace" && parts.length === 1) this.trace.showTrace(parts[0]);
    else if (view === "scheduler" && parts.length === 2) this.scheduler.showPod(...parts);
    else if (view === "events" && parts.length === 3) {
      this.events.showObject(parts[0], `${parts[1]}/${parts[2]}`);
    }
    else if (["cluster", "trace", "scheduler", "events"].includes(view)) this.show(view);
  }

  // Open another tab of the page (cluster, trace, scheduler, events).
  show(view) {
    for (const button of document.querySelectorAll("nav button")) {
      button.classList.toggle("active", button.dataset.view === view);
    }
    for (const section of document.querySelectorAll("section.view")) {
      section.classList.toggle("active", section.id === `view-${view}`);
    }
  }

  // The event stream; it reconnects by itself after a network error, and is opened again
  // here when the browser gave it up (an answer that was not an event stream). The first
  // is the one index.html opened before the modules loaded (`early`): the messages it
  // kept are handled first, in order.
  connect(early = null) {
    const status = document.getElementById("status");
    const source = early ? early.source : new EventSource("api/watch");
    this.source = source;
    const snapshotted = (message) => {
      document.body.dataset.snapshotAt = String(message.timeStamp);
      const snapshot = JSON.parse(message.data);
      for (const kind of KINDS) {
        this.state[kind] = new Map((snapshot[kind] || []).map((o) => [keyOf(o), o]));
      }
      status.textContent = "live";
      document.body.dataset.snapshot = "loaded";
      for (const view of this.views) view.reset();
    };
    const changed = (message) => {
      const { type, kind, object } = JSON.parse(message.data);
      const objects = this.state[kind];
      if (type === "DELETED") objects.delete(keyOf(object));
      else objects.set(keyOf(object), object);
      for (const view of this.views) view.changed(kind, type, object);
    };
    const failed = () => {
      status.textContent = "reconnecting…";
      if (source.readyState === EventSource.CLOSED && this.source === source) {
        setTimeout(() => this.connect(), 1000);
      }
    };
    source.addEventListener("snapshot", snapshotted);
    source.onmessage = changed;
    source.onerror = failed;
    if (early) {
      source.removeEventListener("snapshot", early.keep);
      source.removeEventListener("message", early.keep);
      for (const message of early.messages.splice(0)) {
        (message.type === "snapshot" ? snapshotted : changed)(message);
      }
      if (source.readyState === EventSource.CLOSED) failed();
    }
  }
}

const dashboard = new Dashboard();
window.dashboard = dashboard;
dashboard.connect(window.clusterStream);
// A page the browser leaves holds no stream: a browser opens 6 connections to a host at
// most, and the streams of pages kept for "back" would take them all. It comes back with
// a fresh snapshot.
window.addEventListener("pagehide", () => {
  dashboard.source.close();
  dashboard.source = null;
  dashboard.trace.stopFollowing();
});
window.addEventListener("pageshow", (event) => { if (event.persisted) dashboard.connect(); });
window.addEventListener("hashchange", () => dashboard.route(location.hash.slice(1)));
if (location.hash) dashboard.route(location.hash.slice(1));
