// Small DOM helpers: every element is built with createElement and text
// nodes, never parsed from strings, so data from the API cannot become markup.

/** h builds an element: attrs set properties ("class", "for", "on*" handlers, data-*, aria-*), children are nodes or text. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** s builds an SVG element the same way. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** clear empties an element and appends children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** fmt formats a count with thousands separators. */
export function fmt(n) {
  return Number(n).toLocaleString('en-AU');
}

/** say announces a message in the status line (polite live region). */
export function say(text) {
  const st = document.getElementById('status');
  st.textContent = text;
}

/** errorBox renders an API or network error as an alert. */
export function errorBox(err) {
  const code = err && err.code ? err.code : 'error';
  return h('div', { class: 'alert', role: 'alert' },
    h('strong', {}, code === 'error' ? 'Error' : code), ': ', err && err.message ? err.message : String(err));
}

/** download saves text (a string or a Blob) as a file named name. */
export function download(name, text, type) {
  const url = URL.createObjectURL(text instanceof Blob ? text : new Blob([text], { type: type || 'text/csv' }));
  const a = h('a', { href: url, download: name, class: 'hidden' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** webURL is u as an absolute http: or https: URL, or null for anything else (javascript:, data:, relative, not a URL). */
export function webURL(u) {
  if (typeof u !== 'string') return null;
  let url;
  try {
    url = new URL(u);
  } catch {
    return null;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
}

/**
 * sourceLink is a notice's source_url as a link opening in a new tab, labelled text, when it is
 * an http(s) URL; any other value is shown as plain text, never as a link.
 */
export function sourceLink(u, attrs, text) {
  const href = webURL(u);
  if (href) return h('a', Object.assign({ href, target: '_blank', rel: 'noopener noreferrer' }, attrs), text);
  return h('span', attrs, 'Source (not a web address, not linked): ', String(u));
}
