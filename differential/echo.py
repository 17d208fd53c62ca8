"""The back-end the recorder re-points a suite's endpoints at.

It answers as the capturing back-end of Sluice's integration tests (crates/sluice/tests/common,
`backend()`) does, so that Synapse's goldens and Sluice's answers come from the same kind of back-end:
status 200, the request's body, its Content-Type and, when the request had one, its Content-Length
(a request without one is answered chunked). A request header `x-test-delay-ms` delays the answer.
It counts the requests it sees, for the golden's `backend_count`.
"""

import http.server
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

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self._lock = threading.Lock()
        self.seen = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def seen_one(self, method, path, headers, body):
        with self._lock:
            self.seen.append((method, path, headers, body))

    def count(self):
        with self._lock:
            return len(self.seen)

    @property
    def url(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/backend"
