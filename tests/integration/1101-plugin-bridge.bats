#!/usr/bin/env bats
# POST /v1/plugins on sbx-bridge (issue 17): an agent registers a recipe it
# wrote, with the restricted defaults of `sbx plugin register` (the same
# lib/service/plugin.c), under the bridge's per-agent rate limit; a person
# lists, installs and removes it like any other.
# sbx-test: unprivileged

load lib
load bridge

# The "other" service (whoami, config, events, plugins...) at 4 a minute.
BRIDGE_CONFIG='{"bridge":{"rate_limits":{"other":4}}}'
setup() { bridge_setup; }
teardown() { bridge_teardown; }

@test "POST /v1/plugins: outbound becomes none with a warning, created_by agent; a person installs and removes it" {
	body='{"name":"Agent Tool","description":"mine","permissions":{"network":"outbound","inference":true},
	  "files":{"run.sh":"#!/bin/sh\necho from-agent-tool\n"},
	  "tools":[{"id":"go","description":"d","run":"./run.sh"}]}'
	run breq a POST /v1/plugins "$body"
	echo "$output"
	[ "${output%% *}" = 201 ]
	b=${output#* }
	[ "$(json_get "$b" .id)" = agent-tool ]
	[ "$(json_get "$b" .network)" = none ]
	[ "$(json_get "$b" .created_by)" = agent ]
	[ "$(json_get "$b" .agent)" = a ]
	[[ "$(json_get "$b" '.warnings | join(" ")')" == *"network set to none"* ]]
	[ "$(jq -r .metadata.agent "$SBX_HOME/plugins/agent-tool.json")" = a ]
	[ "$(jq -r .permissions.inference "$SBX_HOME/plugins/agent-tool.json")" = false ]
	run sbx plugin list --json
	[ "$(json_get "$output" '.result.plugins[0].created_by')" = agent ]
	sbx plugin install -q --agent a agent-tool
	run sbx plugin run --json --agent a agent-tool go
	[ "$(json_get "$output" .result.stdout)" = from-agent-tool ]
	sbx plugin rm -q agent-tool
	[ ! -e "$SBX_HOME/plugins/agent-tool.json" ]
}

@test "POST /v1/plugins: a bad recipe is 400 with the field; another's id is 403 id_taken; nothing stored" {
	run breq a POST /v1/plugins '{"name":"x","description":"d","files":{"../../etc/x":"y"},"tools":[{"id":"t","description":"d","run":"true"}]}'
	echo "$output"
	[ "${output%% *}" = 400 ]
	[ "$(json_get "${output#* }" .error.code)" = traversal ]
	[ "$(json_get "${output#* }" .error.field)" = "files[../../etc/x]" ]
	run breq b POST /v1/plugins '{"name":"mine","description":"d","tools":[{"id":"t","description":"d","run":"true"}]}'
	[ "${output%% *}" = 201 ]
	run breq a POST /v1/plugins '{"name":"mine","description":"a","tools":[{"id":"t","description":"d","run":"true"}]}'
	echo "$output"
	[ "${output%% *}" = 403 ]
	[ "$(json_get "${output#* }" .error.code)" = id_taken ]
	[ "$(jq -r .metadata.agent "$SBX_HOME/plugins/mine.json")" = b ]
	[ ! -e "$SBX_HOME/plugins/x.json" ]
}

@test "POST /v1/plugins: the bridge's per-agent rate limit applies (429), the other agent is unaffected" {
	for i in 1 2 3 4; do
		run breq a POST /v1/plugins "{\"name\":\"p$i\",\"description\":\"d\",\"tools\":[{\"id\":\"t\",\"description\":\"d\",\"run\":\"true\"}]}"
		[ "${output%% *}" = 201 ]
	done
	run breq a POST /v1/plugins '{"name":"p5","description":"d","tools":[{"id":"t","description":"d","run":"true"}]}'
	echo "$output"
	[ "${output%% *}" = 429 ]
	[ ! -e "$SBX_HOME/plugins/p5.json" ]
	run breq b POST /v1/plugins '{"name":"q1","description":"d","tools":[{"id":"t","description":"d","run":"true"}]}'
	[ "${output%% *}" = 201 ]
}
