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

// A watch event's animation: ADDED grows in, MODIFIED flashes the outline, DELETED
// shrinks away (and stays gone).
const ANIMATIONS = {
  ADDED: [[{ transform: "scale(2.2)", opacity: 0 }, { transform: "scale(1)", opacity: 1 }],
    { duration: 600, easing: "ease-out" }],
  MODIFIED: [[{ stroke: "#000", strokeWidth: 3 }, {}], { duration: 600, easing: "ease-out" }],
  DELETED: [[{}, { opacity: 0, transform: "scale(0.2)" }],
    { duration: 600, easing: "ease-in", fill: "forwards" }],
};

// Play a watch event's animation on an element, even when the same one played a moment
// ago. The Web Animations API restarts it without the forced layout that restarting a
// CSS animation class takes (one per changed element per frame, over the whole drawing).
export function animate(element, type) {
  for (const running of element.getAnimations()) running.cancel();
  element.animate(...ANIMATIONS[type]);
  element.dataset.lastEvent = type;
}

// The key the state keeps an object under: namespace/name, or name for a cluster object.
export function keyOf(object) {
  return object.namespace ? `${object.namespace}/${object.name}` : object.name;
}
