// A noticesd webhook receiver: Node.js standard library only.
//
// Run:  NOTICES_WEBHOOK_SECRET=whsec_... PORT=8000 node receiver.js  (HOST: 127.0.0.1)
// Serves https when TLS_CERT and TLS_KEY name PEM files, else plain http
// (put it behind your TLS-terminating proxy: noticesd only delivers to https).
//
// Every request's X-Notices-Signature is checked over the raw body before
// anything else (401 on a mismatch); a test delivery (type "webhook.test")
// is acknowledged; a notice delivery is handled once per X-Notices-Delivery.
const crypto = require("node:crypto");
const fs = require("node:fs");
const http = require("node:http");
const https = require("node:https");

const SECRET = process.env.NOTICES_WEBHOOK_SECRET;
const MAX_BODY = 1 << 20; // noticesd bodies are a few KiB
const seen = new Set(); // delivery ids already handled: keep these in your database

// validSignature checks an X-Notices-Signature header against the raw body (a Buffer).
function validSignature(secret, rawBody, header) {
  const want = "sha256=" + crypto.createHmac("sha256", secret).update(rawBody).digest("hex");
  const got = Buffer.from(String(header || ""));
  return got.length === want.length && crypto.timingSafeEqual(got, Buffer.from(want));
}

function handle(req, res) {
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size > MAX_BODY) req.destroy();
    else chunks.push(c);
  });
  req.on("end", () => {
    const raw = Buffer.concat(chunks);
    const delivery = req.headers["x-notices-delivery"] || "";
    if (!validSignature(SECRET, raw, req.headers["x-notices-signature"])) {
      console.log("rejected", delivery, "bad signature");
      res.writeHead(401).end();
      return;
    }
    const event = JSON.parse(raw);
    if (event.type === "webhook.test") {
      console.log("test", delivery, event.watch_id);
    } else if (seen.has(delivery)) {
      console.log("duplicate", delivery);
    } else {
      seen.add(delivery);
      console.log("notice", delivery, event.notice.id, event.notice.company_name);
    }
    res.writeHead(204).end();
  });
}

const { TLS_CERT, TLS_KEY } = process.env;
const server = TLS_CERT && TLS_KEY
  ? https.createServer({ cert: fs.readFileSync(TLS_CERT), key: fs.readFileSync(TLS_KEY) }, handle)
  : http.createServer(handle);
server.listen(Number(process.env.PORT || 8000), process.env.HOST || "127.0.0.1", () => {
  console.log("listening on", server.address().port);
});
