#!/usr/bin/env bats
# sbx-bridge: POST /v1/inference/chat forwarded to a fake OpenAI-compatible
# endpoint on 127.0.0.1 (tests/integration/bridge-fake-openai.py): off by
# default, the key never in the sandbox, streaming relayed as server-sent
# events, a hanging endpoint bounded, the daily token budget.
# sbx-test: unprivileged

load lib
load bridge

setup() {
	sbx_setup
	python3 "$BATS_TEST_DIRNAME/bridge-fake-openai.py" "$TEST_ROOT/port" \
	    "$TEST_ROOT/upstream.log" &
	FAKE_PID=$!
	for i in $(seq 300); do [ -s "$TEST_ROOT/port" ] && break; sleep 0.1; done
	PORT=$(cat "$TEST_ROOT/port")
	BRIDGE_CONFIG="{\"bridge\":{\"inference\":{\"url\":\"http://127.0.0.1:$PORT/v1/chat/completions\",\"key_agent\":\"keys\",\"key_secret\":\"OPENAI_KEY\",\"timeout_s\":2,\"tokens_per_day\":20}}}"
	sbx provision --agent keys -q
	sbx secret set OPENAI_KEY --agent keys -q <<<"sk-host-only-0852"
	SBX_HOME_SET=1
	bridge_setup_on
}
teardown() { bridge_teardown; }

# bridge_setup without a second sbx_setup.
bridge_setup_on() {
	sbx provision --agent a -q
	sbx provision --agent b -q
	TOK_a=$(cat "$SBX_HOME/run/tokens/a")
	TOK_b=$(cat "$SBX_HOME/run/tokens/b")
	printf '%s\n' "$BRIDGE_CONFIG" >"$SBX_HOME/config/sandbox.json"
	"$BRIDGE" serve -q
	relay a
	relay b
}

@test "a chat completion, forwarded with the host's key, which the sandbox never sees" {
	run host a inference chat -m small <<<'[{"role":"user","content":"hi"}]'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" '.choices[0].message.content')" = hello ]
	[[ "$output" != *sk-host-only* ]]
	[ "$(jq -r .auth "$TEST_ROOT/upstream.log")" = "Bearer sk-host-only-0852" ]
	# Only the model, the messages and the knobs were forwarded.
	[ "$(jq -c '.body | keys' "$TEST_ROOT/upstream.log")" = '["messages","model","stream"]' ]
	run host a whoami
	[ "$(json_get "$output" .inference)" = true ]
}

@test "stream: true is relayed as server-sent events" {
	run host a inference chat -m small --stream <<<'[{"role":"user","content":"hi"}]'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^data: ')" -eq 4 ]
	[[ "$output" == *'"content": "hel"'* ]]
	[[ "$output" == *'data: [DONE]'* ]]
	run curl -s -i -N --unix-socket "$TEST_ROOT/a.sock" -H "Authorization: Bearer $TOK_a" \
	    --data-binary '{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}' \
	    http://bridge/v1/inference/chat
	[[ "$output" == *"Content-Type: text/event-stream"* ]]
}

@test "a hanging endpoint is bounded: 504, stream or not" {
	run host a inference chat -m hang <<<'[{"role":"user","content":"hi"}]'
	echo "$output"
	[ "$status" -eq 69 ]
	[[ "$output" == *upstream_timeout* ]]
	run host a inference chat -m hang --stream <<<'[{"role":"user","content":"hi"}]'
	[ "$status" -eq 69 ]
	[[ "$output" == *upstream_timeout* ]]
	# The bridge still answers.
	run host a whoami
	[ "$status" -eq 0 ]
}

@test "an upstream error is a 502, its body not relayed" {
	run host a inference chat -m err <<<'[{"role":"user","content":"hi"}]'
	[ "$status" -eq 69 ]
	[[ "$output" == *upstream_error* ]]
	[[ "$output" != *boom* ]]
	run host a inference chat -m err --stream <<<'[{"role":"user","content":"hi"}]'
	[ "$status" -eq 69 ]
	[[ "$output" != *boom* ]]
}

@test "bad requests never reach the endpoint" {
	run breq a POST /v1/inference/chat '{"model":"","messages":[]}'
	echo "$output"
	[ "${output%% *}" = 400 ]
	run breq a POST /v1/inference/chat '{"model":"m","messages":"x"}'
	echo "$output"
	[ "${output%% *}" = 400 ]
	[ ! -e "$TEST_ROOT/upstream.log" ] || cat "$TEST_ROOT/upstream.log"
	[ ! -e "$TEST_ROOT/upstream.log" ]
}

@test "the daily token budget: 429 once spent, per agent" {
	for i in 1 2 3; do
		run host a inference chat -m small <<<'[{"role":"user","content":"hi"}]'
		[ "$status" -eq 0 ]
	done
	run host a inference chat -m small <<<'[{"role":"user","content":"hi"}]'
	[ "$status" -eq 75 ]
	[[ "$output" == *token_budget* ]]
	run host b inference chat -m small <<<'[{"role":"user","content":"hi"}]'
	[ "$status" -eq 0 ]
}

@test "off by default: 503" {
	printf '{}\n' >"$SBX_HOME/config/sandbox.json"
	"$BRIDGE" stop -q
	"$BRIDGE" serve -q
	relay a
	run host a inference chat -m small <<<'[{"role":"user","content":"hi"}]'
	# Once seen failing in CI (exit 69 without inference_off) and never
	# again in 21 runs here: say what was answered, and by whom.
	echo "$output"
	cat "$TEST_ROOT/relay-a.out" >&2
	"$BRIDGE" status >&2 || true
	[ "$status" -eq 69 ]
	[[ "$output" == *inference_off* ]]
}
