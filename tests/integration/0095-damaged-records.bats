#!/usr/bin/env bats
# Damaged state files (issue 30): every state file sbx reads, emptied, cut
# in half and garbled in turn; each refusal names the file (relative to
# the state root) and says how to repair it.  Listings (sbx exec ps, sbx
# bridge tasks, sbx bridge events) show a damaged record as damaged,
# never skip it; sbx status and sbx preflight report one.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

JOB=c4c498bcb2b3d0d1
TASK=t00000000000000aa

# A state root with one of each record, all sound.
world() {
	run -0 sbx provision --agent alice -q
	run -0 sbx secret set TOK --agent alice -q <<<"tok-0095"
	a=$SBX_HOME/agents/alice
	echo '{"network":"none"}' > "$SBX_HOME/config/sandbox.json"
	echo '{}' > "$SBX_HOME/images/names.json"
	echo '{"plugins":[],"version":1}' > "$a/plugins.json"
	echo '{"apt":[],"npm":[],"pip":[]}' > "$a/installed-packages.json"
	mkdir -p "$a/jobs" "$a/bridge/tasks"
	printf '{"agent":"alice","command":["true"],"cwd":"/workspace/agents/alice","ended_at":"2026-01-01T00:00:00Z","exit_code":0,"job":"%s","log_dropped_bytes":0,"log_truncated":false,"network":"none","pid":2147483646,"pid_start":1,"started_at":"2026-01-01T00:00:00Z","state":"exited"}\n' "$JOB" > "$a/jobs/$JOB.json"
	: > "$a/jobs/$JOB.log"
	printf '{"agent":"alice","created":"2026-01-01T00:00:00.000Z","id":"%s","status":"queued","task":"x"}\n' "$TASK" > "$a/bridge/tasks/$TASK.json"
	printf '{"id":1,"ts":"2026-01-01T00:00:00.000Z","type":"a"}\n{"id":2,"ts":"2026-01-01T00:00:00.001Z","type":"b"}\n' > "$a/bridge/events.jsonl"
	chmod 600 "$SBX_HOME/config/sandbox.json" "$a"/*.json "$a/jobs/"* "$a/bridge/tasks/"* "$a/bridge/events.jsonl"
}

# damage MODE FILE: emptied, halved (the first half kept) or garbled (a
# NUL and stray bytes written over its fourth byte on).
damage() {
	local size
	size=$(stat -c %s "$2")
	case $1 in
	empty) : > "$2" ;;
	half) truncate -s $((size / 2)) "$2" ;;
	garbled) printf '\000garbage{' | dd of="$2" bs=1 seek=3 conv=notrunc 2>/dev/null ;;
	esac
}

@test "every refusal of a damaged state file names it and says how to repair (3 damages x 9 files)" {
	world
	fails=0
	while IFS='|' read -r rel cmd; do
		cp "$SBX_HOME/$rel" "$TEST_ROOT/good"
		# Sound, the command works.
		# shellcheck disable=SC2086
		SBX_JSON=1 run sbx $cmd
		if [ "$status" -ne 0 ]; then
			echo "sound $rel: $cmd: $output"
			fails=$((fails + 1))
			continue
		fi
		for mode in empty half garbled; do
			cp "$TEST_ROOT/good" "$SBX_HOME/$rel"
			damage "$mode" "$SBX_HOME/$rel"
			# shellcheck disable=SC2086
			SBX_JSON=1 run --separate-stderr sbx $cmd
			msg=$(json_get "$output" .message 2>&1) || true
			hint=$(json_get "$output" .hint 2>&1) || true
			if [ "$status" -eq 0 ] || [[ $msg != *"$rel"* ]] ||
			    [ -z "$hint" ] || [ "$hint" = null ]; then
				echo "$mode $rel: $cmd: status $status: $output $stderr"
				fails=$((fails + 1))
			fi
		done
		cp "$TEST_ROOT/good" "$SBX_HOME/$rel"
	done <<EOF
config/sandbox.json|exec --agent alice -- true
config/agents/alice.json|exec --agent alice -- true
config/secret.key|secret check TOK --agent alice
agents/alice/secrets.json|secret check TOK --agent alice
agents/alice/plugins.json|plugin tools --agent alice
agents/alice/installed-packages.json|install list --agent alice
agents/alice/jobs/$JOB.json|exec poll $JOB --agent alice
agents/alice/bridge/tasks/$TASK.json|bridge task done $TASK --agent alice
images/names.json|provision image list
EOF
	[ "$fails" -eq 0 ]
}

@test "listings show damaged records as damaged: exec ps, bridge tasks, bridge events" {
	world
	a=$SBX_HOME/agents/alice
	damage half "$a/jobs/$JOB.json"
	run -0 sbx exec ps --agent alice --json
	echo "$output"
	[ "$(json_get "$output" '.result.jobs[0].state')" = damaged ]
	[[ $(json_get "$output" '.result.jobs[0].message') == *"agents/alice/jobs/$JOB.json"* ]]
	run -0 sbx exec ps --agent alice
	[[ $output == *"$JOB"*damaged*"agents/alice/jobs/$JOB.json"* ]]
	damage garbled "$a/bridge/tasks/$TASK.json"
	run -0 sbx bridge tasks --agent alice --json
	echo "$output"
	[ "$(json_get "$output" .damaged)" = true ]
	[ "$(json_get "$output" .file)" = "agents/alice/bridge/tasks/$TASK.json" ]
	run --separate-stderr -0 sbx bridge tasks --agent alice
	[[ $output == "$TASK"*damaged* ]]
	[[ $stderr == *"agents/alice/bridge/tasks/$TASK.json is damaged"* ]]
	printf '#garbled#\n{"id":3,"ts":"2026-01-01T00:00:00.002Z","type":"c"}\n' >> "$a/bridge/events.jsonl"
	run -0 sbx bridge events --agent alice --since 2 --json
	echo "$output"
	[ "${#lines[@]}" -eq 2 ]
	[ "$(json_get "${lines[0]}" .damaged)" = true ]
	[ "$(json_get "${lines[0]}" .line)" = 3 ]
	[ "$(json_get "${lines[1]}" .id)" = 3 ]
}

@test "sbx status and sbx preflight report a damaged plugins.json and package manifest" {
	world
	a=$SBX_HOME/agents/alice
	run -0 sbx status --agent alice --json
	damage half "$a/plugins.json"
	damage empty "$a/installed-packages.json"
	run -1 sbx status --agent alice --json
	echo "$output"
	[ "$(json_get "$output" '[.result.problems[] | select(.state == "damaged") | .path] | join(",")')" = \
	    agents/alice/plugins.json,agents/alice/installed-packages.json ]
	run -1 sbx status --agent alice
	[[ $output == *"[problem]      agents/alice/plugins.json"* ]]
	[[ $output == *"repair: sbx install reconcile --agent alice"* ]]
	run sbx preflight --agent alice --json
	echo "$output"
	[ "$(json_get "$output" '[.. | objects | select(.code? == "record_damaged") | .id] | join(",")')" = \
	    state.plugins,state.packages ]
}
