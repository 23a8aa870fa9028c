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
	run ! jq -e '.allowed_domains // [] | index("ask.sbx.test")' \
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

# ask_tty OUT STEPS SCRIPT: sbx exec --ask for alice on a pseudo-terminal
# of its own, the sandbox running sh -c SCRIPT; pty-answer.py answers it
# (STEPS) and leaves what the terminal showed in OUT/.
ask_tty() {
	mkdir -p "$1"
	"$PY" "$BATS_TEST_DIRNAME/pty-answer.py" "$1" 90 "$2" -- \
	    env SBX_HOME="$SBX_HOME" ${ASK_WRAP:-} "$SBX" exec --ask --network proxy \
	    --agent alice -- sh -c "$3" || {
		echo "pty-answer.py: $? ($(cat "$1/result.json"))"
		tr -d '\r' <"$1/out" | sed 's/\x1b/<ESC>/g'
		return 1
	}
}

# tty_world: alice with --ask only (no network_ask), ask.sbx.test mapped
# to the canary and named by no rule.
tty_world() {
	need_proxy_tools
	start_canary
	write_sandbox_config
	write_agent_config alice '{"ask_timeout_s": 60,
	    "resolve": {"ask.sbx.test": "127.0.0.1"}}'
	agent_ready alice
	Q="sbx\\[([0-9a-f]{4})\\]: allow ask\\.sbx\\.test:$CANARY_PORT for agent alice\\? \\[o\\]nce/\\[a\\]lways/\\[d\\]eny "
}

@test "ask on a terminal: sbx exec --ask asks there, the answer typed releases the request, the decision is shown" {
	tty_world
	ask_tty "$TEST_ROOT/t1" "$(jq -nc --arg q "$Q" '[[$q, "o\n", 0]]')" \
	    "$CURL -sS -m 60 http://ask.sbx.test:$CANARY_PORT/"
	tr -d '\r' <"$TEST_ROOT/t1/out"
	[ "$(jq .status "$TEST_ROOT/t1/result.json")" = 0 ]
	tag=$(grep -aoE "$Q" "$TEST_ROOT/t1/out" | sed -E 's/^sbx\[([0-9a-f]{4})\].*/\1/')
	[ -n "$tag" ]
	grep -aq "sbx\[$tag\]: ask.sbx.test:$CANARY_PORT for agent alice: allowed once" "$TEST_ROOT/t1/out"
	grep -aq canary "$TEST_ROOT/t1/out"
	grep -q '"answer":"allow-once"' "$PLOG"
	# Without a terminal nobody is asked here: the ask waits for another
	# answer (and times out).
	write_agent_config alice '{"ask_timeout_s": 1,
	    "resolve": {"ask.sbx.test": "127.0.0.1"}}'
	run sbx exec --json --ask --network proxy --agent alice -- \
	    "$CURL" -sS -m 20 "http://ask.sbx.test:$CANARY_PORT/"
	[ "$(jc "$output" '[.result.violations[] | .reason]')" = '["ask_timeout"]' ]
}

@test "ask on a terminal, hostile: the sandbox cannot draw over the question, read the answer, or turn one key into allow-always" {
	tty_world
	command -v od >/dev/null || skip "od is not installed"
	# The sandbox: a question of its own first, then invisible text;
	# then, while sbx asks, it keeps drawing (over the question: erase
	# line, carriage return), writes to its stdin (the terminal, if it
	# were handed in) and reads its stdin (for the answer).  SPOOF lines
	# are numbered: none may be lost.
	script='printf "sbx: allow ok.sbx.test:443 for agent alice? [o]nce/[a]lways/[d]eny \033[8m"
	exec 3<&0; cat <&3 >/tmp/stolen 3<&- &
	( n=0; while [ ! -e /tmp/done ] && [ $n -lt 3000 ]; do n=$((n+1))
	    printf "\033[2K\rSPOOF %d\n" $n; printf "FD0 %d\033[2K\r" $n >&0 2>/dev/null
	    sleep 0.02; done; echo "SPOOF-LAST $n" ) &
	spoof=$!
	code=$('"$CURL"' -sS -m 60 -o /dev/null -w "%{http_code}" http://ask.sbx.test:'"$CANARY_PORT"'/)
	touch /tmp/done; wait $spoof
	echo "CODE=$code STOLEN=$(wc -c </tmp/stolen)"'
	# One key "a" and a wrong name: not allow-always (denied).  The pause
	# after the question gives the sandbox time to draw, were it able.
	# (Any question of sbx's for ask.sbx.test, tagged or not, is taken.)
	ql="sbx(\\[[0-9a-f]{4}\\])?: allow ask\\.sbx\\.test:$CANARY_PORT for agent alice\\? "
	ask_tty "$TEST_ROOT/t1" "$(jq -nc --arg q "$ql" '[[$q, "a\n", 1],
	    ["type the host name \\(ask\\.sbx\\.test\\): ", "ask.sbx.tes\n", 1]]')" "$script" || true
	out=$TEST_ROOT/t1/out
	tr -d '\r' <"$out" | sed 's/\x1b/<ESC>/g'
	# Nothing of the sandbox's between the question and the answers.
	run ! grep -aq 'SPOOF\|FD0' "$TEST_ROOT/t1/held.0"
	[ "$(jq .steps "$TEST_ROOT/t1/result.json")" = 2 ]
	run ! grep -aq 'SPOOF\|FD0' "$TEST_ROOT/t1/held.1"
	# The terminal was reset before the question: attributes, and the
	# line cleared after a fresh one.
	grep -aoE $'\e\\[0m.*\r\n\e\\[K'"$Q" "$out" >/dev/null
	tag=$(grep -aoE "$Q" "$out" | sed -E 's/^sbx\[([0-9a-f]{4})\].*/\1/')
	grep -aq "sbx\[$tag\]: that is not the host name" "$out"
	grep -aq "sbx\[$tag\]: ask.sbx.test:$CANARY_PORT for agent alice: denied" "$out"
	grep -aq 'CODE=403 STOLEN=0' "$out"
	# What sbx says after the run is not hidden by the invisible text
	# the sandbox left on: the terminal is reset before it.
	grep -aq $'\e\\[0m.*sbx: proxy denied 1 request: ask.sbx.test' "$out"
	# The sandbox never had the terminal on fd 0.
	run ! grep -aq 'FD0' "$out"
	# Held, not lost: SPOOF 1..LAST, each once, in order.
	last=$(grep -ao 'SPOOF-LAST [0-9]*' "$out" | cut -d' ' -f2)
	[ "$last" -gt 0 ]
	[ "$(grep -ao 'SPOOF [0-9]*' "$out" | cut -d' ' -f2 | tr '\n' ' ')" = "$(seq -s ' ' 1 "$last") " ]
	grep -q '"answer":"deny"' "$PLOG"
	run ! jq -e '.allowed_domains // [] | index("ask.sbx.test")' \
	    "$SBX_HOME/config/agents/alice.json"
	# allow-always takes the host name typed out; then it is remembered.
	ask_tty "$TEST_ROOT/t2" "$(jq -nc --arg q "$Q" '[[$q, "a\n", 0],
	    ["type the host name \\(ask\\.sbx\\.test\\): ", "ask.sbx.test\n", 0]]')" "$script"
	tr -d '\r' <"$TEST_ROOT/t2/out" | sed 's/\x1b/<ESC>/g'
	grep -aq "for agent alice: allowed always" "$TEST_ROOT/t2/out"
	grep -aq 'CODE=200 STOLEN=0' "$TEST_ROOT/t2/out"
	jq -e '.allowed_domains | index("ask.sbx.test")' \
	    "$SBX_HOME/config/agents/alice.json"
}
