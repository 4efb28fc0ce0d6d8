# verify.py SECRET BODY_FILE SIGNATURE: exit 0 when SIGNATURE is the noticesd
# signature of the file's bytes, 1 otherwise.
import hashlib
import hmac
import sys


def valid_signature(secret: str, raw_body: bytes, header: str) -> bool:
    """Check an X-Notices-Signature header against the raw request body."""
    want = "sha256=" + hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()
    return len(header) == len(want) and hmac.compare_digest(header, want)


if __name__ == "__main__":
    with open(sys.argv[2], "rb") as f:
        sys.exit(0 if valid_signature(sys.argv[1], f.read(), sys.argv[3]) else 1)
