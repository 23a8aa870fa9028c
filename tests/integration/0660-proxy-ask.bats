#!/usr/bin/env bats
# sbx-proxy: asking about names no rule decides (issue 20): network_ask and
# --ask hold the request, `sbx proxy asks --follow` sees it, `sbx proxy
# answer` releases it; unanswered is denied; a flood is bounded per agent;
# an id of another state root is not found.  Servers on 127.0.0.1 only.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

# ask_world [AGENTJSON]: alice asks (20 s); ask.sbx.test maps to the canary
# but no rule names it.
ask_world() {
	need_proxy_tools
	start_canary
	write_sandbox_config
	write_agent_config alice "$(jq -n --argjson x "${1:-"{}"}" '{network_ask: true,
	    ask_timeout_s: 20,
	    resolve: {"allowed.sbx.test": "127.0.0.1", "ask.sbx.test": "127.0.0.1",
	        "ask2.sbx.test": "127.0.0.1"}} + $x')"
	agent_ready alice
	"$SBX" proxy serve -q
	FOLLOW=$TEST_ROOT/follow.out
	"$SBX" proxy asks --follow > "$FOLLOW" 2>&1 3>&- &
	SERVER_PIDS+=("$!")
	# The follower is connected once its first lines (none) came.
	for _ in $(seq 50); do
		"$SBX" proxy status --json | jq -e '.result.sessions >= 1' \
		    >/dev/null && break
		sleep 0.1
	done
}

# held A URL OUT: curl URL from A's sandbox in the background into OUT.
held() {
	pexec "$1" "$CURL" -sS -m 25 -o /dev/null -w '%{http_code}\n' "$2" \
	    > "$3" 2>&1 3>&- &
	BG_PIDS+=("$!")
}

# ask_id HOST: the id of the first published ask for HOST (10 s at most).
ask_id() {
	local i id
	for i in $(seq 100); do
		id=$(jq -r --arg h "$1" 'select(.event == "ask" and .host == $h) | .id' \
		    "$FOLLOW" 2>/dev/null | head -n 1)
		[ -n "$id" ] && { echo "$id"; return 0; }
		sleep 0.1
	done
	return 1
}

# wait_out FILE: its content once the background curl ended (30 s).
wait_out() {
	local i
	for i in $(seq 300); do
		[ -s "$1" ] && { cat "$1"; return 0; }
		sleep 0.1
	done
	return 1
}

@test "ask: the request is held and published; allow-once lets that one through" {
	ask_world
	held alice "http://ask.sbx.test:$CANARY_PORT/" "$TEST_ROOT/c1"
	id=$(ask_id ask.sbx.test)
	echo "id $id"
	[[ "$id" =~ ^[0-9a-f]{16}$ ]]
	# Nothing was dialled while it waits.
	[ "$(canary_hits)" -eq 0 ]
	run sbx proxy asks --json
	echo "$output"
	[ "$(jc "$output" '[.result.asks[] | [.id, .agent, .host, .port]]')" = \
	    "[[\"$id\",\"alice\",\"ask.sbx.test\",$CANARY_PORT]]" ]
	run sbx proxy asks
	[[ "$output" == "$id agent alice asks ask.sbx.test:$CANARY_PORT "* ]]
	run sbx proxy answer --json "$id" allow-once
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.released)" = 1 ]
	[ "$(wait_out "$TEST_ROOT/c1")" = 200 ]
	[ "$(canary_hits)" -eq 1 ]
	grep -q "\"event\":\"answered\".*\"id\":\"$id\"" "$FOLLOW"
	grep -q '"verdict":"ask"' "$PLOG"
	grep -q '"answer":"allow-once"' "$PLOG"
	# Once: the next request asks again (nothing was remembered).
	! grep -q ask.sbx.test "$SBX_HOME/config/agents/alice.json" ||
	    ! jq -e '.allowed_domains | index("ask.sbx.test")' \
	    "$SBX_HOME/config/agents/alice.json"
}

@test "ask: deny and timeout refuse (403 ask_denied, ask_timeout) and are violations of the run" {
	ask_world '{"ask_timeout_s": 2}'
	pexec alice "$CURL" -sS -m 25 -o /dev/null -w '%{http_code}\n' \
	    -p "http://ask.sbx.test:$CANARY_PORT/" > "$TEST_ROOT/c1" 2>&1 3>&- &
	BG_PIDS+=("$!")
	id=$(ask_id ask.sbx.test)
	run sbx proxy answer "$id" deny
	[ "$status" -eq 0 ]
	wait_out "$TEST_ROOT/c1"
	grep -q '"reason":"ask_denied"' "$PLOG"
	# Nobody answers: denied after ask_timeout_s, recorded in the run.
	run sbx exec --json --network proxy --agent alice -- \
	    "$CURL" -sS -m 25 "http://ask2.sbx.test:$CANARY_PORT/"
	echo "$output"
	[ "$(jc "$output" '[.result.violations[] | [.host, .reason]]')" = \
	    '[["ask2.sbx.test","ask_timeout"]]' ]
	[ "$(canary_hits)" -eq 0 ]
	# A name a rule decides is never asked about.
	run sbx exec --json --network proxy --agent alice -- \
	    "$CURL" -sS -m 5 "http://allowed.sbx.test:$CANARY_PORT/"
	[ "$(json_get "$output" .result.stdout)" = canary ]
	[ "$(grep -c '"event":"ask"' "$FOLLOW")" -eq 2 ]
}

@test "ask: allow-always and deny-always go into the agent's config through the config code" {
	ask_world
	held alice "http://ask.sbx.test:$CANARY_PORT/" "$TEST_ROOT/c1"
	id=$(ask_id ask.sbx.test)
	run sbx proxy answer "$id" allow-always
	[ "$status" -eq 0 ]
	[ "$(wait_out "$TEST_ROOT/c1")" = 200 ]
	# The port is in allowed_ports: the name alone.
	jq -e '.allowed_domains | index("ask.sbx.test")' \
	    "$SBX_HOME/config/agents/alice.json"
	run sbx config get --agent alice allowed_domains --json
	[[ "$output" == *'"ask.sbx.test"'* ]]
	# Remembered: no second ask.
	run pexec alice "$CURL" -sS -m 5 "http://ask.sbx.test:$CANARY_PORT/"
	[ "$output" = canary ]
	[ "$(grep -c '"event":"ask"' "$FOLLOW")" -eq 1 ]
	# deny-always: NAME:PORT in denied_domains, refused without asking.
	held alice "http://ask2.sbx.test:$CANARY_PORT/" "$TEST_ROOT/c2"
	id=$(ask_id ask2.sbx.test)
	run sbx proxy answer "$id" deny-always
	[ "$status" -eq 0 ]
	jq -e --arg e "ask2.sbx.test:$CANARY_PORT" '.denied_domains | index($e)' \
	    "$SBX_HOME/config/agents/alice.json"
	run raw_requests alice g="$(get_req "http://ask2.sbx.test:$CANARY_PORT/" "ask2.sbx.test:$CANARY_PORT")"
	expect g 403 denied_domain
}

@test "ask hostile: an unknown id, a bad answer, an id of another state root; the ask stays pending" {
	ask_world
	held alice "http://ask.sbx.test:$CANARY_PORT/" "$TEST_ROOT/c1"
	id=$(ask_id ask.sbx.test)
	run sbx proxy answer --json 0123456789abcdef allow-once
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .kind)" = not_found ]
	[ "$(json_get "$output" .reason)" = no_such_ask ]
	run sbx proxy answer --json "$id" maybe
	[ "$status" -eq 64 ] || [ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = bad_answer ]
	# Another state root: its proxy does not know the id.
	other=$TEST_ROOT/other-root
	mkdir -p "$other"
	SBX_HOME=$other "$SBX" proxy serve -q
	run env SBX_HOME="$other" "$SBX" proxy answer --json "$id" allow-always
	echo "$output"
	[ "$(json_get "$output" .reason)" = no_such_ask ]
	SBX_HOME=$other timeout 10 "$SBX" proxy stop >/dev/null 2>&1 || true
	[ ! -e "$other/config/agents/alice.json" ]
	# Still pending here, and nothing was dialled.
	run sbx proxy asks --json
	[ "$(jc "$output" '[.result.asks[].id]')" = "[\"$id\"]" ]
	[ "$(canary_hits)" -eq 0 ]
	sbx proxy answer "$id" deny
}

@test "ask flood: one agent's pending asks are bounded (503 too_many_asks); another agent still asks" {
	ask_world
	write_agent_config bob '{"network_ask": true, "ask_timeout_s": 20, "resolve": {"bob.sbx.test": "127.0.0.1"}}'
	agent_ready bob
	# printf -v: a command substitution would eat the final CRLF.
	printf -v req 'CONNECT f.sbx.test:443 HTTP/1.1\r\nHost: f.sbx.test:443\r\nProxy-Authorization: Basic %s\r\n\r\n' \
	    "$(basic_auth alice "$(proxy_token alice)")"
	pexec alice "$PY" /workspace/agents/alice/pc.py hold 24 --send "$req" \
	    --max 4 > "$TEST_ROOT/hold.out" 2>&1 3>&- &
	BG_PIDS+=("$!")
	for _ in $(seq 100); do
		[ "$(grep -c '"event":"ask"' "$FOLLOW")" -ge 16 ] && break
		sleep 0.1
	done
	sleep 0.5
	cat "$FOLLOW"
	[ "$(grep -c '"event":"ask"' "$FOLLOW")" -eq 16 ]
	grep -q '"reason":"too_many_asks"' "$PLOG"
	# bob is not held back by alice's flood.
	held bob "http://bob.sbx.test:$CANARY_PORT/" "$TEST_ROOT/b1"
	id=$(ask_id bob.sbx.test)
	[ -n "$id" ]
	sbx proxy answer "$id" allow-once
	[ "$(wait_out "$TEST_ROOT/b1")" = 200 ]
	for _ in $(seq 100); do [ -s "$TEST_ROOT/hold.out" ] && break; sleep 0.1; done
	cat "$TEST_ROOT/hold.out"
	[ "$(tail -n 1 "$TEST_ROOT/hold.out" | jq .refused503)" -eq 8 ]
}

@test "ask flood over several runs: the cap on pending asks is the agent's, not each run's" {
	ask_world
	write_agent_config bob '{"network_ask": true, "ask_timeout_s": 20, "resolve": {"bob.sbx.test": "127.0.0.1"}}'
	agent_ready bob
	printf -v req 'CONNECT f.sbx.test:443 HTTP/1.1\r\nHost: f.sbx.test:443\r\nProxy-Authorization: Basic %s\r\n\r\n' \
	    "$(basic_auth alice "$(proxy_token alice)")"
	# Two runs of alice, 12 asks each, held until the test says: counted
	# per run, all 24 would be pending (and 16 runs of one agent would
	# fill the proxy's whole table); per agent, 16 are, 8 are refused.
	until=/workspace/agents/alice/req/done
	rm -f "$(ahome alice)/req/done"
	for i in 1 2; do
		pexec alice "$PY" /workspace/agents/alice/pc.py hold 12 \
		    --send "$req" --until "$until" --max 40 \
		    > "$TEST_ROOT/hold$i.out" 2>&1 3>&- &
		BG_PIDS+=("$!")
		# The first run's asks are all pending before the second's.
		for _ in $(seq 200); do
			[ "$(grep -c '"event":"ask"' "$FOLLOW")" -ge 12 ] && break
			sleep 0.1
		done
	done
	# Every one of the 24 is either pending or refused.
	for _ in $(seq 200); do
		[ "$(( $(grep -c '"event":"ask"' "$FOLLOW") +
		    $(grep -c '"reason":"too_many_asks"' "$PLOG") ))" -ge 24 ] && break
		sleep 0.1
	done
	run sbx proxy asks --json
	echo "$output"
	[ "$(jc "$output" '[.result.asks[] | select(.agent == "alice")] | length')" -eq 16 ]
	[ "$(jc "$output" '[.result.asks[] | select(.agent == "alice") | .run] | unique | length')" -eq 2 ]
	[ "$(grep -c '"reason":"too_many_asks"' "$PLOG")" -eq 8 ]
	# bob asks while alice's runs hold their share.
	held bob "http://bob.sbx.test:$CANARY_PORT/" "$TEST_ROOT/b1"
	id=$(ask_id bob.sbx.test)
	[ -n "$id" ]
	sbx proxy answer "$id" allow-once
	[ "$(wait_out "$TEST_ROOT/b1")" = 200 ]
	touch "$(ahome alice)/req/done"
	for i in 1 2; do
		for _ in $(seq 300); do [ -s "$TEST_ROOT/hold$i.out" ] && break; sleep 0.1; done
		cat "$TEST_ROOT/hold$i.out"
	done
	[ "$(( $(tail -n 1 "$TEST_ROOT/hold1.out" | jq .refused503) +
	    $(tail -n 1 "$TEST_ROOT/hold2.out" | jq .refused503) ))" -eq 8 ]
}

@test "ask on a terminal: sbx exec --ask prompts and the answer typed there releases the request" {
	need_proxy_tools
	command -v script >/dev/null || skip "script(1) is not installed (bsdutils)"
	start_canary
	write_sandbox_config
	# No network_ask for alice: --ask turns it on for this run.
	write_agent_config alice '{"ask_timeout_s": 20,
	    "resolve": {"ask.sbx.test": "127.0.0.1"}}'
	agent_ready alice
	cmd="$SBX exec --ask --network proxy --agent alice -- $CURL -sS -m 20 http://ask.sbx.test:$CANARY_PORT/"
	# The answer is typed once the prompt is there.
	(
		for _ in $(seq 100); do
			grep -q 'for agent alice?' "$TEST_ROOT/tty.out" 2>/dev/null && break
			sleep 0.1
		done
		printf 'o\n'
		sleep 3
	) | SBX_HOME=$SBX_HOME timeout 30 script -qfec "$cmd" "$TEST_ROOT/tty.out" > /dev/null 2>&1 || true
	cat "$TEST_ROOT/tty.out"
	grep -q "sbx: allow ask.sbx.test:$CANARY_PORT for agent alice? \[o\]nce/\[a\]lways/\[d\]eny" "$TEST_ROOT/tty.out"
	grep -q canary "$TEST_ROOT/tty.out"
	grep -q '"answer":"allow-once"' "$PLOG"
	# Without a terminal nobody is asked here: the ask waits for another
	# answer (and times out).
	write_agent_config alice '{"ask_timeout_s": 1,
	    "resolve": {"ask.sbx.test": "127.0.0.1"}}'
	run sbx exec --json --ask --network proxy --agent alice -- \
	    "$CURL" -sS -m 20 "http://ask.sbx.test:$CANARY_PORT/"
	[ "$(jc "$output" '[.result.violations[] | .reason]')" = '["ask_timeout"]' ]
}
