#!/usr/bin/env bats
# sbx-proxy, part 3 of 3: NP-13..NP-17, limits (NP-15), per-run additions
# (--allow-domain) and sbx proxy check / status / stop / serve (NP-22).
# Part 1 is 0600-proxy.bats, part 2 0601-proxy-ingress.bats.  The servers
# and helpers are proxy.bash's (see 0600-proxy.bats for the setting).
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# setup_file, setup and teardown: proxy.bash's.


@test "NP-13: Upgrade and h2c are refused; no 101, no opaque stream" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	run raw_requests alice \
	    h2c="$(get_req "http://$a/" "$a" 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n')" \
	    ws="$(get_req "http://$a/" "$a" 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n')" \
	    upgradeonly="$(get_req "http://$a/" "$a" 'Upgrade: h2c\r\n')" \
	    settingsonly="$(get_req "http://$a/" "$a" 'HTTP2-Settings: AAMAAABkAAQAAP__\r\n')" \
	    connupgrade="$(get_req "http://$a/" "$a" 'Connection: upgrade\r\n')" \
	    preface='PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
	echo "$output"
	for n in h2c ws upgradeonly settingsonly connupgrade; do
		expect "$n" "400|403" upgrade
	done
	expect preface "400|405"
	[ -z "$(printf '%s\n' "$output" | jq -r 'select(.status == 101) | .name')" ]
	[ "$(canary_hits)" -eq 0 ]
}

@test "NP-14: oversized heads get 414/431/400 quickly; the proxy stays small and alive" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	long=$(head -c 1048576 /dev/zero | tr '\0' a)
	many=$(for i in $(seq 10000); do printf 'X-H%d: v\\r\\n' "$i"; done)
	big=$(head -c 262144 /dev/zero | tr '\0' b)
	host300=$(printf 'a%.0s' $(seq 60)).$(printf 'b%.0s' $(seq 60)).$(printf 'c%.0s' $(seq 60)).$(printf 'd%.0s' $(seq 60)).$(printf 'e%.0s' $(seq 50)).sbx.test
	label64=$(printf 'a%.0s' $(seq 64)).sbx.test
	label63=$(printf 'a%.0s' $(seq 63)).sbx.test
	RAW_WAIT=5 run raw_requests alice \
	    line="GET http://$a/$long HTTP/1.1\\r\\nHost: $a\\r\\n@AUTH@\\r\\n\\r\\n" \
	    headers="$(get_req "http://$a/" "$a" "$many")" \
	    header="$(get_req "http://$a/" "$a" "X-Big: $big\\r\\n")" \
	    host300="$(connect_req "$host300:443")" \
	    label64="$(connect_req "$label64:443")" \
	    label63="$(connect_req "$label63:443")"
	printf '%s\n' "$output" | jq -c 'del(.head, .body)'
	expect line "414|431|400"
	expect headers "431|400"
	expect header "431|400"
	expect host300 400 invalid_host
	expect label64 400 invalid_host
	expect label63 403 not_allowlisted
	bad=$(printf '%s\n' "$output" | jq -r 'select(.ms > 5000) | .name')
	[ -z "$bad" ]
	[ "$(canary_hits)" -eq 0 ]
	pid=$(proxy_pid)
	proxy_alive "$pid"
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	echo "proxy RSS: $rss kB"
	[ "$rss" -lt 65536 ]
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
}

@test "NP-16: ports outside the allowed set are 403, invalid ports 400" {
	proxy_world
	h=allowed.sbx.test
	reqs=()
	for p in 22 25 8080; do
		reqs+=("p$p=$(connect_req "$h:$p")")
	done
	reqs+=("get22=$(get_req "http://$h:22/" "$h:22")")
	for p in 0 65536 -1 443x +443 0443 99999999999 '' ' 443' 443.0 0x1bb; do
		reqs+=("bad[$p]=$(connect_req "$h:$p")")
	done
	reqs+=("noport=$(printf 'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n@AUTH@\\r\\n\\r\\n' "$h" "$h")")
	run raw_requests alice "${reqs[@]}"
	echo "$output"
	for n in p22 p25 p8080 get22; do
		expect "$n" 403 port_not_allowed
	done
	bad=$(printf '%s\n' "$output" | jq -r 'select((.name | test("-(bad\\[|noport)")) and
	    .status != 400) | "\(.name): \(.status) \(.reason)"')
	[ -z "$bad" ] || { echo "not 400: $bad"; false; }
	[ "$(canary_hits)" -eq 0 ]
}

@test "NP-17: IDN: punycode matches, raw Unicode and look-alikes are 400, Unicode entries refused" {
	proxy_world
	p=$CANARY_PORT
	run raw_requests alice \
	    puny="$(connect_req "xn--bcher-kva.sbx.test:$p")" \
	    punyupper="$(connect_req "XN--BCHER-KVA.SBX.TEST:$p")" \
	    unicode="$(connect_req "bücher.sbx.test:$p")" \
	    cyrillic="$(connect_req "аllowed.sbx.test:$p")" \
	    zerowidth="$(connect_req "allo\\xe2\\x80\\x8bwed.sbx.test:$p")" \
	    fullwidth="$(connect_req "ａｌｌｏｗｅｄ.sbx.test:$p")" \
	    latin1="$(connect_req "b\\xfccher.sbx.test:$p")"
	echo "$output"
	expect puny 200
	expect punyupper 200
	for n in unicode cyrillic zerowidth fullwidth latin1; do
		expect "$n" 400 invalid_host
	done
	[ "$(canary_hits)" -eq 2 ]
	# An entry that is not normalised is refused when the config loads.
	write_agent_config dave '{"allowed_domains": ["bücher.sbx.test"], "resolve": {}}'
	run sbx proxy check --agent dave xn--bcher-kva.sbx.test:443
	echo "$output"
	[ "$status" -eq 78 ]
	run sbx exec --json --network proxy --agent alice --allow-domain 'bücher.sbx.test' -- true
	echo "$output"
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .reason)" = invalid_domain ]
}

# --- limits ----------------------------------------------------------------------

@test "NP-15: a client sending one byte per second is cut at the header timeout" {
	proxy_world '{"header_timeout_ms": 2000}'
	run pc alice slow "allowed.sbx.test:$CANARY_PORT" 1 12
	echo "$output"
	[ "$status" -eq 0 ]
	ms=$(jq -r .ms <<<"$output")
	[ "$ms" -ge 1500 ]
	[ "$ms" -le 5000 ]
	[ "$(jq -r .status <<<"$output")" = 408 ]
	[ "$(jq -r .reason <<<"$output")" = header_timeout ]
	[ "$(canary_hits)" -eq 0 ]
	# The proxy is still there for the next one.
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
}

@test "NP-15: 1,000 idle connections from one sandbox do not starve a new request" {
	proxy_world '{"max_connections_per_agent": 2000, "header_timeout_ms": 30000}'
	run pc alice hold 1000 -- "$CURL" -sS -m 5 \
	    --cacert /workspace/agents/alice/ca.pem \
	    "https://allowed.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r .opened <<<"$output")" -eq 1000 ]
	[ "$(jq -r .cmd_status <<<"$output")" -eq 0 ]
	[ "$(jq -r .cmd_out <<<"$output")" = hello-over-tls ]
	[ "$(jq -r .cmd_ms <<<"$output")" -lt 5000 ]
	# They were held, not dropped.
	[ "$(jq -r .closed <<<"$output")" -eq 0 ]
	[ "$(jq -r .refused503 <<<"$output")" -eq 0 ]
}

@test "NP-15: an agent over its connection cap gets 503; another agent is not starved" {
	proxy_world '{"max_connections_per_agent": 50, "header_timeout_ms": 30000}'
	write_agent_config bob
	agent_ready bob
	pexec alice "$PY" /workspace/agents/alice/pc.py hold 300 \
	    --send 'CONNECT a' --ready /workspace/agents/alice/ready \
	    --until /workspace/agents/alice/stop --max 20 \
	    > "$TEST_ROOT/hold.out" 2>&1 3>&- &
	BG_PIDS+=("$!")
	for i in $(seq 200); do
		[ -f "$AH/ready" ] && break
		sleep 0.05
	done
	[ -f "$AH/ready" ]
	run sbx proxy status --json
	echo "$output"
	[ "$(json_get "$output" .result.running)" = true ]
	[ "$(json_get "$output" .result.sessions)" -ge 1 ]
	[ "$(json_get "$output" .result.connections)" -ge 50 ]
	t0=$(date +%s%N)
	run pcurl bob "https://allowed.sbx.test:$TLS_PORT/index.txt"
	t1=$(date +%s%N)
	echo "bob: $output in $(((t1 - t0) / 1000000)) ms"
	[ "$output" = hello-over-tls ]
	[ $(((t1 - t0) / 1000000)) -lt 5000 ]
	touch "$AH/stop"
	wait "${BG_PIDS[0]}"
	cat "$TEST_ROOT/hold.out"
	out=$(tail -n 1 "$TEST_ROOT/hold.out")
	[ "$(jq -r .opened <<<"$out")" -eq 300 ]
	[ "$(jq -r '.refused503' <<<"$out")" -ge 1 ]
	[ "$(jq -r '.refused503 + .closed' <<<"$out")" -ge 250 ]
	grep -q '"reason":"too_many_connections"' "$PLOG"
}

@test "limits: 413 over max_request_bytes, response_too_large, idle_timeout" {
	proxy_world '{"max_request_bytes": 1000, "max_response_bytes": 100000, "idle_timeout_ms": 1500}'
	a="allowed.sbx.test:$CANARY_PORT"
	body=$(head -c 5000 /dev/zero | tr '\0' z)
	run raw_requests alice \
	    large="POST http://$a/ HTTP/1.1\\r\\nHost: $a\\r\\n@AUTH@\\r\\nContent-Length: 5000\\r\\n\\r\\n$body"
	echo "$output" | jq -c 'del(.head, .body)'
	expect large 413 request_too_large
	run pexec alice "$CURL" -s -m 10 -o /dev/null -w '%{size_download}' \
	    "http://$a/big"
	echo "downloaded: $output"
	[ "$output" -lt 1048576 ]
	# An idle tunnel: the port is opaque, so that "idle" is relayed.
	write_agent_config alice "{\"opaque_ports\": [$CANARY_PORT]}"
	run pc alice --wait=6 tunnel "$a" plain idle
	echo "$output"
	[ "$(jq -r .tunnel <<<"$output")" = open ]
	[ "$(jq -r .end <<<"$output")" != timeout ]
	ms=$(jq -r .ms <<<"$output")
	[ "$ms" -ge 1200 ]
	[ "$ms" -le 5000 ]
	wait_plog 3
	cat "$PLOG"
	grep -q '"reason":"response_too_large"' "$PLOG"
	grep -q '"reason":"idle_timeout"' "$PLOG"
}

@test "garbage, half-closed and reset connections do not kill the proxy" {
	proxy_world
	pexec alice true
	pid=$(proxy_pid)
	proxy_alive "$pid"
	run pc alice abuse "allowed.sbx.test:$CANARY_PORT"
	echo "$output"
	[ "$status" -eq 0 ]
	run sbx proxy status
	echo "status: $status $output"
	[ "$status" -eq 0 ]
	[ "$(proxy_pid)" = "$pid" ]
	proxy_alive "$pid"
	run pcurl alice "https://allowed.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
}

# --- per-run additions ----------------------------------------------------------

@test "--allow-domain adds to the allowlist for that run only" {
	proxy_world
	write_agent_config alice '{"resolve": {"extra.sbx.test": "127.0.0.1",
	    "a.extra.sbx.test": "127.0.0.1"}}'
	u="http://extra.sbx.test:$CANARY_PORT/"
	run pexec alice "$CURL" -s -m 10 -w ' %{http_code}' "$u"
	[[ "$output" == *" 403" ]]
	run sbx exec -q --network proxy --agent alice --allow-domain extra.sbx.test \
	    -- "$CURL" -s -m 10 "$u"
	[ "$output" = canary ]
	run sbx exec -q --network proxy --agent alice --allow-domain '*.extra.sbx.test' \
	    --allow-domain other.example.test \
	    -- "$CURL" -s -m 10 "http://a.extra.sbx.test:$CANARY_PORT/"
	[ "$output" = canary ]
	# The next run has the agent's list only.
	run pexec alice "$CURL" -s -m 10 -w ' %{http_code}' "$u"
	[[ "$output" == *" 403" ]]
	[ "$(canary_hits)" -eq 2 ]
	# The same through sbx proxy check.
	run sbx proxy check --agent alice --allow-domain extra.sbx.test extra.sbx.test:80
	[ "$status" -eq 0 ]
	run sbx proxy check --agent alice extra.sbx.test:80
	[ "$status" -eq 1 ]
}

@test "--allow-domain: invalid entries and --network none are invalid_args" {
	need_proxy_tools
	write_sandbox_config
	write_agent_config alice
	for d in '*' '*.com' 127.0.0.1 '[::1]' 'a..b' 'ex ample.com' '' 'a.*.b.test'; do
		run sbx exec --json --network proxy --agent alice --allow-domain "$d" -- true
		echo "$d: $output"
		[ "$status" -ne 0 ]
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = allow_domain ]
		[ "$(json_get "$output" .reason)" = invalid_domain ]
	done
	run sbx exec --json --network none --agent alice --allow-domain ok.sbx.test -- true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .kind)" = invalid_args ]
	run sbx exec -q --network none --agent alice --allow-domain ok.sbx.test -- true
	[ "$status" -eq 125 ]
	# Nothing was started for that.
	[ ! -e "$SBX_HOME/run/proxy.sock" ]
}

# --- sbx proxy check / status / stop / serve -------------------------------------

@test "sbx proxy check: the name decision, without DNS and without connecting" {
	start_dns_stub viadns.sbx.test=127.0.0.1
	proxy_world
	run sbx proxy check --agent alice allowed.sbx.test:443
	[ "$status" -eq 0 ]
	run sbx proxy check --json --agent alice ALLOWED.sbx.test.:443
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .tool)" = proxy.check ]
	[ "$(jc "$output" '.result | [.agent, .host, .port, .verdict, .status, has("reason")]')" = \
	    '["alice","allowed.sbx.test",443,"allow",200,false]' ]
	chk() {	# HOST:PORT EXIT VERDICT REASON STATUS
		run sbx proxy check --json --agent alice "$1"
		echo "$1: $status $output"
		[ "$status" -eq "$2" ] || return 1
		[ "$(jc "$output" '.result | [.verdict, .reason, .status]')" = \
		    "[\"$3\",\"$4\",$5]" ]
	}
	chk evil.sbx.test:443 1 deny not_allowlisted 403
	chk 127.0.0.1:80 1 deny ip_literal 403
	chk allowed.sbx.test:22 1 deny port_not_allowed 403
	chk blocked.wild.sbx.test:443 1 deny denied_domain 403
	run sbx proxy check --agent alice evil.sbx.test
	[ "$status" -eq 1 ]
	run sbx proxy check --json --agent alice 'bad_host!:443'
	echo "$output"
	[ "$status" -eq 65 ]
	jq -e . <<<"$output" >/dev/null
	run sbx proxy check --agent alice allowed.sbx.test:99999
	[ "$status" -eq 65 ]
	# An allowed name without an override: no DNS, no connection.
	run sbx proxy check --agent alice "viadns.sbx.test:$CANARY_PORT"
	[ "$status" -eq 0 ]
	[ ! -s "$DNS_LOG" ]
	[ "$(canary_hits)" -eq 0 ]
	# check needs no proxy and starts none.
	run sbx proxy status
	[ "$status" -eq 1 ]
}

@test "sbx proxy status, stop and serve; exec starts one proxy on demand" {
	proxy_world
	run sbx proxy status
	[ "$status" -eq 1 ]
	run sbx proxy status --json
	[ "$status" -eq 1 ]
	[ "$(json_get "$output" .result.running)" = false ]
	run sbx proxy stop --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.running)" = false ]
	# Four first runs at once: each one works, and one proxy serves them.
	kids=()
	for i in 1 2 3 4; do
		pexec alice "$CURL" -s -m 10 --cacert /workspace/agents/alice/ca.pem \
		    -o "/workspace/agents/alice/out.$i" \
		    "https://allowed.sbx.test:$TLS_PORT/index.txt" 3>&- &
		kids+=("$!")
	done
	for k in "${kids[@]}"; do
		wait "$k"
	done
	for i in 1 2 3 4; do
		[ "$(cat "$AH/out.$i")" = hello-over-tls ]
	done
	pid=$(proxy_pid)
	proxy_alive "$pid"
	wait_plog 4
	[ "$(jq -r .run "$PLOG" | sort -u | wc -l)" -eq 4 ]
	run sbx proxy status --json
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .tool)" = proxy.status ]
	[ "$(json_get "$output" .result.running)" = true ]
	[ "$(json_get "$output" .result.pid)" = "$pid" ]
	[[ "$(json_get "$output" .result.socket)" == *run/proxy.sock ]]
	[ "$(json_get "$output" .result.sessions)" -eq 0 ]
	[ "$(json_get "$output" .result.connections)" -eq 0 ]
	[ "$(json_get "$output" '.result.uptime_s | type')" = number ]
	run sbx proxy serve
	[ "$status" -eq 0 ]
	[ "$(proxy_pid)" = "$pid" ]
	run sbx proxy stop
	[ "$status" -eq 0 ]
	for i in $(seq 30); do
		proxy_alive "$pid" || break
		sleep 0.1
	done
	! proxy_alive "$pid"
	run sbx proxy status
	[ "$status" -eq 1 ]
	run sbx proxy serve
	[ "$status" -eq 0 ]
	run sbx proxy status --json
	[ "$(json_get "$output" .result.running)" = true ]
	[ "$(json_get "$output" .result.pid)" != "$pid" ]
}

@test "NP-22: no TCP listener on the host; run/proxy.sock 0600 in a 0711 run/" {
	proxy_world
	pexec alice true
	pid=$(proxy_pid)
	proxy_alive "$pid"
	[ -S "$SBX_HOME/run/proxy.sock" ]
	[ "$(stat -c %a "$SBX_HOME/run/proxy.sock")" = 600 ]
	[ "$(stat -c %u "$SBX_HOME/run/proxy.sock")" = "$(id -u)" ]
	[ "$(stat -c %a "$SBX_HOME/run")" = 711 ]
	[ "$(stat -c %a "$SBX_HOME/run/tokens/alice")" = 600 ]
	# The proxy's sockets against the host's listening TCP sockets.
	socks=$(find "/proc/$pid/fd" -type l -printf '%l\n' 2>/dev/null |
	    sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' | sort -u)
	if [ -n "$socks" ]; then
		listen=$(awk '$4 == "0A" { print $10 }' /proc/net/tcp /proc/net/tcp6 | sort -u)
		both=$(comm -12 <(printf '%s\n' "$socks") <(printf '%s\n' "$listen"))
		[ -z "$both" ] || { echo "proxy listens on TCP: $both"; false; }
	else
		# Not root, and the proxy is not dumpable (its fds are not
		# ours to read): every listening TCP socket of our uid must be
		# held by a process whose fds we can read (a test server, of
		# this file or of another one running beside it), never by
		# one we cannot (the proxy).  Read twice: a server of another
		# test may close between the two reads.
		for try in 1 2; do
			extra=$(comm -23 <(awk -v u="$(id -u)" \
			    '$4 == "0A" && $8 == u { print $10 }' \
			    /proc/net/tcp /proc/net/tcp6 | sort -u) \
			    <(find /proc/[0-9]*/fd -type l -printf '%l\n' \
			    2>/dev/null | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' |
			    sort -u))
			[ -z "$extra" ] && break
			sleep 1
		done
		[ -z "$extra" ] || { echo "listening sockets of uid $(id -u) held by an unreadable process: $extra"; false; }
	fi
	if command -v ss >/dev/null; then
		run ss -ltnupH
		! grep -q 'sbx-proxy' <<<"$output"
	fi
}

@test "the proxy daemon holds no capability and cannot gain one" {
	proxy_world
	pexec alice true
	pid=$(proxy_pid)
	proxy_alive "$pid"
	st=$(cat "/proc/$pid/status")
	echo "$st" | grep -E '^(Cap|NoNewPrivs)'
	grep -qx 'NoNewPrivs:	1' <<<"$st"
	grep -qx 'CapEff:	0000000000000000' <<<"$st"
	grep -qx 'CapPrm:	0000000000000000' <<<"$st"
	# Started by root, it also empties its bounding set (a plain user
	# has no capability to drop).
	if [ "$(id -u)" = 0 ]; then
		grep -qx 'CapBnd:	0000000000000000' <<<"$st"
	fi
	# Not dumpable: another process of the same uid cannot read its
	# memory (and so the tokens of the sessions it holds).
	[ "$(stat -c %u "/proc/$pid/mem")" = 0 ] || [ "$(id -u)" = 0 ]
}
