// Events, live: newest first, filtered by the object they are about (Kind/name, or a
// part of its name) and by namespace. A click on an Event shows its object's path.
import { html } from "./dom.js";

// The resource of a kind, as the trace receiver names objects: upstream's plurals of the
// kinds Events are about are the kind in lower case plus "s" (Endpoints stays itself).
function resourceOf(kind) {
  const lower = kind.toLowerCase();
  return lower.endsWith("s") ? lower : `${lower}s`;
}

const SHOWN = 500;  // rows drawn at most

export class EventsView {
  constructor(dashboard) {
    this.dashboard = dashboard;
    this.body = document.querySelector("#events tbody");
    this.form = document.getElementById("events-form");
    this.form.addEventListener("input", () => this.draw());
    this.form.addEventListener("submit", (event) => event.preventDefault());
    this.frame = 0;
  }

  reset() { this.schedule(); }

  // Open this tab on the Events of one object (Kind/name, in a namespace or none).
  showObject(namespace, object) {
    this.form.namespace.value = namespace;
    this.form.object.value = object;
    this.dashboard.show("events");
    this.draw();
  }

  changed(kind) { if (kind === "Event") this.schedule(); }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  }

  matches(event) {
    const wanted = this.form.object.value.trim().toLowerCase();
    const namespace = this.form.namespace.value.trim();
    if (namespace && event.object.namespace !== namespace) return false;
    if (!wanted) return true;
    const [kind, name] = wanted.includes("/") ? wanted.split("/", 2) : ["", wanted];
    return (!kind || event.object.kind.toLowerCase() === kind)
      && event.object.name.toLowerCase().includes(name);
  }

  draw() {
    const events = [...this.dashboard.state.Event.values()].filter((e) => this.matches(e))
      .sort((a, b) => b.time.localeCompare(a.time)).slice(0, SHOWN);
    this.body.replaceChildren(...events.map((event) => {
      const row = html("tr", { class: `event ${event.type}` });
      const object = `${event.object.kind}/${event.object.name}`;
      row.dataset.object = object;
      row.addEventListener("click", () => this.dashboard.trace.showObject(
        resourceOf(event.object.kind), event.object.namespace, event.object.name));
      row.append(html("td", {}, event.time), html("td", {}, event.type),
        html("td", {}, event.object.namespace ? `${event.object.namespace}/${object}` : object),
        html("td", {}, event.reason), html("td", {}, event.source),
        html("td", {}, event.count > 1 ? `${event.message} (×${event.count})` : event.message));
      return row;
    }));
  }
}
