#!/usr/bin/env bats
# Warm sessions (issue 31), what each command gets of its own as a
# one-shot run does: the agent's secrets as they are when the command runs
# (set, changed, removed since the session started), scrubbed from its
# output, --env over them, none with --no-secrets; and the wall-clock
# limit of the agent's and sbx's configuration, not only --wall-timeout.
# sbx-test: unprivileged

load lib
load session
bats_require_minimum_version 1.5.0

@test "secrets are each command's: changed, added and removed ones are seen by the next command" {
	printf %s first-value-1 | sbx secret set TOKA
	run -0 sbx session start --name env1 --idle-timeout 60
	run -0 sbx exec --session env1 -- sh -c 'printf %s "$TOKA" | sed "s/./&./g"'
	[ "$output" = f.i.r.s.t.-.v.a.l.u.e.-.1. ]
	# Scrubbed from the output, as a one-shot run's.
	run -0 sbx exec --session env1 -- sh -c 'echo "A=$TOKA"'
	[ "$output" = "A=[REDACTED:TOKA]" ]
	printf %s second-value-2 | sbx secret set TOKA
	printf %s other-value-3 | sbx secret set TOKB
	run -0 sbx exec --session env1 -- sh -c 'printf "%s %s" "$TOKA" "$TOKB" | sed "s/./&./g"'
	[ "$output" = "s.e.c.o.n.d.-.v.a.l.u.e.-.2. .o.t.h.e.r.-.v.a.l.u.e.-.3." ]
	# The caller's --env wins over a secret, as in a one-shot run.
	run -0 sbx exec --session env1 --env TOKA=mine -- sh -c 'echo "$TOKA"'
	[ "$output" = mine ]
	run -0 sbx secret rm TOKA
	run -0 sbx exec --session env1 -- sh -c 'echo "${TOKA-unset}"'
	[ "$output" = unset ]
	run -0 sbx exec --session env1 -- sh -c 'echo "$TOKB"'
	[ "$output" = "[REDACTED:TOKB]" ]
}

@test "--no-secrets and --secret NAME hold for every command of the session" {
	printf %s aaa-111 | sbx secret set TOKA
	printf %s bbb-222 | sbx secret set TOKB
	run -0 sbx session start --name none --no-secrets --idle-timeout 60
	run -0 sbx exec --session none -- sh -c 'echo "${TOKA-unset} ${TOKB-unset}"'
	[ "$output" = "unset unset" ]
	run -0 sbx session start --name one --secret TOKB --idle-timeout 60
	printf %s bbb-333 | sbx secret set TOKB
	run -0 sbx exec --session one -- sh -c 'printf "%s %s" "${TOKA-unset}" "$TOKB" | sed "s/./&./g"'
	[ "$output" = "u.n.s.e.t. .b.b.b.-.3.3.3." ]
}

@test "a secret store that cannot be opened fails the command, names why, and the session goes on" {
	printf %s aaa-111 | sbx secret set TOKA
	run -0 sbx session start --name bad --idle-timeout 60
	a="$SBX_HOME/agents/default"
	cp "$a/secrets.json" "$BATS_TEST_TMPDIR/keep"
	cp "$a/secrets.json.prev" "$BATS_TEST_TMPDIR/keep.prev" 2>/dev/null || true
	printf '{"broken":' > "$a/secrets.json"
	printf '{"broken":' > "$a/secrets.json.prev"
	run -77 sbx exec --session bad --json -- touch /tmp/ran
	[ "$(jq -r .ok <<<"$output")" = false ]
	[ "$(jq -r .reason <<<"$output")" = secret_store_unreadable ]
	cp "$BATS_TEST_TMPDIR/keep" "$a/secrets.json"
	rm -f "$a/secrets.json.prev"
	# The command never ran.
	run -1 sbx exec --session bad -- test -e /tmp/ran
	run -0 sbx exec --session bad -- sh -c 'echo ok'
	[ "$output" = ok ]
}

@test "the agent's configured wall_timeout holds for each command; --wall-timeout overrides it" {
	run -0 sbx session start --name wall --idle-timeout 60
	run -0 sbx config set limits.wall_timeout 1
	run -124 sbx exec --session wall --json -- sleep 30
	[ "$(jq -r .result.killed_by <<<"$output")" = limit ]
	[ "$(jq -r .result.limit <<<"$output")" = wall_time ]
	[ "$(jq -r .result.limits.wall_timeout <<<"$output")" = 1 ]
	run -0 sbx exec --session wall --wall-timeout 3 --json -- sleep 1.5
	[ "$(jq -r .result.exit_code <<<"$output")" = 0 ]
	[ "$(jq -r .result.limits.wall_timeout <<<"$output")" = 3 ]
	run -0 sbx config unset limits.wall_timeout
	run -0 sbx config set --global limits.wall_timeout 1
	run -124 sbx exec --session wall --json -- sleep 30
	[ "$(jq -r .result.limit <<<"$output")" = wall_time ]
	run -0 sbx config unset --global limits.wall_timeout
	run -0 sbx exec --session wall --json -- sleep 1.2
	[ "$(jq -r .result.limits.wall_timeout <<<"$output")" = 0 ]
}
