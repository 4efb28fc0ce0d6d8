// node verify.js SECRET BODY_FILE SIGNATURE: exit 0 when SIGNATURE is the
// noticesd signature of the file's bytes, 1 otherwise.
const crypto = require("node:crypto");
const fs = require("node:fs");

// validSignature checks an X-Notices-Signature header against the raw body
// (a Buffer: with Express use express.raw({ type: "application/json" })).
function validSignature(secret, rawBody, header) {
  const want = "sha256=" + crypto.createHmac("sha256", secret).update(rawBody).digest("hex");
  const got = Buffer.from(String(header || ""));
  return got.length === want.length && crypto.timingSafeEqual(got, Buffer.from(want));
}

const [secret, file, header] = process.argv.slice(2);
process.exit(validSignature(secret, fs.readFileSync(file), header) ? 0 : 1);
