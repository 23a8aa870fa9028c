#!/usr/bin/env bats
# sbx-proxy: what a CONNECT tunnel may carry (issue 10, item 3; NP-23).
#
# The first bytes in a tunnel must be a TLS ClientHello naming the CONNECT
# host, or an HTTP/1.x request whose Host names the CONNECT authority:
# otherwise `CONNECT allowed:80` followed by `GET /` with `Host: other`
# reaches any virtual host on the same address, which the absolute-form
# rules forbid.  Anything else is refused unless the port is listed in
# opaque_ports.  Servers on the host's 127.0.0.1 only (proxy.bash).
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0
# setup_file, setup and teardown: proxy.bash's.

# tun A HOST:PORT MODE [ARG]: the test client's tunnel, 1 s to answer.
tun() {
	local a=$1
	shift
	pc "$a" --wait="${TUN_WAIT:-1}" tunnel "$@"
}

@test "NP-23: CONNECT to a plain port, then Host naming another authority: 403 tunnel_host_mismatch, nothing upstream" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	n=0
	for host in "other.sbx.test:$CANARY_PORT" "evil.sbx.test:$CANARY_PORT" \
	    allowed.sbx.test "allowed.sbx.test:1$CANARY_PORT" \
	    "allowed.sbx.test.evil:$CANARY_PORT"; do
		run tun alice "$a" plain "GET / HTTP/1.1\\r\\nHost: $host\\r\\n\\r\\n"
		echo "Host $host: $output"
		[ "$(jq -r .status <<<"$output")" = 200 ]
		[[ "$(jq -r .reply <<<"$output")" == "HTTP/1.1 403 Forbidden"* ]]
		n=$((n + 1))
		# The upstream was dialled (before the 200) and got nothing.
		[ -z "$(canary_data "$n")" ]
	done
	# No Host, two Hosts, HTTP/1.0 without Host: refused the same way.
	for req in "GET / HTTP/1.1\\r\\n\\r\\n" "GET / HTTP/1.0\\r\\n\\r\\n" \
	    "GET / HTTP/1.1\\r\\nHost: $a\\r\\nHost: evil.sbx.test\\r\\n\\r\\n"; do
		run tun alice "$a" plain "$req"
		echo "$req: $output"
		[[ "$(jq -r .reply <<<"$output")" == "HTTP/1.1 403 Forbidden"* ]]
		n=$((n + 1))
		[ -z "$(canary_data "$n")" ]
	done
	[ "$(grep -c '"reason":"tunnel_host_mismatch"' "$PLOG")" -eq 8 ]
	line=$(grep '"reason":"tunnel_host_mismatch"' "$PLOG" | head -n 1)
	[ "$(jq -r '[.verdict, .status, .host, .method] | join(" ")' <<<"$line")" = \
	    "deny 403 allowed.sbx.test CONNECT" ]
	# A violation of the run, as every denial.
	run sbx exec --json --network proxy --agent alice -- \
	    "$PY" /workspace/agents/alice/pc.py --wait=1 tunnel "$a" plain \
	    "GET / HTTP/1.1\\r\\nHost: evil.sbx.test\\r\\n\\r\\n"
	echo "$output"
	[ "$(jc "$output" '[.result.violations[] | [.host, .port, .reason]]')" = \
	    "[[\"allowed.sbx.test\",$CANARY_PORT,\"tunnel_host_mismatch\"]]" ]
}

@test "NP-23: the Host of the CONNECT authority passes: one request, rewritten, nothing after it" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	# A second request with another Host, pipelined, never goes up.
	run tun alice "$a" plain "GET /x HTTP/1.1\\r\\nHost: ALLOWED.sbx.test:$CANARY_PORT\\r\\nProxy-Authorization: Basic eDp5\\r\\n\\r\\nGET /y HTTP/1.1\\r\\nHost: evil.sbx.test\\r\\n\\r\\n"
	echo "$output"
	[ "$(jq -r .status <<<"$output")" = 200 ]
	[[ "$(jq -r .reply <<<"$output")" == "HTTP/1.1 200 OK"* ]]
	req=$(canary_data 1 | tr -d '\r')
	echo "upstream saw: $req"
	[ "$(grep -c '^GET ' <<<"$req")" -eq 1 ]
	[[ "$req" == "GET /x HTTP/1.1"$'\n'* ]]
	grep -qix 'connection: close' <<<"$req"
	! grep -qi '^proxy-' <<<"$req"
	[[ "$req" != *evil* ]]
	# A real client: curl --proxytunnel to an http:// URL.
	run pcurl alice -p "http://$a/path"
	echo "$output"
	[ "$output" = canary ]
	[ "$(canary_hits)" -eq 2 ]
}

@test "NP-23: bytes that are neither TLS nor HTTP through CONNECT to a non-443 port: tunnel_not_tls_or_http" {
	proxy_world
	a="allowed.sbx.test:$CANARY_PORT"
	n=0
	for bytes in 'hello tunnel' 'SSH-2.0-OpenSSH_9.2\r\n' \
	    "GET http://evil.sbx.test/ HTTP/1.1\\r\\nHost: $a\\r\\n\\r\\n" \
	    "CONNECT evil.sbx.test:443 HTTP/1.1\\r\\nHost: $a\\r\\n\\r\\n" \
	    'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' 'get / HTTP/1.1\r\n'; do
		run tun alice "$a" plain "$bytes"
		echo "$bytes: $output"
		[ "$(jq -r .status <<<"$output")" = 200 ]
		[ "$(jq -r .tunnel <<<"$output")" = closed ]
		[ "$(jq -r .reply <<<"$output")" != canary-ok ]
		n=$((n + 1))
		[ -z "$(canary_data "$n")" ]
	done
	[ "$(grep -c '"reason":"tunnel_not_tls_or_http"' "$PLOG")" -eq "$n" ]
	# Smuggling shapes inside a tunnel: refused as outside it.
	run tun alice "$a" plain "POST / HTTP/1.1\\r\\nHost: $a\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n"
	echo "$output"
	[[ "$(jq -r .reply <<<"$output")" == "HTTP/1.1 400 Bad Request"* ]]
	grep -q '"reason":"transfer_encoding"' "$PLOG"
	[ -z "$(canary_data $((n + 1)))" ]
}

@test "NP-23: a server-first protocol on a port that is not opaque gets nothing through" {
	need_proxy_tools
	start_banner
	write_sandbox_config '{"header_timeout_ms": 1500}'
	write_agent_config alice
	agent_ready alice
	TUN_WAIT=4 run tun alice "allowed.sbx.test:$BANNER_PORT" none
	echo "$output"
	[ "$(jq -r .status <<<"$output")" = 200 ]
	# The banner never came back, and the tunnel was closed.
	[ "$(jq -r .reply <<<"$output")" = "" ]
	[ "$(jq -r .tunnel <<<"$output")" = closed ]
	wait_plog 1
	grep -q '"reason":"hello_timeout"' "$PLOG"
}

@test "NP-23: opaque_ports (global or the agent's): bytes relayed untouched both ways, server-first included" {
	need_proxy_tools
	start_banner
	start_canary
	write_sandbox_config "{\"opaque_ports\": [$BANNER_PORT]}"
	write_agent_config alice
	agent_ready alice
	b="allowed.sbx.test:$BANNER_PORT"
	run tun alice "$b" none
	echo "$output"
	[ "$(jq -r .status <<<"$output")" = 200 ]
	[ "$(jq -c .reply <<<"$output")" = '"banner-first\r\n"' ]
	run tun alice "$b" plain 'SSH-2.0-sbx\r\n'
	echo "$output"
	[ "$(jq -c .reply <<<"$output")" = '"banner-first\r\nSSH-2.0-sbx\r\n"' ]
	for i in $(seq 100); do
		[ -f "$CANARY_DIR/banner.2" ] && break
		sleep 0.1
	done
	printf 'SSH-2.0-sbx\r\n' | cmp - "$CANARY_DIR/banner.2"
	# The agent's own opaque_ports: the canary's port, for this agent.
	c="allowed.sbx.test:$CANARY_PORT"
	run tun alice "$c" plain 'hello tunnel'
	[ "$(jq -r .tunnel <<<"$output")" = closed ]
	write_agent_config alice "{\"opaque_ports\": [$CANARY_PORT]}"
	run tun alice "$c" plain 'hello tunnel'
	echo "$output"
	[ "$(jq -r .reply <<<"$output")" = canary-ok ]
	[ "$(canary_data 2)" = "hello tunnel" ]
	# opaque_ports opens no port: the allowlist still decides.
	write_agent_config alice "{\"opaque_ports\": [22]}"
	run raw_requests alice ssh="$(connect_req "allowed.sbx.test:22")"
	expect ssh 403 port_not_allowed
}

@test "opaque_ports: malformed values are refused (config_invalid)" {
	need_proxy_tools
	write_sandbox_config '{"opaque_ports": [0]}'
	run timeout 10 "$SBX" proxy serve --foreground --json
	echo "$output"
	[ "$status" -eq 78 ]
	[[ "$output" == *opaque_ports* ]]
	write_sandbox_config '{"opaque_ports": 22}'
	run timeout 10 "$SBX" proxy serve --foreground --json
	[ "$status" -eq 78 ]
	write_sandbox_config
	write_agent_config alice '{"opaque_ports": ["22"]}'
	agent_ready alice
	run sbx exec --json --network proxy --agent alice -- true
	echo "$output"
	[ "$(json_get "$output" .ok)" = false ]
	[[ "$output" == *opaque_ports* ]]
}
