"""The credential tests' client (0690, scripts/bench-proxy.sh): what
sbx exec and sbx-init do for a run, done by hand over the proxy's control
socket, then requests through the channel as a sandboxed program makes
them.  Loaded with exec() by a test's python snippet:

  session(creds, agent="a")   open a session with these credentials
  conn()                      a TCP connection handed over the channel
  connect(host, port)         CONNECT through it: (socket, status, head)
  socks(host, port)           the same over SOCKS5: (socket, reply code)
  tls(sock, host, cafile)     TLS over the tunnel, verified against cafile
  request(s, method, path, headers, body) -> (status, headers, body)
  end()                       the session's end answer
"""
import base64
import json
import os
import socket
import ssl

HOME = os.environ["SBX_HOME"]
SOCK = os.path.join(HOME, "run", "proxy.sock")
PROXY_CA = os.path.join(HOME, "config", "ca", "ca.crt")
CTL = None
CHAN = None
AGENT = None


def _line(s):
    b = b""
    while not b.endswith(b"\n"):
        c = s.recv(65536)
        if not c:
            break
        b += c
    return json.loads(b) if b else None


def session(creds, agent="a", run="1-test"):
    global CTL, CHAN, AGENT
    AGENT = agent
    CTL = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    CTL.settimeout(20)
    CTL.connect(SOCK)
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    line = json.dumps({"op": "session", "agent": agent, "run": run,
                       "credentials": creds}).encode() + b"\n"
    socket.send_fds(CTL, [line], [theirs.fileno()])
    theirs.close()
    CHAN = mine
    return _line(CTL)


def end():
    CTL.sendall(b'{"op":"end"}\n')
    return _line(CTL)


def conn(timeout=20, tag=b"H"):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    c = socket.create_connection(ls.getsockname(), 5)
    s, _ = ls.accept()
    ls.close()
    socket.send_fds(CHAN, [tag], [s.fileno()])
    s.close()
    c.settimeout(timeout)
    return c


def auth():
    tok = open(os.path.join(HOME, "run", "tokens", AGENT)).read().strip()
    return "Proxy-Authorization: Basic " + base64.b64encode(
        ("%s:%s" % (AGENT, tok)).encode()).decode()


def read_head(s):
    b = b""
    while b"\r\n\r\n" not in b:
        d = s.recv(1)
        if not d:
            break
        b += d
    return b.decode("latin-1")


def connect(host, port, extra=""):
    if extra and not extra.endswith("\r\n"):
        extra += "\r\n"
    c = conn()
    c.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n%s\r\n" %
               (host, port, host, port, auth(), extra)).encode())
    head = read_head(c)
    st = int(head.split(" ")[1]) if head.startswith("HTTP/") else None
    return c, st, head


def socks(host, port):
    """A SOCKS5 CONNECT (the sandbox's 1080): (socket, reply code)."""
    tok = open(os.path.join(HOME, "run", "tokens", AGENT)).read().strip()
    c = conn(tag=b"S")
    c.sendall(b"\x05\x01\x02")
    if c.recv(2) != b"\x05\x02":
        return c, None
    u, p = AGENT.encode(), tok.encode()
    c.sendall(bytes([1, len(u)]) + u + bytes([len(p)]) + p)
    if c.recv(2) != b"\x01\x00":
        return c, None
    n = host.encode()
    c.sendall(b"\x05\x01\x00\x03" + bytes([len(n)]) + n + port.to_bytes(2, "big"))
    r = b""
    while len(r) < 10:
        d = c.recv(10 - len(r))
        if not d:
            break
        r += d
    return c, r[1] if len(r) > 1 else None


def tls(sock, host, cafile=PROXY_CA, alpn=None):
    ctx = ssl.create_default_context(cafile=cafile)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx.wrap_socket(sock, server_hostname=host)


class Resp:
    def __init__(self, status, headers, body, raw_head):
        self.status = status
        self.headers = headers
        self.body = body
        self.raw_head = raw_head

    def json(self):
        return json.loads(self.body)

    def header(self, k):
        for a, b in self.headers:
            if a.lower() == k.lower():
                return b
        return None


def _readn(s, buf, n):
    while len(buf) < n:
        d = s.recv(65536)
        if not d:
            raise ConnectionError("closed after %d of %d" % (len(buf), n))
        buf += d
    return buf


def read_response(s, head_only=False, buf=b""):
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise ConnectionError("closed before a response")
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    hdrs = [tuple(x.split(":", 1)) for x in lines[1:]]
    hdrs = [(a.strip(), b.strip()) for a, b in hdrs]
    if 100 <= status < 200:
        return read_response(s, head_only, rest)
    n = None
    chunked = False
    for a, b in hdrs:
        if a.lower() == "content-length":
            n = int(b)
        if a.lower() == "transfer-encoding" and "chunked" in b.lower():
            chunked = True
    if head_only or status in (204, 304):
        return Resp(status, hdrs, b"", head.decode("latin-1"))
    if chunked:
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += s.recv(65536)
            line, _, rest = rest.partition(b"\r\n")
            size = int(line.split(b";")[0], 16)
            if size == 0:
                break
            rest = _readn(s, rest, size + 2)
            body += rest[:size]
            rest = rest[size + 2:]
        return Resp(status, hdrs, body, head.decode("latin-1"))
    if n is None:
        while True:
            d = s.recv(65536)
            if not d:
                break
            rest += d
        return Resp(status, hdrs, rest, head.decode("latin-1"))
    rest = _readn(s, rest, n)
    return Resp(status, hdrs, rest[:n], head.decode("latin-1"))


def request(s, method, path, host, headers=(), body=None, raw=None):
    if raw is not None:
        s.sendall(raw)
    else:
        h = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, path, host)
        for k, v in headers:
            h += "%s: %s\r\n" % (k, v)
        if body is not None and not any(k.lower() in ("content-length", "transfer-encoding")
                                        for k, _ in headers):
            h += "Content-Length: %d\r\n" % len(body)
        s.sendall(h.encode() + b"\r\n" + (body or b""))
    return read_response(s, head_only=(method == "HEAD"))
