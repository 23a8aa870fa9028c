#!/usr/bin/env bats
# sbx srt (issue 35): srt's settings file and command line run for real.
# The host view (read-only, a denyRead file hidden, the state root
# hidden), writes inside and outside allowWrite, srt's argument handling
# (shell-quoted arguments, -c unescaped, quotes and JSON), curl to an
# allowed and a denied name (both mapped to loopback servers with the
# agent's `resolve`, given through the file's "sbx" object), the violation
# lines, and --control-fd replacing the policy of a running command.
# The files the sandbox must see live under /var/tmp: the host view gives
# the sandbox a /tmp of its own, as sbx exec does.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

setup() {
	proxy_setup
	V=$(mktemp -d /var/tmp/sbx-srt-test.XXXXXX) || return 1
	chmod 0755 "$V"
	mkdir -p "$V/proj" "$V/ro"
	# As root the sandbox runs as another uid: the project is its to
	# write, as a checkout is its owner's.
	if is_root; then
		chown "$(sandbox_uid)" "$V/proj"
	fi
	echo top-secret > "$V/ro/secret.txt"
	echo public > "$V/ro/public.txt"
	chmod 0644 "$V/ro/secret.txt" "$V/ro/public.txt"
	S=$V/settings.json
	cd "$V/proj" || return 1
}

teardown() {
	cd /
	[ -n "${V:-}" ] && rm -rf "$V"
	proxy_teardown
}

# settings JSON: the settings file.
settings() { printf '%s\n' "$1" > "$S"; }

fs_settings() {
	settings '{"filesystem":{"allowWrite":["'"$V"'/proj"],
	    "denyRead":["'"$V"'/ro/secret.txt"]}}'
}

@test "the host is read-only, allowWrite is writable, a denyRead file is empty" {
	fs_settings
	run --separate-stderr sbx srt -s "$S" -c '
	    echo inside > in.txt && echo wrote-in
	    echo outside > '"$V"'/ro/out.txt 2>/dev/null || echo refused-out
	    cat '"$V"'/ro/public.txt
	    printf "[%s]\n" "$(cat '"$V"'/ro/secret.txt)"
	    pwd'
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = wrote-in ]
	[ "${lines[1]}" = refused-out ]
	[ "${lines[2]}" = public ]
	[ "${lines[3]}" = "[]" ]
	[ "${lines[4]}" = "$V/proj" ]
	# The host: the write inside is there, nothing outside.
	[ "$(cat "$V/proj/in.txt")" = inside ]
	[ ! -e "$V/ro/out.txt" ]
	[ "$(cat "$V/ro/secret.txt")" = top-secret ]
}

@test "the state root and sbx's hidden credential files are not visible" {
	fs_settings
	mkdir -p "$HOME/.ssh" "$V/state-probe"
	echo key > "$HOME/.ssh/id_test"
	chmod -R a+rX "$HOME" 2>/dev/null || true
	run --separate-stderr sbx srt -s "$S" -c '
	    ls -A '"$SBX_HOME"' 2>/dev/null | wc -l
	    cat '"$HOME"'/.ssh/id_test 2>/dev/null || echo no-key'
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 0 ]
	[ "${lines[1]}" = no-key ]
}

@test "arguments are shell-quoted; -c is run as it is; quotes and JSON survive" {
	fs_settings
	run --separate-stderr sbx srt -s "$S" -- printf '%s|' 'a b' "it's" \
	    '$HOME' '{"k":[1,"x y"]}' '' 'semi;colon'
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "a b|it's|\$HOME|{\"k\":[1,\"x y\"]}||semi;colon|" ]
	run --separate-stderr sbx srt -s "$S" -c \
	    'printf "%s\n" "{\"a\": [1, \"b c\"], \"q\": \"it'"'"'s\"}" | jq -c .a; echo "$((6 * 7))"'
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = '[1,"b c"]' ]
	[ "${lines[1]}" = 42 ]
}

@test "exit status: the command's; a signal is 128+N; sbx's refusal is 125" {
	fs_settings
	run sbx srt -s "$S" -c 'exit 7'
	[ "$status" -eq 7 ]
	run sbx srt -s "$S" -c 'kill -TERM $$'
	[ "$status" -eq 143 ]
	run -127 sbx srt -s "$S" -- no-such-command-anywhere
	[ "$status" -eq 127 ]
	settings '{"credentials":{}}'
	run --separate-stderr sbx srt -s "$S" -c 'touch '"$V"'/proj/ran'
	[ "$status" -eq 125 ]
	[[ $stderr == *'`credentials` is not supported'* ]]
	[ ! -e "$V/proj/ran" ]
}

@test "a protected path in allowWrite: refused, one violation line" {
	settings '{"filesystem":{"allowWrite":["'"$V"'/proj"],
	    "denyWrite":["'"$V"'/proj/locked.txt"]}}'
	echo keep > "$V/proj/locked.txt"
	run --separate-stderr sbx srt -s "$S" -c \
	    'echo x > locked.txt 2>/dev/null || echo refused; touch .bashrc 2>/dev/null || echo rc-refused'
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = refused ]
	[ "${lines[1]}" = rc-refused ]
	[ "$(cat "$V/proj/locked.txt")" = keep ]
	[ ! -e "$V/proj/.bashrc" ]
	[[ $stderr == *"sbx srt: write blocked: $V/proj/.bashrc (protected_path)"* ]]
}

# The network world: the TLS server on loopback, two names mapped to it.
net_settings() {	# allowed-list denied-list
	need_proxy_tools
	start_tls_server
	cp "$CERTS/ca.pem" "$V/ca.pem"
	chmod 0644 "$V/ca.pem"
	settings '{"network":{"allowedDomains":'"$1"',"deniedDomains":'"$2"'},
	    "filesystem":{"allowWrite":["'"$V"'/proj"]},
	    "sbx":{"allow_private":true,"allowed_ports":[80,443,'"$TLS_PORT"'],
	      "resolve":{"allowed.sbx.test":"127.0.0.1",
	        "blocked.wild.sbx.test":"127.0.0.1"}}}'
	C=("$CURL" -sS -m 10 --cacert "$V/ca.pem")
}

@test "curl: an allowed name gets through, a denied one is refused and reported" {
	net_settings '["allowed.sbx.test","*.wild.sbx.test"]' \
	    '["blocked.wild.sbx.test"]'
	run --separate-stderr sbx srt -s "$S" -- "${C[@]}" \
	    "https://allowed.sbx.test:$TLS_PORT/index.txt"
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = hello-over-tls ]
	run --separate-stderr sbx srt -s "$S" -- "${C[@]}" \
	    "https://blocked.wild.sbx.test:$TLS_PORT/index.txt"
	echo "$output / $stderr"
	[ "$status" -ne 0 ]
	[[ $stderr == *"sbx srt: network blocked: blocked.wild.sbx.test:$TLS_PORT (denied_domain)"* ]]
	# --json: sbx's envelope, the violation in it.
	run sbx srt --json -s "$S" -- "${C[@]}" \
	    "https://blocked.wild.sbx.test:$TLS_PORT/index.txt"
	echo "$output"
	[ "$(json_get "$output" .result.violations[0].host)" = blocked.wild.sbx.test ]
	[ "$(json_get "$output" .result.violations[0].reason)" = denied_domain ]
}

@test "curl: an allowedDomains entry with its port reaches that port (no allowed_ports needed)" {
	net_settings '[]' '[]'
	settings '{"network":{"allowedDomains":["allowed.sbx.test:'"$TLS_PORT"'"],
	    "deniedDomains":[]},
	    "sbx":{"allow_private":true,
	      "resolve":{"allowed.sbx.test":"127.0.0.1"}}}'
	run --separate-stderr sbx srt -s "$S" -- "${C[@]}" \
	    "https://allowed.sbx.test:$TLS_PORT/index.txt"
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = hello-over-tls ]
}

@test "no network key: no network at all" {
	fs_settings
	need_proxy_tools
	start_tls_server
	run --separate-stderr sbx srt -s "$S" -- "$CURL" -sS -m 5 -k \
	    "https://127.0.0.1:$TLS_PORT/index.txt"
	echo "$output / $stderr"
	[ "$status" -ne 0 ]
	[ "$output" != hello-over-tls ]
}

@test "--control-fd: a line replaces the running command's policy; a bad one changes nothing" {
	net_settings '["allowed.sbx.test"]' '[]'
	mkfifo "$V/ctl"
	sbx srt -d -s "$S" --control-fd 3 -c '
	    '"${C[*]}"' -o /dev/null -w "first %{http_code}\n" https://allowed.sbx.test:'"$TLS_PORT"'/index.txt
	    touch ready
	    while [ ! -e go ]; do sleep 0.05; done
	    '"${C[*]}"' -o /dev/null -w "second %{http_code}\n" https://allowed.sbx.test:'"$TLS_PORT"'/index.txt 2>/dev/null
	    true' 3<"$V/ctl" >"$V/out" 2>"$V/err" &
	BG_PIDS+=("$!")
	pid=$!
	exec 4>"$V/ctl"
	for i in $(seq 200); do [ -e "$V/proj/ready" ] && break; sleep 0.05; done
	[ -e "$V/proj/ready" ]
	# Not JSON, then an unknown key: refused, said, nothing changes.
	printf '%s\n' 'not json' '{"network":{"allowedDomain":[]}}' >&4
	# Deny it now.
	printf '%s\n' '{"network":{"allowedDomains":[],"deniedDomains":["allowed.sbx.test"]}}' >&4
	for i in $(seq 200); do
		grep -q 'control line applied' "$V/err" && break
		sleep 0.05
	done
	touch "$V/proj/go"
	exec 4>&-
	wait "$pid"
	cat "$V/out" "$V/err"
	grep -qx 'first 200' "$V/out"
	grep -qx 'second 000' "$V/out" || grep -qx 'second 403' "$V/out"
	[ "$(grep -c 'control line refused, previous policy still in force' "$V/err")" -eq 2 ]
	grep -q "sbx srt: network blocked: allowed.sbx.test:$TLS_PORT (denied_domain)" "$V/err"
}

@test "started in a directory under /tmp outside allowWrite: it is there, read-only" {
	mkdir -p "$TEST_ROOT/here"
	echo readme > "$TEST_ROOT/here/r.txt"
	chmod -R a+rX "$TEST_ROOT/here"
	settings '{}'
	cd "$TEST_ROOT/here"
	run --separate-stderr sbx srt -s "$S" -c \
	    'pwd; cat r.txt; touch new 2>/dev/null || echo read-only'
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$TEST_ROOT/here" ]
	[ "${lines[1]}" = readme ]
	[ "${lines[2]}" = read-only ]
	[ ! -e "$TEST_ROOT/here/new" ]
}

@test "sbx exec --host-view and the request key host_view: the host read-only, the state root hidden" {
	mkdir -p "$SBX_HOME"
	run --separate-stderr sbx exec --host-view -- cat "$V/ro/public.txt"
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = public ]
	run sbx exec --json --request - <<<'{"host_view":true,"command":["sh","-c","cat '"$V"'/ro/public.txt; ls -A '"$SBX_HOME"' | wc -l; touch '"$V"'/ro/x 2>/dev/null || echo ro"]}'
	echo "$output"
	[ "$(json_get "$output" .result.stdout)" = "public
0
ro" ]
	[ ! -e "$V/ro/x" ]
	# Without it, the host is not there.
	run sbx exec -- cat "$V/ro/public.txt"
	[ "$status" -ne 0 ]
	# A relative --cwd is still in HOME, which stays writable.
	run sbx exec --host-view -- mkdir -p sub
	[ "$status" -eq 0 ]
	run --separate-stderr sbx exec --host-view --cwd sub -- pwd
	echo "$output / $stderr"
	[ "$output" = /workspace/agents/default/sub ]
	# An absolute one anywhere on the host, but it must exist.
	run --separate-stderr sbx exec --host-view --cwd "$V/ro" -- pwd
	[ "$output" = "$V/ro" ]
	run --separate-stderr sbx exec --json --host-view --cwd "$V/nowhere" -- pwd
	[ "$(json_get "$output" .field)" = cwd ]
}

@test "--control-fd with --json: the line is applied, the envelope is on stdout" {
	net_settings '["allowed.sbx.test"]' '[]'
	printf '%s\n' '{"network":{"allowedDomains":[],"deniedDomains":["allowed.sbx.test"]}}' > "$V/ctl.txt"
	# The line is read before the command's curl, which waits for the
	# session to have it: the first curl is after the proxy has the
	# session, so the line may land before or after it; the second
	# (after "applied" appears) is denied.
	run --separate-stderr sbx srt --json -d -s "$S" --control-fd 3 -c '
	    for i in $(seq 100); do [ -e go ] && break; sleep 0.05; done
	    '"${C[*]}"' -o /dev/null -w "%{http_code}\n" https://allowed.sbx.test:'"$TLS_PORT"'/index.txt 2>/dev/null; true' \
	    3< <(cat "$V/ctl.txt"; for i in $(seq 100); do
	        [ -e "$SBX_HOME/run/proxy.pid" ] && break; sleep 0.05; done;
	        sleep 0.5; touch "$V/proj/go")
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .ok)" = true ]
	[[ $stderr == *"control line applied"* ]]
	[ "$(json_get "$output" .result.violations[0].reason)" = denied_domain ]
}
