// node viewer_shim.js PAGE.html OPENAPI.json: runs the script of the /docs
// page against a minimal DOM and the document, and fails when it throws or
// reports that it could not render. Used by TestDocsPageRenders.
const fs = require("node:fs");
const [page, docFile] = process.argv.slice(2);
const html = fs.readFileSync(page, "utf8");
const script = html.slice(html.indexOf("<script>") + 8, html.indexOf("</script>"));
let nodes = 0;
function el(tag) {
  return { tag, children: [], textContent: "", className: "", id: "", href: "",
    appendChild(c) { this.children.push(c); nodes++; return c; } };
}
const ids = { out: el("div"), title: el("h1") };
global.document = { createElement: el, createTextNode: (t) => ({ text: t }), getElementById: (id) => ids[id], title: "" };
global.location = { pathname: "/docs" };
const doc = JSON.parse(fs.readFileSync(docFile, "utf8"));
global.fetch = (url) => url === "/openapi.json"
  ? Promise.resolve({ ok: true, json: () => Promise.resolve(doc) })
  : Promise.reject(new Error("the page fetched " + url + ", not /openapi.json"));
new Function(script)();
// prose: the text shown as prose (outside code); blocks: the text of each
// <pre><code>, as a reader would copy it.
const prose = [], blocks = [];
function walk(n, inCode) {
  if (n.text !== undefined) { if (!inCode) prose.push(n.text); return; }
  const code = inCode || n.tag === "code" || n.tag === "pre";
  if (n.textContent && !code) prose.push(n.textContent);
  if (n.tag === "pre") n.children.forEach((c) => { if (c.tag === "code") blocks.push(c.textContent); });
  n.children.forEach((c) => walk(c, code));
}
setTimeout(() => {
  walk(ids.out, false);
  const failed = ids.out.children.length === 0 || ids.out.textContent.startsWith("Could not");
  console.log(JSON.stringify({ nodes, title: ids.title.textContent, sections: ids.out.children.length, text: ids.out.textContent, prose, blocks }));
  process.exitCode = failed ? 1 : 0; // not process.exit: it would cut a long stdout short
}, 200);
