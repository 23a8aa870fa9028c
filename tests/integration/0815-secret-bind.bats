#!/usr/bin/env bats
# sbx secret bind/unbind/list and sbx exec's side of credential rules
# (issue 34): every bad input refused with the settings file unchanged;
# the bound secret's variable holds a placeholder unique per run and the
# value is nowhere in the sandbox (environment, /proc, files); outbound is
# refused; a rule naming a missing secret fails the run naming it; in
# proxy mode the CA bundle (the system's and the state root's CA) is a
# read-only copy and the CA's key cannot be reached; the envelope lists
# the credentials; sbx status and list show names and hosts only.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

CFG=

setup() {
	sbx_setup
	VAL="sk-$$-$RANDOM-bound-value"
	printf '%s' "$VAL" | "$SBX" secret set OPENAI_API_KEY -q
	printf 'other-%s-value' "$RANDOM" | "$SBX" secret set OTHER -q
	CFG=$SBX_HOME/config/agents/default.json
}

teardown() {
	"$SBX" proxy stop >/dev/null 2>&1
	"$SBX" bridge stop >/dev/null 2>&1
	sbx_teardown
}

# The settings file's bytes (or "absent"), to compare before and after.
snap() {
	if [ -f "$CFG" ]; then
		sha256sum "$CFG" | cut -d' ' -f1
	else
		echo absent
	fi
}

# refused WANT_STATUS REASON ARGS...: sbx secret ARGS fails with that
# status, the envelope's reason, and the settings file is unchanged.
refused() {
	local want=$1 reason=$2 before
	shift 2
	before=$(snap)
	run sbx secret "$@" --json
	if [ "$status" -ne "$want" ]; then
		echo "status $status, want $want: $output" >&2
		return 1
	fi
	if [ -n "$reason" ] &&
	    [ "$(json_get "$(grep '^{' <<<"$output" | tail -n 1)" .reason)" != "$reason" ]; then
		echo "reason, want $reason: $output" >&2
		return 1
	fi
	[ "$(snap)" = "$before" ] || { echo "settings changed" >&2; return 1; }
}

bind() {
	sbx secret bind OPENAI_API_KEY --host api.openai.com \
	    --header 'Authorization: Bearer {}' -q
}

@test "bind, list, status, unbind: names and hosts, never the value" {
	sbx provision -q
	run -0 sbx secret bind OPENAI_API_KEY --host api.openai.com \
	    --host '*.example.com:8443' --header 'Authorization: Bearer {}'
	[ "$output" = "bound OPENAI_API_KEY of agent default to api.openai.com, *.example.com:8443" ]
	[ "$(jq -c .credentials "$CFG")" = '[{"header":"Authorization: Bearer {}","hosts":["api.openai.com","*.example.com:8443"],"secret":"OPENAI_API_KEY"}]' ]
	# The settings file is written as sbx config writes it: 0600.
	[ "$(stat -c %a "$CFG")" = 600 ]
	run -0 sbx secret list
	[[ "$output" == *"OPENAI_API_KEY"*"-> api.openai.com, *.example.com:8443"* ]]
	[[ "$output" != *"$VAL"* ]]
	run -0 sbx secret list --json
	[ "$(json_get "$output" '.result.secrets[] | select(.name == "OPENAI_API_KEY") | .hosts | join(",")')" = "api.openai.com,*.example.com:8443" ]
	[ "$(json_get "$output" '.result.secrets[] | select(.name == "OTHER") | .hosts')" = null ]
	[ "$(json_get "$output" '.result.credentials[0].secret')" = OPENAI_API_KEY ]
	[[ "$output" != *"$VAL"* ]]
	run -0 sbx status
	[[ "$output" == *"credentials    OPENAI_API_KEY -> api.openai.com, *.example.com:8443"* ]]
	run -0 sbx status --json
	[ "$(json_get "$output" '.result.summary.credentials[0].hosts[1]')" = '*.example.com:8443' ] ||
	    [ "$(json_get "$output" '[.. | objects | select(has("credentials")) | .credentials[0].hosts[1]][0]')" = '*.example.com:8443' ]
	[[ "$output" != *"$VAL"* ]]
	# Binding the same hosts again changes nothing; one more is added.
	run -0 sbx secret bind OPENAI_API_KEY --host API.openai.com \
	    --header 'Authorization: Bearer {}' --json
	[ "$(json_get "$output" .result.changed)" = false ]
	# unbind one host, then the rest.
	run -0 sbx secret unbind OPENAI_API_KEY --host '*.example.com:8443' --json
	[ "$(json_get "$output" '.result.rule.hosts | join(",")')" = api.openai.com ]
	run -0 sbx secret unbind OPENAI_API_KEY
	[ "$(jq -c .credentials "$CFG")" = null ]
	# The other forms.
	run -0 sbx secret bind OTHER --host a.example --basic-user me -q
	run -0 sbx secret bind OPENAI_API_KEY --host b.example:8443 --query key -q
	[ "$(jq -c '[.credentials[] | .basic_user // .query]' "$CFG")" = '["me","key"]' ]
}

@test "hostile bind inputs: each refused, the settings file unchanged" {
	bind
	refused 65 "" bind OPENAI_API_KEY --host x.example --header 'Authorization: Bearer'
	refused 65 "" bind OPENAI_API_KEY --host x.example --header 'X-Key: {}{}'
	refused 65 "" bind OPENAI_API_KEY --host x.example --header 'X-Key: {} {}'
	refused 65 "" bind OPENAI_API_KEY --host x.example --header '{}: x'
	refused 65 "" bind OPENAI_API_KEY --host x.example --header 'no colon {}'
	for h in Host Content-Length Transfer-Encoding Connection \
	    Proxy-Authorization host; do
		refused 65 "" bind OPENAI_API_KEY --host x.example --header "$h: {}"
	done
	for h in 'a b.example' 'http://x.example' '*' '*.' 'x.example:0' \
	    'x.example:99999' 'x.example:*' 'x.example:' '' 'x/y' \
	    "$(printf 'x\001y')" '*.*.example' 'a*.example'; do
		refused 65 "" bind OPENAI_API_KEY --host "$h" --query key
	done
	refused 65 "" bind OPENAI_API_KEY --host x.example --basic-user 'a:b'
	refused 65 "" bind OPENAI_API_KEY --host x.example --query ''
	# An unknown secret: named, with the command that makes it.
	refused 65 secret_missing bind NOPE --host x.example --query key
	run sbx secret bind NOPE --host x.example --query key
	[[ "$output" == *"sbx secret set NOPE --agent default"* ]]
	refused 65 "" bind 'bad name' --host x.example --query key
	# Another placement for a bound secret: unbind first.
	refused 65 binding_differs bind OPENAI_API_KEY --host x.example --query key
	# Two secrets in one header of one host.
	refused 65 rules_collide bind OTHER --host api.openai.com --header 'authorization: Token {}'
	# Usage: no host, no placement, two placements, too many hosts.
	refused 64 "" bind OPENAI_API_KEY --header 'X: {}'
	refused 64 "" bind OPENAI_API_KEY --host x.example
	refused 64 "" bind OPENAI_API_KEY --host x.example --query k --header 'X: {}'
	refused 64 "" bind OPENAI_API_KEY --host x.example --reveal --query k
	refused 64 "" list --host x.example
	local many=() i
	for i in $(seq 17); do many+=(--host "h$i.example"); done
	refused 64 "" bind OPENAI_API_KEY "${many[@]}" --header 'Authorization: Bearer {}'
	# 16 in all, counting the bound one: the 17th is refused by the rule.
	many=()
	for i in $(seq 15); do many+=(--host "h$i.example"); done
	run -0 sbx secret bind OPENAI_API_KEY "${many[@]}" --header 'Authorization: Bearer {}' -q
	refused 65 "" bind OPENAI_API_KEY --host h16.example --header 'Authorization: Bearer {}'
	# Unbind what is not bound: not found, 1.
	refused 1 not_bound unbind OTHER
	refused 1 host_not_bound unbind OPENAI_API_KEY --host nope.example
	refused 65 "" unbind OPENAI_API_KEY --host 'a b'
}

@test "at most 32 rules an agent" {
	local i
	for i in $(seq 32); do
		printf 'value-%s-long' "$i" | sbx secret set "K$i" -q
		sbx secret bind "K$i" --host "h$i.example" --query key -q
	done
	printf 'value-33-long' | sbx secret set K33 -q
	refused 65 too_many_rules bind K33 --host h33.example --query key
	[ "$(jq '.credentials | length' "$CFG")" -eq 32 ]
}

@test "a hand-edited bad rule is refused by sbx config and by a run" {
	mkdir -p "$(dirname "$CFG")"
	echo '{"credentials":[{"secret":"OPENAI_API_KEY","hosts":["a.example"],"header":"Host: {}"}]}' > "$CFG"
	run sbx exec --json -- true
	[ "$status" -eq 78 ] || [ "$status" -eq 65 ]
	[[ "$(json_get "$output" .message)" == *"credentials[0]"* ]]
	echo '{}' > "$CFG"
	run sbx config set credentials --json-value '[{"secret":"X","hosts":["*"],"query":"k"}]' --json
	[ "$status" -eq 65 ]
	[ "$(cat "$CFG")" = '{}' ]
	run -0 sbx config set credentials --json-value '[{"secret":"OPENAI_API_KEY","hosts":["a.example"],"query":"k"}]' -q
	run sbx config set credentials --json-value '[]' --global --json
	[ "$status" -ne 0 ]
}

@test "network none: the variable holds a placeholder, unique per run; the value is nowhere inside" {
	bind
	run -0 sbx exec -- sh -c '
	    printf "%s" "$OPENAI_API_KEY" > /output/ph
	    { cat /proc/self/environ; cat /proc/1/environ; cat /proc/*/cmdline
	      env; } 2>/dev/null > /output/env
	    grep -rl -F -- "$OPENAI_API_KEY" /tmp /run /workspace /etc 2>/dev/null > /output/phfiles
	    echo "$OPENAI_API_KEY"'
	# The placeholder itself is scrubbed from what the sandbox prints.
	[ "$output" = "[REDACTED:OPENAI_API_KEY]" ]
	out=$SBX_HOME/output/default
	ph1=$(cat "$out/ph")
	[[ "$ph1" =~ ^sbx-cred-[0-9a-f]{32}-OPENAI_API_KEY$ ]]
	# Not the value, anywhere: environment, /proc, files.
	! grep -q -F -- "$VAL" "$out/env"
	grep -q -F -- "$ph1" "$out/env"
	run -0 sbx exec -q -- sh -c 'grep -rl -F -- "sk-'"$$"'" /tmp /run /workspace /output /etc /proc/self/environ /proc/1/environ 2>/dev/null; true'
	[ -z "$output" ]
	# A fresh one each run.
	run -0 sbx exec -- sh -c 'printf "%s" "$OPENAI_API_KEY" > /output/ph'
	ph2=$(cat "$out/ph")
	[[ "$ph2" =~ ^sbx-cred-[0-9a-f]{32}-OPENAI_API_KEY$ ]]
	[ "$ph1" != "$ph2" ]
	# The unbound secret is still its value.
	run -0 sbx exec -- sh -c '[ "${OTHER#other-}" != "$OTHER" ]'
	# No CA bundle of its own without the proxy.
	run -0 sbx exec -- sh -c 'echo "$SSL_CERT_FILE"; test -e /run/sbx/ca-bundle.pem && echo there; true'
	[[ "$output" != *"/run/sbx/ca-bundle.pem"* ]]
}

@test "network outbound is refused: it would hand the sandbox the value" {
	bind
	run sbx exec --network outbound --json -- true
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = credentials_need_proxy ]
	[ "$(json_get "$output" .field)" = network ]
	[[ "$(json_get "$output" .message)" == *"OPENAI_API_KEY"*"--network proxy"* ]]
	[[ "$output" != *"$VAL"* ]]
	# Without the bound secret in the run, outbound is the caller's.
	run -0 sbx exec --network outbound --no-secrets -q -- true
	run -0 sbx exec --network outbound --secret OTHER -q -- sh -c '[ -z "${OPENAI_API_KEY:-}" ]'
	# --secret naming the bound one: its rule is in play.
	run sbx exec --network outbound --secret OPENAI_API_KEY --json -- true
	[ "$(json_get "$output" .reason)" = credentials_need_proxy ]
}

@test "a rule naming a secret the agent lacks fails the run, naming it" {
	bind
	run -0 sbx secret rm OPENAI_API_KEY
	[[ "$output" == *"OPENAI_API_KEY is still bound to hosts"* ]]
	run sbx exec --json -- true
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = secret_missing ]
	[[ "$(json_get "$output" .message)" == *OPENAI_API_KEY* ]]
	[[ "$(json_get "$output" .hint)" == *"sbx secret unbind OPENAI_API_KEY"* ]]
	# sbx secret list says so too.
	run -0 sbx secret list
	[[ "$output" == *"OPENAI_API_KEY is bound but agent default has no such secret"* ]]
}

@test "proxy mode: the bundle holds the system's CAs and the state root's CA; the key is out of reach" {
	[ -x "$SBX_TEST_BUILD/libexec/sbx/sbx-proxy" ] || skip "sbx-proxy is not built"
	bind
	run -0 sbx exec --network proxy -q -- sh -c '
	    echo "$SSL_CERT_FILE|$NODE_EXTRA_CA_CERTS|$REQUESTS_CA_BUNDLE"
	    cat "$SSL_CERT_FILE" > /output/bundle
	    ( : >> "$SSL_CERT_FILE" ) 2>/dev/null && echo writable
	    ls /run/sbx'
	[ "${lines[0]}" = "/run/sbx/ca-bundle.pem|/run/sbx/ca-bundle.pem|/run/sbx/ca-bundle.pem" ]
	[[ "$output" != *writable* ]]
	ca=$SBX_HOME/config/ca
	[ -f "$ca/ca.crt" ] && [ -f "$ca/ca.key" ]
	[ "$(stat -c %a "$ca/ca.key")" = 600 ]
	out=$SBX_HOME/output/default
	# The state root's CA is in the copy, and so is the host's bundle.
	grep -q -F -- "$(sed -n 2p "$ca/ca.crt")" "$out/bundle"
	for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
		[ -f "$f" ] || continue
		grep -q -F -- "$(sed -n 2p "$f")" "$out/bundle"
		break
	done
	# The key: not at its host path (config/ is never mounted), not
	# anywhere the sandbox can list, its bytes in no file it can read.
	keyline=$(grep -v -- '-----' "$ca/ca.key" | head -n 1)
	run -0 sbx exec --network proxy -q -- sh -c '
	    test -e "'"$ca"'/ca.key" && echo key-visible
	    test -e "'"$SBX_HOME"'/config" && echo config-visible
	    grep -rl -F -- "'"$keyline"'" /run /tmp /workspace /output /etc 2>/dev/null
	    grep -rl "PRIVATE KEY" /run /workspace /output 2>/dev/null
	    true'
	[ -z "$output" ]
	# The envelope lists the credentials the run used: none here.
	run -0 sbx exec --network proxy --json -- true
	[ "$(json_get "$output" '.result.credentials | length')" -eq 0 ]
	# A run without rules has no such key, and the system bundle.
	run -0 sbx exec --network proxy --no-secrets --json -- sh -c 'echo "$SSL_CERT_FILE"'
	[ "$(json_get "$output" .result.credentials)" = null ]
	[[ "$(json_get "$output" .result.stdout)" != *ca-bundle.pem* ]]
}

@test "the placeholder and the value are scrubbed from the envelope" {
	bind
	run -0 sbx exec --json -- sh -c 'echo "$OPENAI_API_KEY"; echo "'"$VAL"'" >&2'
	[ "$(json_get "$output" .result.stdout)" = "[REDACTED:OPENAI_API_KEY]" ]
	[ "$(json_get "$output" .result.stderr)" = "[REDACTED:OPENAI_API_KEY]" ]
	[[ "$output" != *sbx-cred-* ]]
}

@test "a plugin's declared secret, bound: its run holds the placeholder, in its environment and from the bridge" {
	[ -x "$SBX_TEST_BUILD/libexec/sbx/sbx-bridge" ] || skip "sbx-bridge is not built"
	sbx provision --agent a -q
	sbx config set bridge.enabled true --agent a -q
	GH="ghp-$$-$RANDOM-plugin-value"
	printf '%s' "$GH" | sbx secret set GH_TOKEN --agent a -q
	sbx secret bind GH_TOKEN --agent a --host github.com --basic-user x-access-token -q
	# shellcheck disable=SC2016
	printf '%s\n' '{"name":"gh-peek","description":"d","secrets":["GH_TOKEN"],
	  "tools":[{"id":"peek","description":"d","run":"printf %s \"$GH_TOKEN\" > /output/env-ph; /run/sbx/bin/sbx-host secret get GH_TOKEN > /output/bridge-ph; echo done"}]}' \
	    >"$TEST_ROOT/gh.json"
	sbx plugin add -q "$TEST_ROOT/gh.json"
	sbx plugin install -q --agent a gh-peek
	run sbx plugin run --json --agent a gh-peek peek
	[ "$(json_get "$output" .result.exit_code)" = 0 ] || { echo "$output" >&2; false; }
	out=$SBX_HOME/output/a
	[[ "$(cat "$out/env-ph")" =~ ^sbx-cred-[0-9a-f]{32}-GH_TOKEN$ ]]
	grep -q -F -- "$(cat "$out/env-ph")" "$out/bridge-ph"
	! grep -q -F -- "$GH" "$out/env-ph" "$out/bridge-ph"
	[[ "$output" != *"$GH"* ]]
}
