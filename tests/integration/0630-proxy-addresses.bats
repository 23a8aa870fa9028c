#!/usr/bin/env bats
# sbx-proxy: a refused address says what it is and how to allow it (issue
# 11, item 7): the reason is the address class (reserved_address,
# loopback_address, metadata_address...), the log, the 403 body, the
# envelope's violations and sbx exec's summary name the address and the
# setting that allows it; allow_private_domains and allowed_cidrs (per
# agent and in config/sandbox.json) allow it for allowlisted names only;
# `sbx proxy check --resolve` gives the decision a real request would.
#
# Loopback only.  203.0.113.7 (a documentation range, where the npm
# registry and the Debian mirror resolve on the machine the issue was
# found on) and 169.254.169.254 are answers of the DNS stub, never dialled:
# the address check comes before any connect.  Every connect that does
# happen goes to a server on 127.0.0.1.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0
# setup_file, setup and teardown: proxy.bash's.

HINT='allow it with allow_private_domains or allowed_cidrs'

# strict_agent A [JSON]: A's config without the test overrides and without
# allow_private (the default), the DNS stub's names allowlisted; JSON
# merged over it.
strict_agent() {
	local extra=${2:-"{}"}
	write_agent_config "$1" "$(jq -cn --argjson x "$extra" '
	    {allow_private: false, resolve: {},
	     allowed_domains: ["registry.sbx.test", "viadns.sbx.test",
	         "meta.sbx.test", "allowed.sbx.test"]} + $x')"
}

@test "an allowlisted name resolving to 203.0.113.7: 403 reserved_address with the address and the hint, everywhere" {
	need_proxy_tools
	start_dns_stub registry.sbx.test=203.0.113.7
	start_canary
	write_sandbox_config
	strict_agent bob
	agent_ready bob
	run raw_requests bob \
	    https="$(connect_req "registry.sbx.test:443")" \
	    http="$(get_req "http://registry.sbx.test/" "registry.sbx.test")"
	echo "$output"
	expect https 403 reserved_address
	expect http 403 reserved_address
	# The 403 body says which address and what allows it.
	[ "$(jf https .body)" = "sbx-proxy: registry.sbx.test:443: reserved_address 203.0.113.7; $HINT" ]
	[ "$(jf http .body)" = "sbx-proxy: registry.sbx.test:80: reserved_address 203.0.113.7; $HINT" ]
	grep -qx registry.sbx.test "$DNS_LOG"
	# The log line: reason, address, hint.
	wait_plog 2
	run jq -c 'select(.host == "registry.sbx.test") | [.verdict, .reason, .address, .hint]' "$PLOG"
	echo "$output"
	[ "${lines[0]}" = "[\"deny\",\"reserved_address\",\"203.0.113.7\",\"$HINT\"]" ]
	# sbx exec's summary and the envelope's violations.
	run --separate-stderr "$SBX" exec --network proxy --agent bob -- \
	    "$CURL" -sS -m 10 -o /dev/null https://registry.sbx.test/
	echo "stderr: $stderr"
	[[ "$stderr" == *"sbx: proxy denied 1 request: registry.sbx.test:443 (reserved_address 203.0.113.7; $HINT)"* ]]
	run "$SBX" exec --json --network proxy --agent bob -- \
	    "$CURL" -sS -m 10 -o /dev/null https://registry.sbx.test/
	echo "$output"
	[ "$(jq -c '.result.violations[0] | [.reason, .address, .hint]' <<<"$output")" = \
	    "[\"reserved_address\",\"203.0.113.7\",\"$HINT\"]" ]
	[ "$(canary_hits)" -eq 0 ]
}

@test "a name resolving to 127.0.0.1 is loopback_address; allow_private_domains lets it through, and the connect happens" {
	need_proxy_tools
	start_dns_stub viadns.sbx.test=127.0.0.1 notlisted.sbx.test=127.0.0.1
	start_tls_server
	write_sandbox_config
	strict_agent bob
	agent_ready bob
	run raw_requests bob https="$(connect_req "viadns.sbx.test:$TLS_PORT")"
	echo "$output"
	expect https 403 loopback_address
	[ "$(jf https .body)" = "sbx-proxy: viadns.sbx.test:$TLS_PORT: loopback_address 127.0.0.1; $HINT" ]
	# The narrow setting: this name may resolve to a non-global address.
	strict_agent bob '{"allow_private_domains": ["viadns.sbx.test"]}'
	run pcurl bob "https://viadns.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = hello-over-tls ]
	# A wildcard pattern, as allowed_domains has them.
	strict_agent bob '{"allow_private_domains": ["*.sbx.test"]}'
	run pcurl bob "https://viadns.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
	# It adds no name to the allowlist: a name it names but
	# allowed_domains does not is refused, before any lookup.
	strict_agent bob '{"allow_private_domains": ["notlisted.sbx.test"]}'
	run raw_requests bob nl="$(connect_req "notlisted.sbx.test:$TLS_PORT")"
	echo "$output"
	expect nl 403 not_allowlisted
	! grep -q notlisted "$DNS_LOG"
}

@test "allowed_cidrs 127.0.0.0/8 lets an allowlisted name through, per agent and globally; other ranges do not" {
	need_proxy_tools
	start_dns_stub viadns.sbx.test=127.0.0.1 registry.sbx.test=203.0.113.7
	start_tls_server
	write_sandbox_config
	strict_agent bob '{"allowed_cidrs": ["10.0.0.0/8", "fd00::/8"]}'
	agent_ready bob
	run raw_requests bob https="$(connect_req "viadns.sbx.test:$TLS_PORT")"
	expect https 403 loopback_address
	strict_agent bob '{"allowed_cidrs": ["127.0.0.0/8"]}'
	run pcurl bob "https://viadns.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$output" = hello-over-tls ]
	# The range is for that range only.
	run raw_requests bob https="$(connect_req "registry.sbx.test:443")"
	expect https 403 reserved_address
	# Global (config/sandbox.json's proxy object): every agent.  The
	# proxy reads it when it starts.
	"$SBX" proxy stop >/dev/null
	write_sandbox_config '{"allowed_cidrs": ["127.0.0.0/8"]}'
	strict_agent carol
	agent_ready carol
	run pcurl carol "https://viadns.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$output" = hello-over-tls ]
	"$SBX" proxy stop >/dev/null
	write_sandbox_config '{"allow_private_domains": ["viadns.sbx.test"]}'
	run pcurl carol "https://viadns.sbx.test:$TLS_PORT/index.txt"
	[ "$output" = hello-over-tls ]
	run raw_requests carol https="$(connect_req "registry.sbx.test:443")"
	expect https 403 reserved_address
}

@test "metadata addresses stay refused under allow_private, allow_private_domains and a covering range; only an exact entry opens one" {
	need_proxy_tools
	start_dns_stub meta.sbx.test=169.254.169.254
	write_sandbox_config
	for cfg in '{}' '{"allow_private": true}' \
	    '{"allow_private_domains": ["meta.sbx.test"]}' \
	    '{"allowed_cidrs": ["169.254.0.0/16"]}'; do
		strict_agent bob "$cfg"
		run sbx proxy check --resolve --agent bob meta.sbx.test:80
		echo "$cfg: $output"
		[ "$status" -eq 1 ]
		[[ "${lines[0]}" == "deny meta.sbx.test:80 (metadata_address 169.254.169.254; only an allowed_cidrs entry naming exactly this address allows it, HTTP 403)" ]]
	done
	strict_agent bob '{"allowed_cidrs": ["169.254.169.254/32"]}'
	run sbx proxy check --resolve --agent bob meta.sbx.test:80
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"169.254.169.254: metadata_address (metadata), allowed by allowed_cidrs 169.254.169.254/32"* ]]
}

@test "sbx proxy check --resolve: the class, the hint and the setting that allowed it; a denied name is not resolved" {
	need_proxy_tools
	start_dns_stub registry.sbx.test=203.0.113.7 viadns.sbx.test=127.0.0.1 \
	    evil.sbx.test=127.0.0.1
	write_sandbox_config
	strict_agent bob
	# Without --resolve: the name decision only, no lookup.
	run sbx proxy check --agent bob registry.sbx.test:443
	[ "$status" -eq 0 ]
	[ "$output" = "allow registry.sbx.test:443" ]
	[ ! -s "$DNS_LOG" ]
	run sbx proxy check --resolve --agent bob registry.sbx.test:443
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "deny registry.sbx.test:443 (reserved_address 203.0.113.7; $HINT, HTTP 403)" ]
	[ "${lines[1]}" = "  203.0.113.7: reserved_address (documentation), refused" ]
	grep -qx registry.sbx.test "$DNS_LOG"
	run sbx proxy check --json --resolve --agent bob registry.sbx.test:443
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(jq -c '.result | [.verdict, .status, .reason, .address, .hint]' <<<"$output")" = \
	    "[\"deny\",403,\"reserved_address\",\"203.0.113.7\",\"$HINT\"]" ]
	[ "$(jq -c '.result.addresses' <<<"$output")" = \
	    '[{"address":"203.0.113.7","allowed":false,"class":"reserved_address","range":"documentation"}]' ]
	# Allowed by a range: says which.
	strict_agent bob '{"allowed_cidrs": ["203.0.113.0/24"]}'
	run sbx proxy check --resolve --agent bob registry.sbx.test:443
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "allow registry.sbx.test:443" ]
	[ "${lines[1]}" = "  203.0.113.7: reserved_address (documentation), allowed by allowed_cidrs 203.0.113.0/24" ]
	strict_agent bob '{"allow_private_domains": ["*.sbx.test"]}'
	run sbx proxy check --json --resolve --agent bob viadns.sbx.test:443
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -c '.result.addresses[0] | [.class, .allowed, .allowed_by]' <<<"$output")" = \
	    '["loopback_address",true,"allow_private_domains *.sbx.test"]' ]
	# A name the policy refuses is never looked up, as in a real run.
	: > "$DNS_LOG"
	run sbx proxy check --resolve --agent bob evil.sbx.test:443
	[ "$status" -eq 1 ]
	[[ "$output" == "deny evil.sbx.test:443 (not_allowlisted, HTTP 403)" ]]
	[ ! -s "$DNS_LOG" ]
	# A name without an address: what the proxy answers.
	strict_agent bob '{"allowed_domains": ["nx.sbx.test"]}'
	run sbx proxy check --resolve --agent bob nx.sbx.test:443
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"deny nx.sbx.test:443 (resolve_failed, HTTP 502)"* ]]
	# --resolve belongs to check.
	run sbx proxy status --resolve
	[ "$status" -eq 64 ]
}

@test "invalid ranges and patterns are refused when the config loads, with the key and the element" {
	need_proxy_tools
	write_sandbox_config
	for bad in '{"allowed_cidrs": ["10.1.2.3/8"]}|`allowed_cidrs[0]` "10.1.2.3/8" has host bits set' \
	    '{"allowed_cidrs": ["0.0.0.0/0"]}|would allow every address' \
	    '{"allowed_cidrs": ["10.0.0.0/33"]}|prefix length over 32' \
	    '{"allowed_cidrs": ["10/8"]}|is not an address range' \
	    '{"allowed_cidrs": "10.0.0.0/8"}|must be an array' \
	    '{"allow_private_domains": ["*"]}|`allow_private_domains[0]` "*" is a bare' \
	    '{"allow_private_domains": ["10.0.0.1"]}|is an IP address' \
	    '{"allow_private_domains": ["*.com"]}|single-label wildcard'; do
		strict_agent bob "${bad%%|*}"
		run sbx proxy check --agent bob registry.sbx.test:443
		echo "${bad%%|*}: $output"
		[ "$status" -eq 78 ]
		[[ "$output" == *"config/agents/bob.json: "*"${bad#*|}"* ]]
		run sbx exec --json --network proxy --agent bob -- true
		[ "$(json_get "$output" .reason)" = config_invalid ]
	done
	strict_agent bob
	write_sandbox_config '{"allowed_cidrs": ["203.0.113.7/24"]}'
	run sbx proxy check --agent bob registry.sbx.test:443
	echo "$output"
	[ "$status" -eq 78 ]
	[[ "$output" == *'config/sandbox.json: `proxy.allowed_cidrs[0]` "203.0.113.7/24" has host bits set'* ]]
	run sbx proxy serve --foreground
	[ "$status" -eq 78 ]
	write_sandbox_config '{"allow_private_domains": ["a.*.example"]}'
	run sbx proxy check --agent bob registry.sbx.test:443
	[ "$status" -eq 78 ]
	[[ "$output" == *'`proxy.allow_private_domains[0]`'* ]]
}
