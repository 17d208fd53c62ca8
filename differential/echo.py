"""The back-end the recorder re-points a suite's endpoints at.

It answers as the capturing back-end of Sluice's integration tests (crates/sluice/tests/common,
`backend()`) does, so that Synapse's goldens and Sluice's answers come from the same kind of back-end:
status 200, the request's body, its Content-Type and, when the request had one, its Content-Length
(a request without one is answered chunked). A request header `x-test-delay-ms` delays the answer.
It counts the requests it sees, for the golden's `backend_count`.

Given canned answers (`conformance/stockquote.json`, for the Synapse samples' suites), it answers a
request whose body holds every string of an answer's `match` with that answer instead, as
crates/sluice/tests/common (`answers`) does: its status, Content-Type and body, each `{name}` in the
body filled with what the answer's `fill[name]` regular expression's group catches in the request.
"""

import http.server
import json
import re
import threading
import time


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def _body(self):
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # Trailers, up to the empty line.
                    while self.rfile.readline().strip():
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def _answer(self):
        body = self._body()
        self.server.seen_one(self.command, self.path, dict(self.headers.items()), body)
        delay = self.headers.get("x-test-delay-ms")
        if delay and delay.isdigit():
            time.sleep(int(delay) / 1000)
        canned = self.server.canned(body.decode("utf-8", errors="replace"))
        if canned is not None:
            status, ctype, text = canned
            data = text.encode()
            self.send_response_only(status)
            if ctype:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return
        self.send_response_only(200)
        ctype = self.headers.get("content-type")
        if ctype is not None:
            self.send_header("Content-Type", ctype)
        length = self.headers.get("content-length")
        if length is not None:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if body:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _answer


class EchoServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answers=None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self._lock = threading.Lock()
        self.seen = []
        self.answers = answers or []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def seen_one(self, method, path, headers, body):
        with self._lock:
            self.seen.append((method, path, headers, body))

    def canned(self, text):
        """(status, Content-Type, body) of the first canned answer `text` matches, or None."""
        for a in self.answers:
            if all(m in text for m in a["match"]):
                out = a.get("body", "")
                for name, pattern in a.get("fill", {}).items():
                    found = re.search(pattern, text)
                    out = out.replace("{" + name + "}", found.group(1) if found else "")
                return a.get("status", 200), a.get("content_type"), out
        return None

    def count(self):
        with self._lock:
            return len(self.seen)

    @property
    def url(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/backend"


def load_answers(path):
    """The canned answers of a file such as conformance/stockquote.json."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)["answers"]
