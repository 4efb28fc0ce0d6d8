"""A noticesd webhook receiver: Python standard library only.

Run:  NOTICES_WEBHOOK_SECRET=whsec_... PORT=8000 python3 receiver.py  (HOST: 127.0.0.1)
Serves https when TLS_CERT and TLS_KEY name PEM files, else plain http
(put it behind your TLS-terminating proxy: noticesd only delivers to https).

Every request's X-Notices-Signature is checked over the raw body before
anything else (401 on a mismatch); a test delivery (type "webhook.test")
is acknowledged; a notice delivery is handled once per X-Notices-Delivery.
"""
import hashlib
import hmac
import json
import os
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["NOTICES_WEBHOOK_SECRET"]
MAX_BODY = 1 << 20  # noticesd bodies are a few KiB
seen = set()  # delivery ids already handled: keep these in your database


def valid_signature(secret: str, raw_body: bytes, header: str) -> bool:
    """Check an X-Notices-Signature header against the raw request body."""
    want = "sha256=" + hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()
    return len(header) == len(want) and hmac.compare_digest(header, want)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return self.answer(413)
        raw = self.rfile.read(length)
        delivery = self.headers.get("X-Notices-Delivery", "")
        if not valid_signature(SECRET, raw, self.headers.get("X-Notices-Signature", "")):
            print("rejected", delivery, "bad signature", flush=True)
            return self.answer(401)
        event = json.loads(raw)
        if event.get("type") == "webhook.test":
            print("test", delivery, event["watch_id"], flush=True)
        elif delivery in seen:
            print("duplicate", delivery, flush=True)
        else:
            seen.add(delivery)
            notice = event["notice"]
            print("notice", delivery, notice["id"], notice["company_name"], flush=True)
        self.answer(204)

    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass  # one line per delivery above is enough


if __name__ == "__main__":
    server = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000"))), Handler)
    cert, key = os.environ.get("TLS_CERT"), os.environ.get("TLS_KEY")
    if cert and key:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("listening on", server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
