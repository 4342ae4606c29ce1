// Small helpers: make SVG and HTML elements, name an object as the state keeps it.
const SVG_NS = "http://www.w3.org/2000/svg";

export function svg(tag, attributes = {}, text = "") {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (text) element.textContent = text;
  return element;
}

export function html(tag, attributes = {}, text = "") {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (text) element.textContent = text;
  return element;
}

export function titled(element, text) {
  element.appendChild(svg("title", {}, text));
  return element;
}

// Play a watch event's animation on an element (ADDED, MODIFIED or DELETED), even when
// the same one played a moment ago.
export function animate(element, type) {
  element.classList.remove("ADDED", "MODIFIED", "DELETED");
  element.getBoundingClientRect();
  element.classList.add(type);
  element.dataset.lastEvent = type;
}

// The key the state keeps an object under: namespace/name, or name for a cluster object.
export function keyOf(object) {
  return object.namespace ? `${object.namespace}/${object.name}` : object.name;
}
