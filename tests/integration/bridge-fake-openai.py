#!/usr/bin/env python3
"""A fake OpenAI-compatible endpoint for the bridge's inference tests.

    bridge-fake-openai.py PORTFILE LOG

Listens on 127.0.0.1 (an ephemeral port, written to PORTFILE), answers
POST /v1/chat/completions by the model's name: "hang" never answers,
"err" answers 500, anything else a completion (with "stream": true, three
server-sent events and [DONE]).  Each request's Authorization header and
body go to LOG, one JSON line each.
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"auth": self.headers.get("Authorization"),
                                "body": body}) + "\n")
        model = body.get("model")
        if model == "hang":
            time.sleep(3600)
            return
        if model == "err":
            out = b'{"error":"boom"}'
            self.send_response(500)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for w in ("hel", "lo", "!"):
                ev = {"choices": [{"delta": {"content": w}}]}
                self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
            return
        out = json.dumps({"id": "x", "model": model, "choices": [
            {"message": {"role": "assistant", "content": "hello"}}],
            "usage": {"total_tokens": 7}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


s = ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
