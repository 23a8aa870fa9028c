#!/usr/bin/env bats
# sbx srt against srt itself (issue 35): the same settings file and the
# same commands under both, comparing exit statuses and what got through
# (writes, reads, connections).  Needs srt, which is not a dependency of
# the suite (an npm package of ~20 MB with its dependencies, fetched from
# the registry): set SRT to its path, or have `srt` on PATH, e.g.
#   npm install --prefix /opt/srt @anthropic-ai/sandbox-runtime
#   SRT=/opt/srt/node_modules/.bin/srt make check
# Skipped with that reason otherwise.  Only loopback: the network case
# dials a loopback canary that neither may reach.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

setup() {
	SRT=${SRT:-$(command -v srt 2>/dev/null || true)}
	[ -n "$SRT" ] && [ -x "$SRT" ] ||
	    skip "srt is not installed (set SRT=PATH; see the header)"
	proxy_setup
	V=$(mktemp -d /var/tmp/sbx-srt-cmp.XXXXXX) || return 1
	chmod 0755 "$V"
	mkdir -p "$V/proj" "$V/ro"
	# Both write it: srt as the caller, sbx as its sandbox uid.
	chmod 0777 "$V/proj"
	echo top-secret > "$V/ro/secret.txt"
	chmod 0644 "$V/ro/secret.txt"
	S=$V/settings.json
	printf '%s\n' '{"network":{"allowedDomains":["allowed.sbx.test"],
	    "deniedDomains":[]},
	    "filesystem":{"denyRead":["'"$V"'/ro/secret.txt"],
	      "allowWrite":["'"$V"'/proj"],"denyWrite":[]}}' > "$S"
	cd "$V/proj" || return 1
}

teardown() {
	cd /
	[ -n "${V:-}" ] && rm -rf "$V"
	[ -n "${SRT:-}" ] && proxy_teardown
	return 0
}

# both ARGS...: run under srt then sbx srt; SO/SS the outputs, TO/TS the
# statuses.
both() {
	TO=0 TS=0
	SO=$(timeout 60 "$SRT" -s "$S" "$@" 2>"$V/srt.err") || TO=$?
	rm -f "$V/proj/"*
	SS=$(timeout 60 "$SBX" srt -s "$S" "$@" 2>"$V/sbx.err") || TS=$?
	echo "srt: $TO [$SO] $(cat "$V/srt.err")"
	echo "sbx: $TS [$SS] $(cat "$V/sbx.err")"
}

@test "compare: output and status of a -c string, quotes and JSON" {
	both -c 'printf "%s\n" "{\"a\": [1, \"b c\"]}"; exit 3'
	[ "$TO" -eq 3 ] && [ "$TS" -eq 3 ]
	[ "$SO" = "$SS" ]
}

@test "compare: shell-quoted arguments" {
	both printf '%s|' 'a b' "it's" '$HOME' '{"k":1}'
	[ "$TO" -eq 0 ] && [ "$TS" -eq 0 ]
	[ "$SO" = "$SS" ]
	[ "$SS" = "a b|it's|\$HOME|{\"k\":1}|" ]
}

@test "compare: a write inside allowWrite works, one outside does not" {
	both -c 'echo in > in.txt && echo in-ok; echo out > '"$V"'/ro/out.txt 2>/dev/null && echo out-ok; cat in.txt'
	[ "$SO" = "$SS" ]
	[ "$SS" = "in-ok
in" ]
	[ ! -e "$V/ro/out.txt" ]
}

@test "compare: a denyRead file's content gets through neither" {
	both -c 'cat '"$V"'/ro/secret.txt 2>/dev/null; echo end'
	[[ $SO != *top-secret* ]] && [[ $SS != *top-secret* ]]
	[ "$TO" -eq 0 ] && [ "$TS" -eq 0 ]
}

@test "compare: a name outside the allowlist is refused by both; the canary sees nothing" {
	need_proxy_tools
	start_canary
	both "$CURL" -s -m 10 -o /dev/null -w '%{http_code}' \
	    "http://denied.sbx.test:$CANARY_PORT/"
	[ "$(canary_hits)" -eq 0 ]
	[ "$SO" = 403 ] || [ "$TO" -ne 0 ]
	[ "$SS" = 403 ] || [ "$TS" -ne 0 ]
}

@test "compare: a command killed by a signal: 128+N under both; not found: 127" {
	both -c 'kill -TERM $$'
	[ "$TO" -eq 143 ] && [ "$TS" -eq 143 ]
	both -c 'kill -KILL $$'
	[ "$TO" -eq 137 ] && [ "$TS" -eq 137 ]
	both no-such-command-anywhere
	[ "$TO" -eq 127 ] && [ "$TS" -eq 127 ]
}
