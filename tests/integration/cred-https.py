#!/usr/bin/env python3
"""A loopback HTTPS server for the credential tests (0690) and the proxy
benchmark.

    cred-https.py CERT KEY PORTFILE LOG

Listens on 127.0.0.1 (an ephemeral port, written to PORTFILE) with TLS
(ALPN http/1.1), HTTP/1.1 keep-alive.  Every request's head goes to LOG,
one JSON line each.  Answers:

  /redirect?to=URL   302 to URL
  /echo-auth         the Authorization header back, in the body
  /bytes?n=N         N bytes of "x"
  /sink              the body counted, not hashed (benchmarks)
  anything else      a JSON object: method, path, headers, body_len,
                     body_sha256, peer (the connection's port: the same
                     on a kept-alive connection)

A body (Content-Length or chunked) is read in 64 KiB pieces, hashed and
counted, never kept.
"""
import hashlib
import json
import socket
import ssl
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        # A head and its body are two writes: without NODELAY, Nagle and
        # the client's delayed ACK would hold each answer 40 ms.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def body(self):
        # /sink: counted only (the benchmark's uploads).
        h = hashlib.sha256() if not self.path.startswith("/sink") else None
        n = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                line = self.rfile.readline(4096)
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(4096) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                left = size
                while left:
                    d = self.rfile.read(min(left, 65536))
                    if not d:
                        raise ConnectionError("short chunk")
                    if h:
                        h.update(d)
                    n += len(d)
                    left -= len(d)
                self.rfile.readline(4096)
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                d = self.rfile.read(min(left, 65536))
                if not d:
                    raise ConnectionError("short body")
                if h:
                    h.update(d)
                n += len(d)
                left -= len(d)
        return n, h.hexdigest() if h else None

    def send(self, code, data, ctype="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def handle_any(self):
        n, digest = self.body()
        hdrs = [[k, v] for k, v in self.headers.items()]
        if sys.argv[4] != "-":
            with open(sys.argv[4], "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path,
                                    "headers": hdrs, "body_len": n}) + "\n")
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path == "/redirect":
            self.send(302, b"moved\n", "text/plain", [("Location", q["to"][0])])
        elif u.path == "/echo-auth":
            self.send(200, ("you sent: %s\n" % self.headers.get("Authorization")).encode(),
                      "text/plain")
        elif u.path == "/bytes":
            size = int(q["n"][0])
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            chunk = b"x" * 65536
            while size:
                k = min(size, len(chunk))
                self.wfile.write(chunk[:k])
                size -= k
        else:
            self.send(200, json.dumps({
                "method": self.command, "path": self.path, "headers": hdrs,
                "body_len": n, "body_sha256": digest,
                "peer": self.client_address[1]}).encode())

    do_GET = do_POST = do_PUT = do_HEAD = handle_any


class S(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
ctx.set_alpn_protocols(["http/1.1"])
srv = S(("127.0.0.1", 0), H)
# The handshake in the handler thread, not in accept (a client that
# never speaks TLS holds no one else up).
srv.socket = ctx.wrap_socket(srv.socket, server_side=True,
                             do_handshake_on_connect=False)
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
import os
os.rename(sys.argv[3] + ".tmp", sys.argv[3])
srv.serve_forever()
