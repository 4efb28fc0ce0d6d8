// Run by TestSourceLink (node): a notice's source_url becomes a link only
// when it is an http(s) URL; anything else is plain text. The few DOM
// calls dom.js's h makes are served by a minimal document of the test's own.
import assert from 'node:assert/strict';

class Node {}
class Text extends Node {
  constructor(text) {
    super();
    this.textContent = text;
  }
}
class Element extends Node {
  constructor(tag) {
    super();
    this.tagName = tag;
    this.attrs = {};
    this.children = [];
  }
  setAttribute(k, v) {
    this.attrs[k] = v;
  }
  addEventListener() {}
  append(...c) {
    this.children.push(...c);
  }
  get textContent() {
    return this.children.map((c) => c.textContent).join('');
  }
}
globalThis.Node = Node;
globalThis.document = { createElement: (tag) => new Element(tag), createTextNode: (t) => new Text(t) };

const { webURL, sourceLink } = await import('../assets/dom.js');

for (const [u, want] of [
  ['https://publishednotices.asic.gov.au/n/1', 'https://publishednotices.asic.gov.au/n/1'],
  ['HTTP://Example.com/a', 'http://example.com/a'],
  ['javascript:alert(4)', null],
  [' JavaScript:alert(4)', null],
  ['java\tscript:alert(4)', null],
  ['data:text/html,<script>alert(4)</script>', null],
  ['vbscript:msgbox(4)', null],
  ['//example.com/a', null],
  ['/n/1', null],
  ['not a url', null],
  ['', null],
  [null, null],
]) {
  assert.equal(webURL(u), want, `webURL(${JSON.stringify(u)})`);
}

const link = sourceLink('https://example.com/n/1', { id: 'source' }, 'Open the source notice ↗');
assert.equal(link.tagName, 'a');
assert.deepEqual(link.attrs, { href: 'https://example.com/n/1', target: '_blank', rel: 'noopener noreferrer', id: 'source' });
assert.equal(link.textContent, 'Open the source notice ↗');

for (const u of ['javascript:alert(4)', 'data:text/html,x', '//example.com/a']) {
  const el = sourceLink(u, { id: 'source' }, 'Open the source notice ↗');
  assert.equal(el.tagName, 'span', `${u} is rendered as a ${el.tagName}`);
  assert.equal(el.attrs.href, undefined);
  assert.ok(el.textContent.endsWith(u), `${u} is shown as text: ${el.textContent}`);
}
console.log('links ok');
