# proxy.bash: fixtures for the sbx-proxy tests (0600-0602, 0610-0630), loaded
# after lib.bash.
#
# Every server is bound to the host's 127.0.0.1 and nothing else is ever
# contacted: test names (*.sbx.test) reach those servers only through the
# agent's `resolve` overrides (which need `allow_private`) or through the
# logging DNS stub named by `dns_server` in config/sandbox.json.
#
#   proxy_setup / proxy_teardown    per test: state root, servers, proxy
#   make_certs DIR                  test CA + server certificate (SANs)
#   start_tls_server                openssl s_server -WWW      -> TLS_PORT
#   start_canary                    counting TCP/HTTP server   -> CANARY_PORT
#   start_dns_stub NAME=IP...       logging DNS stub           -> DNS_PORT
#                                   (DNS_DELAY=MS: every answer that late)
#   start_banner                    server-first TCP server    -> BANNER_PORT
#   write_sandbox_config [JSON]     config/sandbox.json `proxy` object
#   write_agent_config A [JSON]     config/agents/A.json (merged over defaults)
#   agent_ready A                   home with the CA and the test client
#   pexec A ARGS...                 sbx exec -q --network proxy --agent A -- ARGS
#   pcurl A ARGS...                 curl inside, trusting the test CA
#   raw_requests A NAME=REQ...      raw requests from inside, one JSON line each
#
# Teardown kills every server it started (by pid), runs `sbx proxy stop`,
# and kills the proxy by its pid if it is still there, also when a test
# failed.
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # variables shared with bats and the .bats file

PROXY_PORT=3128
OPENSSL=$(command -v openssl 2>/dev/null || true)
SOCAT=/usr/bin/socat
CURL=/usr/bin/curl

# The test client, run by the sandbox's python3 (the host's /usr).  It
# reads its credentials from HTTP_PROXY, as every proxy client does, and
# prints one JSON object per request.
PC_PY='
import base64, json, os, random, select, socket, ssl, struct, subprocess, sys, time

PROXY = ("127.0.0.1", int(os.environ.get("PC_PORT", "3128")))

def cred():
    u = os.environ.get("HTTP_PROXY", "")
    rest = u.split("://", 1)[-1]
    return rest.rsplit("@", 1)[0] if "@" in rest else ""

def auth_line():
    return "Proxy-Authorization: Basic " + base64.b64encode(cred().encode()).decode()

def parse(buf):
    i = buf.find(b"\r\n\r\n")
    head = buf[:i] if i >= 0 else buf
    lines = head.decode("latin-1").split("\r\n")
    st = None
    p = lines[0].split(" ") if lines else []
    if len(p) >= 2 and p[0].startswith("HTTP/") and p[1].isdigit():
        st = int(p[1])
    hdr = {}
    for l in lines[1:]:
        if ":" in l:
            k, v = l.split(":", 1)
            hdr.setdefault(k.strip().lower(), v.strip())
    return st, hdr, "\n".join(lines), (buf[i + 4:] if i >= 0 else b""), i >= 0

def read_resp(s, timeout, connect=False, limit=1 << 20):
    buf, how = b"", "timeout"
    end = time.monotonic() + timeout
    while len(buf) < limit:
        left = end - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            how = "reset"
            break
        except OSError:
            how = "error"
            break
        if not d:
            how = "eof"
            break
        buf += d
        st, _, _, _, complete = parse(buf)
        # An open tunnel stays open: do not wait the whole timeout.
        if connect and complete and st == 200:
            end = min(end, time.monotonic() + 0.5)
    return buf, how

def summary(name, buf, how, t0, **kw):
    st, hdr, head, body, _ = parse(buf)
    r = {"name": name, "status": st, "reason": hdr.get("x-proxy-error"),
         "closed": how in ("eof", "reset"), "end": how, "head": head,
         "authenticate": hdr.get("proxy-authenticate"),
         "body": body[:512].decode("latin-1"),
         "responses": sum(1 for l in buf.split(b"\r\n") if l.startswith(b"HTTP/1.")),
         "ms": int((time.monotonic() - t0) * 1000)}
    r.update(kw)
    return r

def raw(paths):
    timeout = WAIT
    for p in paths:
        data = open(p, "rb").read().replace(b"@AUTH@", auth_line().encode())
        t0 = time.monotonic()
        s = socket.create_connection(PROXY, 5)
        s.settimeout(timeout)
        sent = "ok"
        try:
            s.sendall(data)
        except OSError as e:
            sent = type(e).__name__
        buf, how = read_resp(s, timeout, data.startswith(b"CONNECT "))
        s.close()
        print(json.dumps(summary(os.path.basename(p), buf, how, t0, send=sent)), flush=True)

def client_hello(name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    c = ctx.wrap_bio(i, o, server_hostname=name)
    try:
        c.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return o.read()

def connect(target, extra=""):
    s = socket.create_connection(PROXY, 5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n%s\r\n" %
               (target, target, auth_line(), extra)).encode())
    buf = b""
    s.settimeout(5)
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    return s, buf

# tunnel HOST:PORT sni NAME | nosni | plain TEXT [SPLIT] | none
# (plain: the two characters \r and \n in TEXT are sent as CR and LF;
# none: send nothing, listen)
def tunnel(target, mode, arg=None, split=0):
    t0 = time.monotonic()
    s, buf = connect(target)
    st, hdr, head, rest, _ = parse(buf)
    out = {"status": st, "reason": hdr.get("x-proxy-error")}
    if st == 200:
        if mode == "sni":
            payload = client_hello(arg)
        elif mode == "nosni":
            payload = client_hello(None)
        elif mode == "none":
            payload = b""
        else:
            payload = arg.replace("\\r", "\r").replace("\\n", "\n").encode()
        try:
            if not payload:
                pass
            elif split:
                s.sendall(payload[:split])
                time.sleep(0.3)
                s.sendall(payload[split:])
            else:
                s.sendall(payload)
            got, how = read_resp(s, WAIT)
        except OSError as e:
            got, how = b"", "reset"
        # What came with the 200 (a server that speaks first).
        got = rest + got
        out["tunnel"] = "open" if got else ("closed" if how in ("eof", "reset", "error") else "silent")
        out["reply"] = got[:64].decode("latin-1")
        out["end"] = how
    out["ms"] = int((time.monotonic() - t0) * 1000)
    print(json.dumps(out), flush=True)

# hold N [--send TEXT] [--ready FILE] [--until FILE] [--max S] [-- CMD...]
def hold(argv):
    n, send, ready, until, mx, cmd = int(argv[0]), None, None, None, 10.0, None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            cmd = argv[i + 1:]
            break
        v = argv[i + 1]
        if a == "--send": send = v.encode()
        elif a == "--ready": ready = v
        elif a == "--until": until = v
        elif a == "--max": mx = float(v)
        i += 2
    socks, errs = [], 0
    for _ in range(n):
        try:
            s = socket.create_connection(PROXY, 5)
            if send:
                s.sendall(send)
            socks.append(s)
        except OSError:
            errs += 1
    if ready:
        with open(ready + ".tmp", "w") as f:
            f.write("%d %d\n" % (len(socks), errs))
        os.rename(ready + ".tmp", ready)
    res = {"opened": len(socks), "errors": errs}
    if cmd:
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        res.update(cmd_status=p.returncode, cmd_out=p.stdout.decode("latin-1")[:512],
                   cmd_err=p.stderr.decode("latin-1")[:512],
                   cmd_ms=int((time.monotonic() - t0) * 1000))
    end = time.monotonic() + mx
    while not cmd and time.monotonic() < end and not (until and os.path.exists(until)):
        time.sleep(0.05)
    closed = refused = 0
    for s in socks:
        s.setblocking(False)
        try:
            d = s.recv(4096)
            if d == b"":
                closed += 1
            elif b" 503 " in d.split(b"\r\n")[0]:
                refused += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    res.update(closed=closed, refused503=refused)
    print(json.dumps(res), flush=True)

# slow HOST:PORT INTERVAL MAXSECONDS: one byte per INTERVAL
def slow(target, interval, mx):
    data = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n\r\n" % (target, target, auth_line())).encode()
    s = socket.create_connection(PROXY, 5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.monotonic()
    sent, buf, how = 0, b"", "timeout"
    while time.monotonic() - t0 < mx and sent < len(data):
        try:
            s.send(data[sent:sent + 1])
            sent += 1
        except OSError:
            how = "reset"
            break
        r, _, _ = select.select([s], [], [], interval)
        if r:
            buf, how = read_resp(s, 2)
            break
    st, hdr, _, _, _ = parse(buf)
    print(json.dumps({"status": st, "reason": hdr.get("x-proxy-error"), "end": how,
                      "sent": sent, "ms": int((time.monotonic() - t0) * 1000)}), flush=True)

# flood PATTERN N BATCH MAXSECONDS [--ready FILE]: N CONNECTs to PATTERN
# with {} replaced by a fresh label each, BATCH at a time; each batch is
# reset (RST) once the proxy had a moment to read it: lookups abandoned
# at once.  Stops after MAXSECONDS.
def flood(pattern, n, batch, mx, ready=None):
    t0 = time.monotonic()
    sent = refused = errs = 0
    rnd = random.Random(10)
    while sent < n and time.monotonic() - t0 < mx:
        socks = []
        for _ in range(min(batch, n - sent)):
            target = pattern.replace("{}", "f%d-%d" % (sent, rnd.getrandbits(24)))
            try:
                s = socket.create_connection(PROXY, 5)
                s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n\r\n" %
                           (target, target, auth_line())).encode())
                socks.append(s)
            except OSError:
                errs += 1
            sent += 1
        time.sleep(0.02)
        for s in socks:
            s.setblocking(False)
            try:
                if b" 503 " in s.recv(4096).split(b"\r\n")[0]:
                    refused += 1
            except OSError:
                pass
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        if ready and sent >= batch and not os.path.exists(ready):
            open(ready, "w").close()
    print(json.dumps({"sent": sent, "refused503": refused, "errors": errs,
                      "ms": int((time.monotonic() - t0) * 1000)}), flush=True)

# abuse: garbage, half-closes and resets; the proxy must survive all of it
def abuse(target):
    rnd = random.Random(6)
    def conn():
        return socket.create_connection(PROXY, 5)
    def rst(s):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    done = 0
    for i in range(40):
        s = conn()
        try:
            s.sendall(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 4096))))
            read_resp(s, 0.5)
        except OSError:
            pass
        (rst if i % 2 else socket.socket.close)(s)
        done += 1
    for i in range(20):
        s = conn()
        (rst if i % 2 else socket.socket.close)(s)
        done += 1
    for part in (b"CONNECT ", b"CONNECT " + target.encode() + b" HTTP/1.1\r\nHost: x\r\n",
                 b"GET http://" + target.encode() + b"/ HTTP/1.1\r\n"):
        s = conn()
        s.sendall(part)
        s.shutdown(socket.SHUT_WR)
        read_resp(s, 2)
        s.close()
        s = conn()
        s.sendall(part)
        time.sleep(0.05)
        rst(s)
        done += 2
    for how in ("rst", "halfclose", "close"):
        s, buf = connect(target)
        try:
            s.sendall(b"\x16\x03\x01\x00")
            if how == "rst":
                rst(s)
            elif how == "halfclose":
                s.shutdown(socket.SHUT_WR)
                read_resp(s, 2)
                s.close()
            else:
                s.close()
        except OSError:
            pass
        done += 1
    s = conn()
    s.sendall(b"GET http://a\x00b/ HTTP/1.1\r\nHost: \xff\xfe\r\n\r\n")
    read_resp(s, 1)
    s.close()
    print(json.dumps({"abused": done + 1}), flush=True)

WAIT = 3.0
if sys.argv[1].startswith("--wait="):
    WAIT = float(sys.argv.pop(1)[7:])
cmd = sys.argv[1]
if cmd == "raw": raw(sys.argv[2:])
elif cmd == "tunnel": tunnel(sys.argv[2], sys.argv[3], *(sys.argv[4:5]), *[int(x) for x in sys.argv[5:6]])
elif cmd == "hold": hold(sys.argv[2:])
elif cmd == "slow": slow(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
elif cmd == "abuse": abuse(sys.argv[2])
elif cmd == "flood": flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]),
                           sys.argv[7] if len(sys.argv) > 7 and sys.argv[6] == "--ready" else None)
else: sys.exit("unknown command " + cmd)
'

# The canary: counts connections (one `accept N` line in $dir/hits at each
# accept, before reading anything) and keeps what each one sent
# ($dir/conn.N).  An HTTP request gets `200 canary` (or 1 MiB at /big);
# any other first bytes get `canary-ok` at once, so that a tunnel client
# sees its bytes arrived.
CANARY_PY='
import os, re, socket, sys, threading
d = sys.argv[1]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(1024)
lock = threading.Lock()
count = [0]
def handle(c, i):
    c.settimeout(1.5)
    data = b""
    replied = False
    try:
        while len(data) < (1 << 22):
            x = c.recv(65536)
            if not x:
                break
            data += x
            http = re.match(rb"[A-Z]+ ", data) is not None
            if http and b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                cl = 0
                for l in head.split(b"\r\n")[1:]:
                    k, _, v = l.partition(b":")
                    if k.strip().lower() == b"content-length" and v.strip().isdigit():
                        cl = int(v.strip())
                if len(body) < cl:
                    continue
                big = head.split(b" ")[1:2] == [b"/big"]
                payload = b"x" * (1 << 20) if big else b"canary\n"
                if head.split(b" ")[1:2] == [b"/keepalive"]:
                    # A server that keeps connections alive, with an
                    # interim answer first.
                    c.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Type: text/plain\r\nKeep-Alive: timeout=5,\r\n max=100\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
                else:
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(payload) + payload)
                replied = True
                break
            if not replied and not http and len(data) >= 1:
                c.sendall(b"canary-ok\n")
                replied = True
                # A tunnel: keep it open for the idle-timeout tests.
                c.settimeout(10)
    except OSError:
        pass
    with open(os.path.join(d, "conn.%d" % i), "wb") as f:
        f.write(data)
    try:
        c.close()
    except OSError:
        pass
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    with lock:
        count[0] += 1
        i = count[0]
    with open(os.path.join(d, "hits"), "a") as f:
        f.write("accept %d\n" % i)
    threading.Thread(target=handle, args=(c, i), daemon=True).start()
'

proxy_setup() {
	sbx_setup
	SERVER_PIDS=()
	BG_PIDS=()
	TLS_PORT=
	CANARY_PORT=
	BANNER_PORT=
	DNS_PORT=
	CANARY_DIR=$TEST_ROOT/canary
	DNS_LOG=$TEST_ROOT/dns.log
	mkdir -p "$CANARY_DIR" "$TEST_ROOT/www"
	echo hello-over-tls > "$TEST_ROOT/www/index.txt"
	: > "$DNS_LOG"
	PLOG=$SBX_HOME/run/proxy.log
	: "${CERTS:=$TEST_ROOT/certs}"
}

proxy_teardown() {
	local p pid i
	# Sandboxes a test left in the background: their sbx exec ends the
	# sandbox when it is signalled.
	for p in "${BG_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${BG_PIDS[@]}"; do
		for i in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "${SBX_HOME:-}" ] && [ -d "$SBX_HOME/run" ]; then
		pid=$(proxy_pid)
		timeout 10 "$SBX" proxy stop >/dev/null 2>&1
		if [ -n "$pid" ]; then
			for i in $(seq 30); do
				proxy_alive "$pid" || break
				sleep 0.1
			done
			# Still there: it is ours (its pidfile is in this test's
			# root and its command line names sbx-proxy).
			proxy_alive "$pid" && kill -KILL "$pid" 2>/dev/null
		fi
	fi
	for p in "${SERVER_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${SERVER_PIDS[@]}"; do
		for i in $(seq 20); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	sbx_teardown
}

# The proxy's pid from its pidfile, empty when there is none.
proxy_pid() {
	sed -n '1s/^\([0-9][0-9]*\).*/\1/p' "$SBX_HOME/run/proxy.pid" 2>/dev/null
}

# proxy_alive PID: that pid is alive and is an sbx-proxy.
proxy_alive() {
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
	    tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q 'sbx-proxy'
}

need_proxy_tools() {
	[ -x "$PY" ] || skip "python3 is not installed"
	[ -n "$OPENSSL" ] || skip "openssl is not installed"
	[ -x "$CURL" ] || skip "curl is not installed"
	[ -x "$SBX_TEST_BUILD/libexec/sbx/sbx-proxy" ] ||
	    skip "sbx-proxy is not built"
}

# free_port: a port of 127.0.0.1 that was free a moment ago (for a port
# nobody listens on; the servers below pick their own).
free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_line FILE: the first line of FILE once it has one (5 s at most).
wait_line() {
	local i l
	for i in $(seq 100); do
		l=$(head -n 1 "$1" 2>/dev/null)
		[ -n "$l" ] && { printf '%s\n' "$l"; return 0; }
		sleep 0.05
	done
	return 1
}

# make_certs DIR: DIR/ca.pem (a throwaway CA), DIR/server.pem and
# DIR/server.key, valid for the test names.  EC keys: fast to make.
make_certs() {
	local d=$1
	[ -f "$d/server.pem" ] && return 0
	mkdir -p "$d"
	"$OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	    -nodes -keyout "$d/ca.key" -out "$d/ca.pem" -days 2 \
	    -subj "/CN=sbx test CA" -addext "basicConstraints=critical,CA:TRUE" \
	    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || return 1
	"$OPENSSL" req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	    -nodes -keyout "$d/server.key" -out "$d/server.csr" \
	    -subj "/CN=allowed.sbx.test" 2>/dev/null || return 1
	cat > "$d/ext.cnf" <<-'EOF'
		basicConstraints=CA:FALSE
		keyUsage=critical,digitalSignature
		extendedKeyUsage=serverAuth
		subjectAltName=DNS:allowed.sbx.test,DNS:www.wild.sbx.test,DNS:*.wild.sbx.test,DNS:other.sbx.test,DNS:viadns.sbx.test,DNS:xn--bcher-kva.sbx.test
	EOF
	"$OPENSSL" x509 -req -in "$d/server.csr" -CA "$d/ca.pem" \
	    -CAkey "$d/ca.key" -CAcreateserial -out "$d/server.pem" -days 2 \
	    -extfile "$d/ext.cnf" 2>/dev/null || return 1
	chmod a+r "$d"/*.pem
}

# start_tls_server: openssl s_server on 127.0.0.1, serving $TEST_ROOT/www
# (index.txt says hello-over-tls) over TLS; sets TLS_PORT.
start_tls_server() {
	make_certs "$CERTS" || return 1
	(cd "$TEST_ROOT/www" && exec "$OPENSSL" s_server \
	    -accept 127.0.0.1:0 -cert "$CERTS/server.pem" \
	    -key "$CERTS/server.key" -WWW) \
	    > "$TEST_ROOT/tls.out" 2> "$TEST_ROOT/tls.err" 3>&- &
	SERVER_PIDS+=("$!")
	local i
	for i in $(seq 100); do
		TLS_PORT=$(sed -n 's/^ACCEPT .*:\([0-9][0-9]*\)$/\1/p' \
		    "$TEST_ROOT/tls.out" | head -n 1)
		[ -n "$TLS_PORT" ] && break
		sleep 0.05
	done
	[ -n "$TLS_PORT" ] || { cat "$TEST_ROOT/tls.err" >&2; return 1; }
}

# start_canary: sets CANARY_PORT; canary_hits prints the connection count.
start_canary() {
	"$PY" -u -c "$CANARY_PY" "$CANARY_DIR" > "$TEST_ROOT/canary.port" \
	    2> "$TEST_ROOT/canary.err" 3>&- &
	SERVER_PIDS+=("$!")
	CANARY_PORT=$(wait_line "$TEST_ROOT/canary.port") ||
	    { cat "$TEST_ROOT/canary.err" >&2; return 1; }
}

canary_hits() {
	if [ -f "$CANARY_DIR/hits" ]; then
		wc -l < "$CANARY_DIR/hits" | tr -d ' '
	else
		echo 0
	fi
}

# canary_data N: what connection N sent (after it ended; waits 3 s at most).
canary_data() {
	local i
	for i in $(seq 60); do
		[ -f "$CANARY_DIR/conn.$1" ] && break
		sleep 0.05
	done
	cat "$CANARY_DIR/conn.$1" 2>/dev/null
}

# A server-first TCP server (as SSH or SMTP are): at each accept it sends
# "banner-first", then echoes what it gets; keeps what each connection sent
# in $dir/banner.N.
BANNER_PY='
import os, socket, sys, threading
d = sys.argv[1]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
def handle(c, i):
    data = b""
    c.settimeout(5)
    try:
        c.sendall(b"banner-first\r\n")
        while True:
            x = c.recv(65536)
            if not x:
                break
            data += x
            c.sendall(x)
    except OSError:
        pass
    with open(os.path.join(d, "banner.%d" % i), "wb") as f:
        f.write(data)
    c.close()
print(s.getsockname()[1], flush=True)
i = 0
while True:
    c, _ = s.accept()
    i += 1
    threading.Thread(target=handle, args=(c, i), daemon=True).start()
'

start_banner() {
	"$PY" -u -c "$BANNER_PY" "$CANARY_DIR" > "$TEST_ROOT/banner.port" \
	    2> "$TEST_ROOT/banner.err" 3>&- &
	SERVER_PIDS+=("$!")
	BANNER_PORT=$(wait_line "$TEST_ROOT/banner.port") ||
	    { cat "$TEST_ROOT/banner.err" >&2; return 1; }
}

# start_dns_stub NAME=IPV4...: sets DNS_PORT; queries land in $DNS_LOG.
start_dns_stub() {
	local args=() a
	for a in "$@"; do
		args+=(-a "$a")
	done
	[ -n "${DNS_DELAY:-}" ] && args+=(-d "$DNS_DELAY")
	"$HELPERS/dns-stub" -l 127.0.0.1:0 -o "$DNS_LOG" "${args[@]}" \
	    > "$TEST_ROOT/dns.port" 2> "$TEST_ROOT/dns.err" 3>&- &
	SERVER_PIDS+=("$!")
	DNS_PORT=$(wait_line "$TEST_ROOT/dns.port") ||
	    { cat "$TEST_ROOT/dns.err" >&2; return 1; }
}

# write_sandbox_config [JSON]: config/sandbox.json with a `proxy` object:
# the defaults below (dns_server when the stub runs) merged with JSON.
write_sandbox_config() {
	local extra=${1:-"{}"} proxy
	proxy="{\"idle_exit_s\":120,\"header_timeout_ms\":5000${DNS_PORT:+,\"dns_server\":\"127.0.0.1:$DNS_PORT\"}}"
	mkdir -p "$SBX_HOME/config"
	json_merge "$proxy" "$extra" | json_wrap proxy > "$SBX_HOME/config/sandbox.json"
}

# json_merge A B: the JSON object A with B's keys over it (jq's A + B);
# without jq (~40 ms of CPU a start) when B is {}, as in most tests.
json_merge() {
	if [ "$2" = "{}" ]; then
		printf '%s\n' "$1"
	else
		jq -c -n --argjson a "$1" --argjson b "$2" '$a + $b'
	fi
}

# json_wrap KEY: the JSON read from stdin, as the value of KEY in an object.
json_wrap() { printf '{"%s":%s}\n' "$1" "$(cat)"; }

# write_agent_config A [JSON]: config/agents/A.json: the test names mapped
# to 127.0.0.1 (resolve + allow_private), the servers' ports allowed; JSON
# replaces keys (give "resolve": {} to drop the overrides).
write_agent_config() {
	local a=$1 extra=${2:-"{}"} ports
	ports="80,443${TLS_PORT:+,$((TLS_PORT))}${CANARY_PORT:+,$((CANARY_PORT))}${BANNER_PORT:+,$((BANNER_PORT))}"
	mkdir -p "$SBX_HOME/config/agents"
	json_merge '{"network":"proxy",
	    "allowed_domains":["allowed.sbx.test","*.wild.sbx.test",
	        "viadns.sbx.test","xn--bcher-kva.sbx.test","other.sbx.test"],
	    "denied_domains":["blocked.wild.sbx.test"],
	    "allowed_ports":['"$ports"'],
	    "allow_private":true,
	    "resolve":{"allowed.sbx.test":"127.0.0.1",
	        "www.wild.sbx.test":"127.0.0.1",
	        "a.b.wild.sbx.test":"127.0.0.1",
	        "blocked.wild.sbx.test":"127.0.0.1",
	        "other.sbx.test":"127.0.0.1",
	        "xn--bcher-kva.sbx.test":"127.0.0.1"}}' "$extra" \
	    > "$SBX_HOME/config/agents/$a.json"
}

ahome() { printf '%s\n' "$SBX_HOME/workspace/agents/$1"; }

# agent_ready A: the agent's home exists (made by sbx itself, with the
# owner it wants), holds the test CA and the test client, and the agent
# has a token.
agent_ready() {
	local a=$1 h
	h=$(ahome "$a")
	[ -d "$h" ] || "$SBX" exec -q --network none --agent "$a" -- true || return 1
	make_certs "$CERTS" || return 1
	cp "$CERTS/ca.pem" "$h/ca.pem"
	printf '%s' "$PC_PY" > "$h/pc.py"
	chmod 0644 "$h/ca.pem" "$h/pc.py"
	mkdir -p "$h/req"
	chmod 0755 "$h/req"
}

# The agent's token, as the proxy knows it (made by sbx exec when missing).
proxy_token() {
	[ -f "$SBX_HOME/run/tokens/$1" ] ||
	    "$SBX" exec -q --network proxy --agent "$1" -- true >/dev/null 2>&1
	tr -d '\n' < "$SBX_HOME/run/tokens/$1"
}

# basic_auth USER TOKEN: the value of a Basic Proxy-Authorization.
basic_auth() { printf '%s:%s' "$1" "$2" | base64 -w0; }

pexec() {
	local a=$1
	shift
	"$SBX" exec -q --network proxy --agent "$a" -- "$@"
}

pcurl() {
	local a=$1
	shift
	pexec "$a" "$CURL" -sS -m 10 --cacert "/workspace/agents/$a/ca.pem" "$@"
}

# write_requests A NAME=REQUEST...: write each REQUEST (printf %b escapes:
# \r\n; the word @AUTH@ becomes, inside, the agent's own
# Proxy-Authorization line) into A's home; REQ_FILES = their paths inside.
write_requests() {
	local a=$1 h r name i=0
	shift
	h=$(ahome "$a")
	rm -rf "$h/req"
	mkdir -p "$h/req"
	REQ_FILES=()
	for r in "$@"; do
		i=$((i + 1))
		name=$(printf '%03d-%s' "$i" "${r%%=*}")
		printf '%b' "${r#*=}" > "$h/req/$name"
		REQ_FILES+=("/workspace/agents/$a/req/$name")
	done
	chmod -R a+rX "$h/req"
}

# raw_requests A NAME=REQUEST...: send each request on its own connection
# from inside A's sandbox; one JSON line each (name, status, reason,
# closed, head, body, responses, ms).  RAW_WAIT: seconds to wait for
# each answer (default 3).
raw_requests() {
	local a=$1
	shift
	write_requests "$a" "$@"
	pexec "$a" "$PY" "/workspace/agents/$a/pc.py" --wait="${RAW_WAIT:-3}" \
	    raw "${REQ_FILES[@]}"
}

# expect NAME STATUS [REASON]: the request NAME of the last raw_requests
# got STATUS (one of several: "400|414") and X-Proxy-Error REASON.
expect() {
	local st why
	st=$(jf "$1" .status)
	why=$(jf "$1" .reason)
	if [ -z "$st" ]; then
		echo "request $1: no result"
		return 1
	fi
	if ! [[ "|$2|" == *"|$st|"* ]]; then
		echo "request $1: expected status $2, got $st (reason $why)"
		jf "$1" .head
		return 1
	fi
	if [ -n "${3:-}" ] && ! [[ "|$3|" == *"|$why|"* ]]; then
		echo "request $1: status $st: expected reason $3, got $why"
		return 1
	fi
	return 0
}

# connect_req HOST:PORT [HEADERS]: a CONNECT request with this agent's
# credentials.
connect_req() {
	printf 'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n@AUTH@\\r\\n%s\\r\\n' "$1" "$1" "${2:-}"
}

# get_req URL HOSTHEADER [HEADERS]: an absolute-form GET.
get_req() {
	printf 'GET %s HTTP/1.1\\r\\nHost: %s\\r\\n@AUTH@\\r\\n%s\\r\\n' "$1" "$2" "${3:-}"
}

# pc A ARGS...: the test client inside A's sandbox.
pc() {
	local a=$1
	shift
	pexec "$a" "$PY" "/workspace/agents/$a/pc.py" "$@"
}

# The number of lines of the proxy log (0 when there is none).
plog_lines() {
	if [ -f "$PLOG" ]; then
		wc -l < "$PLOG" | tr -d ' '
	else
		echo 0
	fi
}

# wait_plog N: wait until the log has at least N lines (5 s at most);
# allowed connections are logged when they end.
wait_plog() {
	local i
	for i in $(seq 100); do
		[ "$(plog_lines)" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# jf NAME FILTER: FILTER applied to the JSON line of request NAME in
# $output (the output of raw_requests).
jf() {
	printf '%s\n' "$output" | jq -r --arg n "$1" \
	    'select((.name | sub("^[0-9]+-"; "")) == $n) | '"$2"
}

# The standard set-up of a proxy test: servers, configs, agent alice.
proxy_world() {
	need_proxy_tools
	start_tls_server
	start_canary
	write_sandbox_config "${1:-"{}"}"
	write_agent_config alice
	agent_ready alice
	A=alice
	AH=$(ahome alice)
}

# The set-up every proxy test file shares (a file may redefine any).
setup_file() {
	export CERTS="$BATS_FILE_TMPDIR/certs"
	command -v openssl >/dev/null 2>&1 && make_certs "$CERTS"
	return 0
}
setup() { proxy_setup; }
teardown() { proxy_teardown; }

# jc JSON FILTER: compact output of a jq filter.
jc() { printf '%s' "$1" | jq -c "$2"; }

# A parent proxy on 127.0.0.1 (issue 20): it logs one JSON line per
# request to $dir/upstream.log (method, target, the Proxy-Authorization it
# got, mode) and sends every name to 127.0.0.1 (the test's servers).
# MODE: ok (CONNECT and absolute-form GET), garbage (a status line, then
# bytes that are no header), hang (reads, never answers), 407, 200garbage
# (a proper 200, then garbage, then close).
UPSTREAM_PY='
import json, os, socket, sys, threading
d, mode = sys.argv[1], sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(256)
lock = threading.Lock()
def log(o):
    with lock, open(os.path.join(d, "upstream.log"), "a") as f:
        f.write(json.dumps(o) + "\n")
def pump(a, b):
    try:
        while True:
            x = a.recv(65536)
            if not x:
                break
            b.sendall(x)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def handle(c):
    c.settimeout(10)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf and len(buf) < 65536:
            x = c.recv(65536)
            if not x:
                return
            buf += x
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        auth = ""
        for l in lines[1:]:
            k, _, v = l.partition(":")
            if k.strip().lower() == "proxy-authorization":
                auth = v.strip()
        log({"method": method, "target": target, "auth": auth, "mode": mode,
             "head": head.decode("latin-1")})
        if mode == "hang":
            c.recv(1)
            return
        if mode == "garbage":
            c.sendall(b"HTTP/1.1 200 OK\r\n\x00\x01\x02garbage\xff\r\n\r\n")
            return
        if mode == "407":
            c.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
            return
        if mode == "200garbage":
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n\x00garbage\xff" * 2)
            return
        if method == "CONNECT":
            port = int(target.rsplit(":", 1)[1])
            u = socket.create_connection(("127.0.0.1", port), 5)
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                u.sendall(rest)
        else:
            hp = target.split("://", 1)[1].split("/", 1)
            port = int(hp[0].rsplit(":", 1)[1]) if ":" in hp[0] else 80
            path = "/" + (hp[1] if len(hp) > 1 else "")
            u = socket.create_connection(("127.0.0.1", port), 5)
            out = [method + " " + path + " " + lines[0].split(" ")[2]]
            out += [l for l in lines[1:] if not l.lower().startswith("proxy-")]
            u.sendall(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + rest)
        c.settimeout(None)
        u.settimeout(None)
        t = threading.Thread(target=pump, args=(u, c), daemon=True)
        t.start()
        pump(c, u)
        t.join(15)
        u.close()
    except OSError:
        pass
    finally:
        c.close()
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
'

# start_upstream [MODE]: sets UPSTREAM_PORT; its log is $UPSTREAM_LOG.
start_upstream() {
	UPSTREAM_LOG=$CANARY_DIR/upstream.log
	"$PY" -u -c "$UPSTREAM_PY" "$CANARY_DIR" "${1:-ok}" \
	    > "$TEST_ROOT/upstream.port" 2> "$TEST_ROOT/upstream.err" 3>&- &
	SERVER_PIDS+=("$!")
	UPSTREAM_PORT=$(wait_line "$TEST_ROOT/upstream.port") ||
	    { cat "$TEST_ROOT/upstream.err" >&2; return 1; }
}

# upstream_lines: the number of requests the parent logged.
upstream_lines() {
	if [ -f "$UPSTREAM_LOG" ]; then
		wc -l < "$UPSTREAM_LOG" | tr -d ' '
	else
		echo 0
	fi
}
