#!/usr/bin/env bats
# sbx config: the settings users edit, checked as a run checks them; the
# image binding kept out of them; revoked agents stay revoked.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	FX="$TEST_ROOT/fx"
	mkdir -p "$FX"
}

cfg() { printf '%s' "$SBX_HOME/config/agents/$1.json"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# A busybox image named bb; its digest in $D.
add_bb() {
	local r="$FX/rootfs"
	[ -x /bin/busybox ] || skip "no /bin/busybox"
	mkdir -p "$r/bin" "$r/etc" "$r/usr/share/fixture"
	cp /bin/busybox "$r/bin/busybox"
	for a in sh ls cat echo; do ln -s busybox "$r/bin/$a"; done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
	echo 'hello from the image' >"$r/usr/share/fixture/marker"
	tar -C "$r" -cf "$FX/bb.tar" .
	D=$(sha "$FX/bb.tar")
	run -0 sbx provision image add "$FX/bb.tar" --sha256 "$D" --name bb -q
}

@test "set, get, unset, add and rm round trips" {
	run -0 sbx config set --agent alice network proxy
	run -0 sbx config get --agent alice network
	[ "$output" = proxy ]
	run -0 sbx config add --agent alice allowed_domains example.org
	run -0 sbx config add --agent alice allowed_domains '*.example.org'
	run -0 sbx config add --agent alice allowed_domains example.org --json
	[ "$(json_get "$output" .result.changed)" = false ]
	run -0 sbx config get --agent alice allowed_domains
	[ "$output" = "$(printf 'example.org\n*.example.org')" ]
	run -0 sbx config rm --agent alice allowed_domains example.org
	run -0 sbx config get --agent alice allowed_domains --json
	[ "$(json_get "$output" '.result.value | join(",")')" = '*.example.org' ]
	[ "$(json_get "$output" .tool)" = config.get ]
	run -0 sbx config set --agent alice limits.memory_mib 512
	run -0 sbx config set --agent alice limits.cpus 1.5
	run -0 sbx config set --agent alice allowed_ports 443 8443
	[ "$(jq -c .limits "$(cfg alice)")" = '{"cpus":1.5,"memory_mib":512}' ]
	[ "$(jq -c .allowed_ports "$(cfg alice)")" = '[443,8443]' ]
	[ "$(jq -r .network "$(cfg alice)")" = proxy ]
	run -0 sbx config unset --agent alice limits.memory_mib
	run -0 sbx config unset --agent alice limits.cpus
	[ "$(jq -r '.limits // "gone"' "$(cfg alice)")" = gone ]
	run -1 sbx config get --agent alice limits.memory_mib --json
	[ "$(json_get "$output" .kind)" = not_found ]
	# the whole file, 0600
	run -0 sbx config show --agent alice --json
	[ "$(json_get "$output" .result.settings.network)" = proxy ]
	[ "$(stat -c %a "$(cfg alice)")" = 600 ]
	# global settings
	run -0 sbx config set --global proxy.max_connections 64
	[ "$(jq -r .proxy.max_connections "$SBX_HOME/config/sandbox.json")" = 64 ]
	run -0 sbx config get --global proxy.max_connections
	[ "$output" = 64 ]
	# what the proxy reads is what was written
	run -0 sbx proxy check --agent alice --json www.example.org:443
	[ "$(json_get "$output" .result.verdict)" = allow ]
	run sbx proxy check --agent alice --json example.org:443
	[ "$(json_get "$output" .result.verdict)" = deny ]
	# no temporaries left behind
	[ -z "$(find "$SBX_HOME/config" -name '*.tmp*')" ]
}

@test "add and rm take several values; a registry written as one string is a list of one" {
	# The form a refusal of sbx install names: every host at once.
	run -0 sbx config add allow_private_domains m1.corp.example m2.corp.example --agent alice
	run -0 sbx config add allow_private_domains m2.corp.example m3.corp.example --agent alice --json
	[ "$(json_get "$output" .result.changed)" = true ]
	[ "$(jq -c .allow_private_domains "$(cfg alice)")" = '["m1.corp.example","m2.corp.example","m3.corp.example"]' ]
	run -0 sbx config rm allow_private_domains m1.corp.example m3.corp.example --agent alice
	[ "$(jq -c .allow_private_domains "$(cfg alice)")" = '["m2.corp.example"]' ]
	run -0 sbx config add allowed_ports 4873 8080 --agent alice
	[ "$(jq -c .allowed_ports "$(cfg alice)")" = '[4873,8080]' ]
	# one bad value: nothing is written
	run -65 sbx config add allowed_ports 9000 0 --agent alice
	[ "$(jq -c .allowed_ports "$(cfg alice)")" = '[4873,8080]' ]
	run -64 sbx config add network proxy none --agent alice
	run -64 sbx config unset network proxy --agent alice
	# install.registries.npm as npm's own `registry` is written: accepted
	# as it is, and add makes it a list.
	mkdir -p "$SBX_HOME/config"
	echo '{"install":{"registries":{"npm":"https://npm.corp.example/"}}}' \
	    > "$SBX_HOME/config/sandbox.json"
	run -0 sbx config get --global install.registries.npm
	[ "$output" = https://npm.corp.example/ ]
	run -0 sbx config add --global install.registries.npm https://files.corp.example/
	[ "$(jq -c .install.registries.npm "$SBX_HOME/config/sandbox.json")" = '["https://npm.corp.example/","https://files.corp.example/"]' ]
	run -0 sbx config set --global --json-value install.registries.npm '"https://npm2.corp.example/"'
	[ "$(jq -r .install.registries.npm "$SBX_HOME/config/sandbox.json")" = https://npm2.corp.example/ ]
	run -65 sbx config set --global --json-value install.registries.npm '"ftp://npm.corp.example/"'
	[[ $output == *"must be a URL or an array"* ]]
}

@test "invalid values are refused with the reason a run gives, and nothing is written" {
	run -0 sbx config set --agent a network none
	before=$(cat "$(cfg a)")
	run -65 sbx config set --agent a limits.memory_mib -1
	[[ "$output" == *'limit `memory_mib` is out of range'* ]]
	run -65 sbx config set --agent a network bogus --json
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .reason)" = config_invalid ]
	msg=$(json_get "$output" .message)
	[[ "$msg" == *'`network` must be none, proxy or outbound'* ]]
	run -65 sbx config add --agent a allowed_domains '*.com'
	domain_msg=$output
	run -65 sbx config set --agent a allow_private yes
	[[ "$output" == *'`allow_private` must be true or false'* ]]
	[ "$(cat "$(cfg a)")" = "$before" ]
	# the same files written by hand: the run refuses them the same way
	echo '{"limits":{"memory_mib":-1}}' >"$(cfg a)"
	run -125 sbx exec --agent a -- true
	[[ "$output" == *'limit `memory_mib` is out of range'* ]]
	echo '{"network":"bogus"}' >"$(cfg a)"
	run -125 sbx exec --agent a -- true
	[[ "$output" == *'`network` must be none, proxy or outbound'* ]]
	echo '{"allowed_domains":["*.com"]}' >"$(cfg a)"
	run -125 sbx exec --agent a --network proxy -- true
	[[ "$output" == *'single-label wildcard'* ]]
	[[ "$domain_msg" == *'single-label wildcard'* ]]
}

@test "unknown keys are refused with the known ones; an invalid file is never overwritten" {
	run -65 sbx config set --agent a bogus 1 --json
	[ "$(json_get "$output" .reason)" = unknown_key ]
	[[ "$(json_get "$output" .hint)" == *allowed_domains* ]]
	run -65 sbx config set --agent a image 0000
	run -65 sbx config set --agent a proxy.max_connections 5
	[[ "$output" == *--global* ]]
	[ ! -e "$(cfg a)" ]
	mkdir -p "$SBX_HOME/config/agents"
	printf '{"network": "proxy",' >"$(cfg a)"
	run -78 sbx config set --agent a network none
	[ "$(cat "$(cfg a)")" = '{"network": "proxy",' ]
	echo '{"limits":{"bogus":1}}' >"$(cfg a)"
	run -78 sbx config set --agent a network none
	[ "$(jq -r '.network // "unset"' "$(cfg a)")" = unset ]
	run -0 sbx config keys
	[[ "$output" == *limits.memory_mib* ]]
	[[ "$output" != *proxy.max_connections* ]]
	run -0 sbx config keys --global
	[[ "$output" == *proxy.max_connections* ]]
	run -64 sbx config
	run -64 sbx config frob x
	run -64 sbx config set --agent a --global network none
}

@test "a symlink planted as config/agents is refused, its target untouched" {
	run -0 sbx provision -q
	mkdir -p "$FX/elsewhere"
	rm -rf "$SBX_HOME/config/agents"
	ln -s "$FX/elsewhere" "$SBX_HOME/config/agents"
	run sbx config set --agent a network none
	[ "$status" -ne 0 ]
	[ -z "$(ls -A "$FX/elsewhere")" ]
}

@test "writing the config does not unbind the image; status shows it" {
	add_bb
	run -0 sbx provision --agent img --image bb -q
	# as the README's Network section once said: the whole file rewritten
	echo '{"network": "none", "allowed_domains": ["example.org"]}' >"$(cfg img)"
	run -0 --separate-stderr sbx exec --agent img -- cat /usr/share/fixture/marker
	[ "$output" = "hello from the image" ]
	# and through sbx config
	run -0 sbx config set --agent img network proxy
	run -0 sbx config set --agent img network none
	run -0 sbx config add --agent img allowed_domains example.org
	run -0 --separate-stderr sbx exec --agent img -- cat /usr/share/fixture/marker
	[ "$output" = "hello from the image" ]
	run -0 sbx status --agent img --json
	[ "$(json_get "$output" .result.settings.image.digest)" = "$D" ]
	[ "$(json_get "$output" .result.settings.image.name)" = bb ]
	[ "$(json_get "$output" .result.settings.network)" = none ]
	[ "$(json_get "$output" .result.settings.allowed_domains)" = 1 ]
	[ "$(json_get "$output" .result.settings.env)" = false ]
	run -0 sbx status --agent img
	[[ "$output" == *"image          bb (${D:0:12})"* ]]
}

@test "an old config's image binding is honoured, and provision moves it into the record" {
	add_bb
	run -0 sbx provision --agent old -q
	echo "{\"image\": \"$D\", \"network\": \"none\"}" >"$(cfg old)"
	run -0 --separate-stderr sbx exec --agent old -- cat /usr/share/fixture/marker
	[ "$output" = "hello from the image" ]
	run -0 sbx provision --agent old -q
	[ "$(jq -r .digest "$SBX_HOME/agents/old/image.json")" = "$D" ]
	[ "$(jq -r '.image // "unset"' "$(cfg old)")" = unset ]
	[ "$(jq -r .network "$(cfg old)")" = none ]
	run -0 --separate-stderr sbx exec --agent old -- cat /usr/share/fixture/marker
	[ "$output" = "hello from the image" ]
	# an image key written later does not override the record
	run -65 sbx config set --agent old image "$D"
}

@test "a missing bound image is a finding of status (exit 1, with the repair)" {
	add_bb
	run -0 sbx provision --agent img --image bb -q
	run -0 sbx status --agent img
	run -0 sbx provision image rm "$D" --force -q
	run -1 sbx status --agent img
	[[ "$output" == *MISSING* ]]
	[[ "$output" == *"image add"* ]]
	run -1 sbx status --agent img --json
	[ "$(json_get "$output" .result.ready)" = false ]
	[ "$(json_get "$output" .result.settings.image.present)" = false ]
	[ "$(json_get "$output" '.result.problems[] | select(.state == "image_missing") | .path')" = "images/$D" ]
}

@test "an unprovisioned agent stays revoked for every run until provision" {
	run -0 sbx provision --agent r -q
	echo '{"network": "proxy", "allowed_domains": ["example.org"]}' >"$(cfg r)"
	run -0 sbx provision unprovision --agent r -q
	[ ! -e "$SBX_HOME/run/tokens/r" ]
	run -77 sbx exec --agent r --json -- true
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = agent_unprovisioned ]
	[[ "$(json_get "$output" .hint)" == *"sbx provision --agent r"* ]]
	# the proxy run that used to re-provision it mints no token
	run -125 sbx exec --agent r --network proxy -- true
	[ ! -e "$SBX_HOME/run/tokens/r" ]
	run -125 sbx exec --agent r --network none -- true
	run -1 sbx status --agent r --json
	[ "$(json_get "$output" .result.settings.unprovisioned)" = true ]
	# provision restores it, and says so: a restore, not a repair of
	# agents/r/unprovisioned (issue 28 item 9)
	run -0 --separate-stderr sbx provision --agent r
	[[ "$output" == *"agent r restored"* ]]
	[[ "$output" != *unprovisioned* || "$output" == *"had been unprovisioned"* ]]
	[[ "$output" != *"repaired  agents/r/unprovisioned"* ]]
	[ -e "$SBX_HOME/run/tokens/r" ]
	[ ! -e "$SBX_HOME/agents/r/unprovisioned" ]
	run -0 --separate-stderr sbx exec --agent r --network none -- echo ok
	[ "$output" = ok ]
	# other agents were never affected
	run -0 --separate-stderr sbx exec --agent other -- echo ok
}

@test "sbx config keys: each key with its type and meaning; -q the keys alone" {
	# issue 28 item 9: a hundred bare keys said nothing of what to set.
	run -0 --separate-stderr sbx config keys
	line=$(printf '%s\n' "$output" | grep '^limits.memory_mib ')
	[[ "$line" == *" integer "* ]]
	[[ "$line" == *"memory limit"* ]]
	# Every line has a type and a meaning after the key.
	while read -r key type doc; do
		[ -n "$type" ] && [ -n "$doc" ] || { echo "bare: $key"; return 1; }
	done <<<"$output"
	run -0 --separate-stderr sbx config keys -q
	[ "$(printf '%s\n' "$output" | grep -c ' ')" -eq 0 ]
	[[ "$output" == *limits.memory_mib* ]]
	run -0 --separate-stderr sbx config keys -v --global
	[[ "$(printf '%s\n' "$output" | grep '^limits.cpus ')" == *agent,global* ]]
	# The completions still get the keys alone.
	run -0 sbx --complete keys
	[ "$output" = "$(sbx config keys -q)" ]
}
