#!/usr/bin/env bats
# Bound credentials end to end (issue 34): curl inside `sbx exec --network
# proxy` sends the placeholder; a loopback HTTPS server with a test-made
# certificate, reached by a "public" name (the agent's resolve override),
# receives the real value, and the sandbox never sees it (not in what it
# gets back, not in its files); the envelope lists the credential; the
# placeholder to a host the rule does not name is refused and reaches no
# server; only the rule's host is terminated by the proxy, every other one
# stays the server's own TLS.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# The "public" server: HTTPS on 127.0.0.1 with the test certificate
# (allowed.sbx.test, other.sbx.test...), every request head appended to
# $TEST_ROOT/heads; it answers with the Authorization header it got (a
# server that echoes the credential back).
ECHO_PY='
import http.server, os, ssl, sys
d, cert, key = sys.argv[1], sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def go(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with open(os.path.join(d, "heads"), "ab") as f:
            f.write(("%s %s\n" % (self.command, self.path)).encode())
            f.write(str(self.headers).encode())
            f.write(body + b"\n--\n")
        out = ("auth=%s path=%s\n" % (self.headers.get("Authorization"), self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = go
    do_POST = go
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
'

start_echo() {
	"$PY" -u -c "$ECHO_PY" "$TEST_ROOT" "$CERTS/server.pem" \
	    "$CERTS/server.key" > "$TEST_ROOT/echo.port" \
	    2> "$TEST_ROOT/echo.err" 3>&- &
	SERVER_PIDS+=("$!")
	TLS_PORT=$(wait_line "$TEST_ROOT/echo.port") ||
	    { cat "$TEST_ROOT/echo.err" >&2; return 1; }
	: > "$TEST_ROOT/heads"
}

setup() {
	proxy_setup
	need_proxy_tools
	make_certs "$CERTS"
	start_echo
	write_sandbox_config
	write_agent_config default
	VAL="sk-$$-$RANDOM-the-real-value"
	printf '%s' "$VAL" | "$SBX" secret set OPENAI_API_KEY -q
	HOST=allowed.sbx.test
	# The proxy verifies the real host against the host's store, as curl
	# on the host would: here the store is the test CA (SSL_CERT_FILE,
	# as an administrator behind a private CA would set it).
	SSL_CERT_FILE="$CERTS/ca.pem" "$SBX" proxy serve -q
	OUT=$SBX_HOME/output/default
}

teardown() { proxy_teardown; }

@test "header: the server gets the value, the sandbox never sees it; the envelope lists it" {
	sbx secret bind OPENAI_API_KEY --host "$HOST:$TLS_PORT" \
	    --header 'Authorization: Bearer {}' -q
	# shellcheck disable=SC2016
	run -0 "$SBX" exec --network proxy --json -- sh -c \
	    "$CURL"' -sS -m 10 -o /output/resp -w "%{http_code}\n" -H "Authorization: Bearer $OPENAI_API_KEY" https://'"$HOST:$TLS_PORT"'/v1/models 2>/output/err'
	[ "$(json_get "$output" .result.stdout)" = 200 ] ||
	    { cat "$OUT/err" >&2; echo "$output" >&2; false; }
	grep -q -F -- "Authorization: Bearer $VAL" "$TEST_ROOT/heads"
	! grep -q sbx-cred- "$TEST_ROOT/heads"
	# The server echoed it: what came back into the sandbox has no value.
	[ -s "$OUT/resp" ]
	! grep -q -F -- "$VAL" "$OUT/resp"
	[[ "$output" != *"$VAL"* ]]
	[ "$(json_get "$output" '.result.credentials | length')" -eq 1 ]
	[ "$(json_get "$output" '.result.credentials[0].secret')" = OPENAI_API_KEY ]
	[ "$(json_get "$output" '.result.credentials[0].host')" = "$HOST" ]
	[ "$(json_get "$output" '.result.credentials[0].port')" = "$TLS_PORT" ]
	# Twice on one connection (keep-alive): both injected.
	: > "$TEST_ROOT/heads"
	# shellcheck disable=SC2016
	run -0 "$SBX" exec --network proxy -q -- sh -c \
	    "$CURL"' -sS -m 10 -o /dev/null -o /dev/null -H "Authorization: Bearer $OPENAI_API_KEY" https://'"$HOST:$TLS_PORT"'/a https://'"$HOST:$TLS_PORT"'/b'
	[ "$(grep -c -F -- "Authorization: Bearer $VAL" "$TEST_ROOT/heads")" -eq 2 ]
}

@test "query: the value goes in the parameter the rule names" {
	sbx secret bind OPENAI_API_KEY --host "$HOST:$TLS_PORT" --query key -q
	# shellcheck disable=SC2016
	run -0 "$SBX" exec --network proxy -q -- sh -c \
	    "$CURL"' -sS -m 10 -o /output/resp "https://'"$HOST:$TLS_PORT"'/q?key=$OPENAI_API_KEY&x=1"'
	grep -q -F -- "key=$VAL" "$TEST_ROOT/heads" ||
	    { cat "$TEST_ROOT/heads" >&2; false; }
	! grep -q -F -- "$VAL" "$OUT/resp"
}

@test "the placeholder to a host the rule does not name is refused and reaches no server" {
	sbx secret bind OPENAI_API_KEY --host "$HOST:$TLS_PORT" \
	    --header 'Authorization: Bearer {}' -q
	# other.sbx.test is allowed and served by the same server, but not
	# bound: the proxy relays it opaquely, so it cannot see the header;
	# over plain HTTP it can, and refuses.  In the name itself (CONNECT
	# target), refused too.
	# shellcheck disable=SC2016
	run "$SBX" exec --network proxy --json -- sh -c \
	    "$CURL"' -sS -m 10 -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer $OPENAI_API_KEY" http://other.sbx.test:'"$TLS_PORT"'/leak; true'
	[[ "$output" == *credential_host_mismatch* ]] ||
	    { echo "$output" >&2; false; }
	# shellcheck disable=SC2016
	run "$SBX" exec --network proxy --json -- sh -c \
	    "$CURL"' -sS -m 10 -o /dev/null "https://$OPENAI_API_KEY.sbx.test:'"$TLS_PORT"'/"; true'
	[[ "$output" == *credential_host_mismatch* ]] ||
	    { echo "$output" >&2; false; }
	! grep -q -e sbx-cred- -e "$VAL" "$TEST_ROOT/heads"
	# In a path or a body to the rule's own host: refused as well.
	# shellcheck disable=SC2016
	run "$SBX" exec --network proxy --json -- sh -c \
	    "$CURL"' -sS -m 10 -o /dev/null -d "k=$OPENAI_API_KEY" -H "Authorization: Bearer $OPENAI_API_KEY" https://'"$HOST:$TLS_PORT"'/body; true'
	[[ "$output" == *credential_host_mismatch* ]] ||
	    { echo "$output" >&2; false; }
	! grep -q -e sbx-cred- -e "k=$VAL" "$TEST_ROOT/heads"
}

@test "only the rule's host is terminated; the others keep the server's own certificate" {
	sbx secret bind OPENAI_API_KEY --host "$HOST:$TLS_PORT" \
	    --header 'Authorization: Bearer {}' -q
	cp "$CERTS/ca.pem" "$SBX_HOME/workspace/agents/default/testca.pem" 2>/dev/null ||
	    { "$SBX" exec -q -- true; cp "$CERTS/ca.pem" "$SBX_HOME/workspace/agents/default/testca.pem"; }
	chmod 0644 "$SBX_HOME/workspace/agents/default/testca.pem"
	# other.sbx.test: an opaque tunnel, the test CA's certificate.
	run -0 "$SBX" exec --network proxy -q -- "$CURL" -sS -m 10 -o /dev/null \
	    -w '%{http_code}\n' --cacert /workspace/agents/default/testca.pem \
	    "https://other.sbx.test:$TLS_PORT/x"
	[ "$output" = 200 ]
	# The rule's host: the state root's CA signed what the sandbox sees.
	run "$SBX" exec --network proxy -q -- "$CURL" -sS -m 10 -o /dev/null \
	    --cacert /workspace/agents/default/testca.pem \
	    "https://$HOST:$TLS_PORT/x"
	[ "$status" -ne 0 ]
}

@test "the proxy makes the CA for the first run with rules, and remakes a removed bundle" {
	# A proxy run without rules makes no CA (sbx-exec never makes it:
	# it links no TLS library, and only opens the bundle the proxy made).
	run -0 "$SBX" exec --network proxy -q -- true
	[ ! -e "$SBX_HOME/config/ca" ]
	sbx secret bind OPENAI_API_KEY --host "$HOST:$TLS_PORT" \
	    --header 'Authorization: Bearer {}' -q
	# shellcheck disable=SC2016
	run -0 "$SBX" exec --network proxy -q -- sh -c \
	    "$CURL"' -sS -m 10 -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer $OPENAI_API_KEY" https://'"$HOST:$TLS_PORT"'/one'
	[ "$output" = 200 ]
	[ "$(stat -c %a "$SBX_HOME/config/ca/ca.key")" = 600 ]
	# npm's cafile (an npmrc may pin the system bundle, which Node.js
	# then takes as its whole store) names the copy with the CA too.
	run -0 "$SBX" exec --network proxy -q -- printenv npm_config_cafile \
	    NODE_EXTRA_CA_CERTS
	[ "$output" = $'/run/sbx/ca-bundle.pem\n/run/sbx/ca-bundle.pem' ]
	run -0 "$SBX" exec --network proxy --no-secrets -q -- sh -c \
	    'echo "${npm_config_cafile:-unset}"'
	[ "$output" = unset ]
	key=$(sha256sum < "$SBX_HOME/config/ca/ca.key")
	# The bundle removed while the proxy runs: the next run's session
	# remakes it from the same CA (the key is kept).
	rm "$SBX_HOME/config/ca/bundle.pem"
	# shellcheck disable=SC2016
	run -0 "$SBX" exec --network proxy -q -- sh -c \
	    "$CURL"' -sS -m 10 -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer $OPENAI_API_KEY" https://'"$HOST:$TLS_PORT"'/two'
	[ "$output" = 200 ]
	[ -s "$SBX_HOME/config/ca/bundle.pem" ]
	[ "$(sha256sum < "$SBX_HOME/config/ca/ca.key")" = "$key" ]
	[ "$(grep -c -F -- "Authorization: Bearer $VAL" "$TEST_ROOT/heads")" -eq 2 ]
}

# mcp_raw N: stdin's lines to a fresh sbx mcp (after initialize), then its
# output in $output until N responses have come (60 s at most); stdin stays
# open until then, as a client's would (as in 1150-mcp.bats).
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'
mcp_raw() {
	local want=$1 line n=0 in out pid
	coproc MCP { exec "$SBX" mcp 2>/dev/null; }
	pid=$MCP_PID
	exec {in}>&"${MCP[1]}" {out}<&"${MCP[0]}"
	printf '%s\n' "$INIT" >&"$in"
	cat >&"$in"
	output=
	while [ "$n" -lt "$want" ] && IFS= read -r -t 60 line <&"$out"; do
		output+=$line$'\n'
		case $line in '{"jsonrpc":"2.0","id":'*) n=$((n + 1)) ;; esac
	done
	exec {in}>&- {out}<&-
	eval "exec ${MCP[1]:-$in}>&-" 2>/dev/null || true
	wait "$pid"
	[ "$n" -eq "$want" ] || { echo "$n of $want responses" >&2; return 1; }
}

@test "sbx mcp's shell_run gets it through sbx exec: placeholder inside, value at the server" {
	sbx secret bind OPENAI_API_KEY --host "$HOST:$TLS_PORT" \
	    --header 'Authorization: Bearer {}' -q
	mcp_raw 2 <<EOF
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_run","arguments":{"command":"$CURL -sS -m 10 -o /output/mcp -H \"Authorization: Bearer \$OPENAI_API_KEY\" https://$HOST:$TLS_PORT/mcp; printf %s \"\$OPENAI_API_KEY\" | cut -c1-9"}}}
EOF
	r=$(printf '%s\n' "$output" | jq -c 'select(.id == 1)')
	[ "$(jq -r .result.isError <<<"$r")" = false ] || { echo "$r" >&2; false; }
	[[ "$r" == *sbx-cred-* ]]
	[[ "$r" != *"$VAL"* ]]
	[[ "$(jq -c .result.structuredContent.result.credentials <<<"$r")" == *OPENAI_API_KEY* ]] ||
	    { echo "$r" >&2; false; }
	grep -q -F -- "Authorization: Bearer $VAL" "$TEST_ROOT/heads"
	! grep -q -F -- "$VAL" "$OUT/mcp"
}
