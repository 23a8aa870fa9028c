#!/usr/bin/env bats
# sbx provision image add URL: downloads over loopback http (the only plain
# http sbx allows), their size and integrity checks, and the URLs refused
# before anything is dialled.  Only ever 127.0.0.1 is contacted.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	FX="$TEST_ROOT/fx"
	mkdir -p "$FX/www"
	SRV_PID=""
}

teardown() {
	# The server goes even when the test failed.
	if [ -n "${SRV_PID:-}" ]; then
		kill "$SRV_PID" 2>/dev/null
		wait "$SRV_PID" 2>/dev/null
	fi
	sbx_teardown
}

sha() { sha256sum "$1" | cut -d' ' -f1; }

# The busybox rootfs of 0410, as www/x.tar.gz.
make_fixture() {
	local r="$FX/rootfs"
	mkdir -p "$r/bin" "$r/etc" "$r/usr/share/fixture"
	cp /bin/busybox "$r/bin/busybox"
	for a in sh ls cat echo; do ln -s busybox "$r/bin/$a"; done
	echo 'hello from the download' >"$r/usr/share/fixture/marker"
	tar -C "$r" -czf "$FX/www/x.tar.gz" .
	D=$(sha "$FX/www/x.tar.gz")
}

# A small HTTP server on 127.0.0.1 and a free port (the kernel picks it):
# files from www/, and a few misbehaving paths.  Sets PORT and SRV_PID.
start_server() {
	python3 - "$FX/www" "$FX/port" <<'EOF' &
import http.server, os, sys
root, portfile = sys.argv[1:3]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def redirect(self, to):
        self.send_response(302); self.send_header("Location", to)
        self.send_header("Content-Length", "0"); self.end_headers()
    def do_GET(self):
        p = self.path
        port = self.server.server_address[1]
        if p == "/redir-ok":
            return self.redirect("/x.tar.gz")
        if p == "/redir-ftp":
            return self.redirect("ftp://127.0.0.1:%d/x.tar.gz" % port)
        if p == "/redir-file":
            return self.redirect("file:///etc/passwd")
        if p == "/redir-https":
            return self.redirect("https://127.0.0.1:%d/x.tar.gz" % port)
        if p == "/redir-remote":
            return self.redirect("http://example.invalid/x.tar.gz")
        if p == "/loop":
            return self.redirect("/loop")
        if p == "/endless":
            # No Content-Length: only counting the body can stop it.
            self.send_response(200); self.end_headers()
            try:
                for _ in range(64):
                    self.wfile.write(b"\0" * 65536)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        f = os.path.join(root, p.lstrip("/"))
        if "/" in p.lstrip("/") or not os.path.isfile(f):
            self.send_response(404); self.send_header("Content-Length", "0")
            self.end_headers(); return
        data = open(f, "rb").read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data))); self.end_headers()
        self.wfile.write(data)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as pf:
    pf.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
EOF
	SRV_PID=$!
	for _ in $(seq 100); do
		[ -s "$FX/port" ] && break
		sleep 0.05
	done
	PORT=$(cat "$FX/port")
	[ -n "$PORT" ]
}

add() { sbx provision image add "$@"; }

# Nothing of a download is left: no temp file in cache/, no template.
nothing_left() {
	if [ -d "$SBX_HOME/cache" ]; then
		[ -z "$(ls -A "$SBX_HOME/cache")" ]
	fi
	if [ -d "$SBX_HOME/images" ]; then
		[ -z "$(ls -A "$SBX_HOME/images" | grep -v '^names.json$')" ]
	fi
}

@test "add by http://127.0.0.1:PORT/x.tar.gz; exec runs on it" {
	make_fixture
	start_server
	run -0 add "http://127.0.0.1:$PORT/x.tar.gz" --sha256 "$D" --name dl --json
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.digest)" = "$D" ]
	[ "$(json_get "$output" .result.download.status)" = 200 ]
	[ "$(json_get "$output" .result.download.bytes)" = "$(stat -c %s "$FX/www/x.tar.gz")" ]
	# the URL itself is never echoed (it may carry a signed query)
	[[ "$output" != *"x.tar.gz"* ]]
	cmp "$SBX_HOME/images/$D/rootfs/bin/busybox" /bin/busybox
	[ -z "$(ls -A "$SBX_HOME/cache")" ]
	run -0 sbx provision image verify dl
	run -0 sbx provision --agent u --image dl -q
	run -0 --separate-stderr sbx exec --agent u -- cat /usr/share/fixture/marker
	[ "$output" = "hello from the download" ]
	# a redirect on loopback http is followed (agent u is bound to the
	# image: only --force takes the template away)
	run -0 --separate-stderr sbx provision image rm dl --force -q
	[[ "$stderr" == *"agent u was bound to the removed image"* ]]
	run -0 add "http://127.0.0.1:$PORT/redir-ok" --sha256 "$D" --json
	[ "$(json_get "$output" .result.download.redirects)" = 1 ]
	# the same again: present, without a download (the digest names the
	# content): even with the server gone
	kill "$SRV_PID"
	wait "$SRV_PID" 2>/dev/null || true
	SRV_PID=""
	run -0 add "http://127.0.0.1:$PORT/x.tar.gz" --sha256 "$D" --name again --json
	[ "$(json_get "$output" .result.present)" = true ]
	[ "$(json_get "$output" .result.download)" = null ]
	[ "$(json_get "$output" .result.entries)" -gt 5 ]
	run -0 sbx provision image list --json
	[ "$(json_get "$output" '.result.images[0].names | sort | join(",")')" = again ]
}

@test "a wrong digest: rejected integrity_check_failed, nothing kept" {
	make_fixture
	start_server
	run -77 add "http://127.0.0.1:$PORT/x.tar.gz" \
	    --sha256 "$(printf x | sha256sum | cut -c1-64)" --json
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = integrity_check_failed ]
	[ "$(json_get "$output" .retryable)" = false ]
	nothing_left
}

@test "HTTP errors are unavailable (retryable), naming the status" {
	make_fixture
	start_server
	run -69 add "http://127.0.0.1:$PORT/nosuch.tar.gz" --sha256 "$D" --json
	[ "$(json_get "$output" .kind)" = unavailable ]
	[ "$(json_get "$output" .reason)" = http_error ]
	[ "$(json_get "$output" .retryable)" = true ]
	[[ "$(json_get "$output" .message)" == *"HTTP 404"* ]]
	nothing_left
	# nothing listens there any more: unavailable too
	kill "$SRV_PID"
	wait "$SRV_PID" 2>/dev/null || true
	SRV_PID=""
	run -69 add "http://127.0.0.1:$PORT/x.tar.gz" --sha256 "$D" --json
	[ "$(json_get "$output" .reason)" = download_failed ]
	nothing_left
}

@test "URLs refused before anything is dialled: http elsewhere, other schemes, credentials" {
	make_fixture
	d=$D
	for u in http://example.invalid/x.tar.gz http://localhost/x.tar.gz \
	    http://10.0.0.1/x.tar.gz "http://[fe80::1]/x"; do
		run -65 add "$u" --sha256 "$d" --json
		echo "$u: $output"
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = source ]
		[ "$(json_get "$output" .reason)" = insecure_http ]
	done
	for u in ftp://127.0.0.1/x.tar.gz file:///etc/passwd gopher://127.0.0.1/ \
	    foo://bar/x; do
		run -65 add "$u" --sha256 "$d" --json
		echo "$u: $output"
		[ "$(json_get "$output" .reason)" = unsupported_scheme ]
	done
	run -65 add "https://user:secret@127.0.0.1/x.tar.gz" --sha256 "$d" --json
	[ "$(json_get "$output" .reason)" = credentials_in_url ]
	[[ "$output" != *secret* ]]
	# refused before the state root is even created
	[ ! -e "$SBX_HOME" ]
	# a malformed digest still comes first
	run -65 add http://example.invalid/x --sha256 abc --json
	[ "$(json_get "$output" .reason)" = invalid_digest ]
}

@test "the size cap: an announced or a streamed body over it is rejected, nothing kept" {
	make_fixture
	start_server
	run -0 sbx provision -q
	echo '{"images":{"max_bytes":100000}}' >"$SBX_HOME/config/sandbox.json"
	# Content-Length over the cap
	run -77 add "http://127.0.0.1:$PORT/x.tar.gz" --sha256 "$D" --json
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = too_large ]
	nothing_left
	# no Content-Length: counted as it comes
	run -77 add "http://127.0.0.1:$PORT/endless" --sha256 "$D" --json
	[ "$(json_get "$output" .reason)" = too_large ]
	nothing_left
}

@test "redirects to another scheme, off loopback or in a loop are refused" {
	make_fixture
	start_server
	for p in redir-ftp redir-file redir-https redir-remote; do
		run -77 add "http://127.0.0.1:$PORT/$p" --sha256 "$D" --json
		echo "$p: $output"
		[ "$(json_get "$output" .kind)" = rejected ]
		[ "$(json_get "$output" .reason)" = redirect_refused ]
		nothing_left
	done
	run -77 add "http://127.0.0.1:$PORT/loop" --sha256 "$D" --json
	[ "$(json_get "$output" .reason)" = too_many_redirects ]
	nothing_left
}

@test "https to a server that does not speak TLS is unavailable" {
	make_fixture
	start_server
	run -69 add "https://127.0.0.1:$PORT/x.tar.gz" --sha256 "$D" --json
	[ "$(json_get "$output" .kind)" = unavailable ]
	[ "$(json_get "$output" .reason)" = download_failed ]
	nothing_left
}

@test "a progress bar on stderr only when it is a terminal" {
	command -v script >/dev/null || skip "script(1) is not installed"
	make_fixture
	start_server
	run -0 --separate-stderr add "http://127.0.0.1:$PORT/x.tar.gz" --sha256 "$D"
	[[ "$stderr" != *"%"* ]]
	run -0 sbx provision image rm "$D" -q
	# script(1) gives the command a terminal
	run -0 script -qec "$SBX provision image add http://127.0.0.1:$PORT/x.tar.gz --sha256 $D" /dev/null
	[[ "$output" == *"100%"* ]]
	[[ "$output" == *"image $D added"* ]]
}
