#!/usr/bin/env bats
# sbx preflight: the typed readiness report (IP-05, IP-07, IP-08, IP-09).
# sbx-test: unprivileged
#
# Host settings come from a mock directory (SBX_PREFLIGHT_SYSCTL_DIR) with
# safe values, so that what this machine's /proc/sys says (here:
# dev.tty.legacy_tiocsti=1, fs.protected_symlinks=0) does not decide the
# tests; each test changes only what it is about.
#
# Without a writable cgroup (an unprivileged user here) preflight reports
# cgroup_unavailable as info and the report's limits as soft: every run
# works with rlimits, so the machine is ready (with that warning in the
# envelope), unless the agent's config asks for a limit (needs_setup).

load lib
bats_require_minimum_version 1.5.0

GOLDEN="$BATS_TEST_DIRNAME/golden/preflight-shape.json"

# sysctl NAME VALUE: set a mocked host setting.
sysctl() {
	local f="$SYSCTL/${1//.//}"
	mkdir -p "${f%/*}"
	printf '%s\n' "$2" >"$f"
}

setup() {
	sbx_setup
	SYSCTL="$TEST_ROOT/sysctl"
	export SBX_PREFLIGHT_SYSCTL_DIR="$SYSCTL"
	sysctl kernel.osrelease 6.1.0-test
	sysctl dev.tty.legacy_tiocsti 0
	sysctl kernel.unprivileged_bpf_disabled 2
	sysctl vm.unprivileged_userfaultfd 0
	sysctl kernel.perf_event_paranoid 2
	sysctl fs.protected_symlinks 1
	sysctl fs.protected_hardlinks 1
	sysctl kernel.yama.ptrace_scope 1
	sysctl user.max_user_namespaces 16384
	unset NO_COLOR
}

# The state root of DESIGN.md §3, by sbx provision when it is built, else
# by hand with the modes provision gives.
provision() {
	if [ -x "$SBX_TEST_BUILD/libexec/sbx/sbx-provision" ]; then
		sbx provision -q "$@"
		return
	fi
	local reach=700 ruid
	ruid=$(id -u)
	if is_root; then
		reach=711
		ruid=65534
	fi
	install -d -m "$reach" "$SBX_HOME" "$SBX_HOME/workspace" \
	    "$SBX_HOME/workspace/agents" "$SBX_HOME/output"
	install -d -m 700 "$SBX_HOME"/{config,config/agents,workspace/shared,images,envs,agents,agents/default,plugins,cache}
	install -d -m 711 "$SBX_HOME/run"
	install -d -m 700 "$SBX_HOME/run/tokens"
	install -d -m 700 -o "$ruid" "$SBX_HOME/workspace/agents/default" \
	    "$SBX_HOME/output/default"
	printf '{}' >"$SBX_HOME/config/agents/default.json"
	chmod 600 "$SBX_HOME/config/agents/default.json"
	head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' |
	    head -c 43 >"$SBX_HOME/run/tokens/default"
	chmod 600 "$SBX_HOME/run/tokens/default"
}

# finding JSON ID: the finding with that id, compact.
finding() { printf '%s' "$1" | jq -c --arg id "$2" '.result.findings[] | select(.id == $id)'; }
# field JSON ID KEY: one key of that finding.
field() { printf '%s' "$1" | jq -r --arg id "$2" --arg k "$3" '.result.findings[] | select(.id == $id) | .[$k]'; }
# The findings that are neither ok nor info, as "id code" lines.  A build
# that is not owned by root (a developer's checkout) is rightly reported
# (IP-05); the suite's own runs use a root-owned build.
problems() {
	printf '%s' "$1" | jq -r '.result.findings[] |
	    select(.severity != "ok" and .severity != "info") | "\(.id) \(.code)"' |
	    if [ "$(stat -c %u "$SBX_TEST_BUILD/libexec/sbx/sbx-preflight")" != 0 ]; then
		grep -v '^installation.ownership install_insecure$'
	    else
		cat
	    fi
}
readiness() { json_get "$1" .result.overall_readiness; }

# Ready, with a cgroup or without one (soft limits: ready all the same).
assert_ready_but_cgroup() {
	[ -z "$(problems "$output")" ]
	[ "$status" -eq 0 ]
	[ "$(readiness "$output")" = ready ]
}

@test "a fresh machine: needs_setup, repaired by sbx provision, nothing created" {
	# The throw-away probe roots: in TMPDIR when not root (a private one
	# here), else in /tmp, where only our uid's count (the unprivileged
	# pass runs beside the root pass, and both run preflight).
	mkdir -p "$TEST_ROOT/tmp"
	export TMPDIR="$TEST_ROOT/tmp"
	n_tmp=$(find /tmp -maxdepth 1 -name 'sbx-preflight.*' -user "$(id -u)" \
	    2>/dev/null | wc -l)
	run -1 sbx preflight --json
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .tool)" = preflight ]
	[ "$(readiness "$output")" = needs_setup ]
	[ "$(field "$output" state_root.root code)" = location_missing ]
	[ "$(field "$output" state_root.root severity)" = warning ]
	[[ "$(field "$output" state_root.root repair_suggestion)" == *"sbx provision"* ]]
	[ "$(json_get "$output" '.result.locations[] | select(.id == "root") | .status')" = missing ]
	[ "$(json_get "$output" .result.configuration.source)" = missing_using_defaults ]
	[ "$(json_get "$output" .result.root.source)" = environment_override ]
	# Never blocked for want of provisioning; the probe still proves the
	# machine (in a throw-away root).
	[ "$(field "$output" capability.sandbox code)" = sandbox_ok ]
	[ "$(field "$output" capability.seccomp code)" = seccomp_ok ]
	# Preflight changes nothing: no root, no leftover probe root.
	[ ! -e "$SBX_HOME" ]
	[ "$(find /tmp -maxdepth 1 -name 'sbx-preflight.*' -user "$(id -u)" \
	    2>/dev/null | wc -l)" -eq "$n_tmp" ]
	[ -z "$(ls -A "$TEST_ROOT/tmp")" ]
	run -1 sbx preflight
	[[ "$output" == *"[warning/missing] location_missing: the state root does not exist"* ]]
	[[ "$output" == *"repair: sbx provision"* ]]
	[ "${lines[0]}" = "sbx preflight: needs_setup" ]
}

@test "after sbx provision: ready (or only the cgroup warning)" {
	provision
	run sbx preflight --json
	assert_ready_but_cgroup
	[ "$(json_get "$output" '[.result.locations[] | select(.kind != "socket" and .id != "sandbox_json") | .status] | unique | join(",")')" = ready ]
	[ "$(json_get "$output" '[.result.locations[] | select(.kind == "socket") | .status] | unique | join(",")')" = missing ]
	[ "$(field "$output" daemon.proxy severity)" = info ]
	for c in sandbox user_namespaces seccomp read_only_system \
	    network_isolation no_new_privs capabilities_dropped; do
		[ "$(json_get "$output" ".result.capabilities[] | select(.id == \"$c\") | .status")" = passed ]
	done
	[[ "$(field "$output" capability.sandbox detail)" == *"in the state root"* ]]
	[ "$(json_get "$output" '.result.dependencies[0].name')" = bubblewrap ]
	[ "$(json_get "$output" '.result.dependencies[0].minimum')" = 0.4.1 ]
	[ "$(json_get "$output" '.result.dependencies[0].status')" = passed ]
	[ "$(json_get "$output" '.result.locations[] | select(.id == "root") | .writable')" = true ]
	[ "$(json_get "$output" '.result.locations[] | select(.id == "root") | .volume_free_bytes > 0')" = true ]
	[ "$(json_get "$output" .result.schema_version)" = 1 ]
	[[ "$(json_get "$output" .result.generated_at)" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]]
}

@test "text and JSON agree: readiness, exit status, every finding" {
	provision
	chmod 755 "$SBX_HOME/config"
	run sbx preflight --json
	js=$status
	json=$output
	problems "$json"	# shown when the test fails
	run sbx preflight
	printf '%s\n' "$output" | grep -A3 '^  \[\(warning\|blocked\)' || true
	[ "$status" -eq "$js" ]
	[ "${lines[0]}" = "sbx preflight: $(readiness "$json")" ]
	while IFS= read -r l; do
		[[ "$output" == *"$l"* ]] || { echo "missing: $l"; false; }
	done < <(printf '%s' "$json" | jq -r '.result.findings[] |
	    # free space moves between two runs
	    # info is said as info: its status is in the JSON only
	    (if .severity == "info" then "[info]" else "[\(.severity)/\(.status)]" end) as $tag |
	    if (.code | startswith("disk_space")) then "  \($tag) \(.code): "
	    else "  \($tag) \(.code): \(.title)" end')
	[ "$(printf '%s' "$json" | jq '.result.findings | length')" -eq \
	    "$(printf '%s\n' "$output" | grep -c '^  \[')" ]
	# -q: only what did not pass
	run sbx preflight -q
	printf '%s\n' "$output"
	[ "$status" -eq "$js" ]
	[[ "$output" != *"[ok/passed]"* ]]
	[[ "$output" == *"[warning/failed] location_insecure_mode: config/ has mode 0755"* ]]
	# not a terminal: no colour
	[[ "$output" != *$'\e'* ]]
}

@test "colour on a terminal only, and never with NO_COLOR" {
	command -v script >/dev/null || skip "script(1) is not installed"
	provision
	run script -qec "$SBX preflight" /dev/null
	[[ "$output" == *$'\e['*'[ok/passed]'* ]]
	NO_COLOR=1 run script -qec "$SBX preflight" /dev/null
	[[ "$output" != *$'\e['* ]]
}

@test "the root is a regular file: blocked location_wrong_type" {
	mkdir -p "${SBX_HOME%/*}"
	echo data >"$SBX_HOME"
	run -3 sbx preflight --json
	[ "$(readiness "$output")" = blocked ]
	[ "$(field "$output" state_root.root code)" = location_wrong_type ]
	[ "$(field "$output" state_root.root severity)" = blocked ]
	[ "$(json_get "$output" '.result.locations[] | select(.id == "root") | .status')" = wrong_type ]
	[ "$(cat "$SBX_HOME")" = data ]
	run -3 sbx preflight
	[[ "$output" == *"[blocked/failed] location_wrong_type: the state root is a regular file"* ]]
}

@test "an unwritable root: blocked location_not_writable" {
	is_root && skip "root writes anywhere: run as an unprivileged user"
	provision
	chmod 500 "$SBX_HOME"
	run -3 sbx preflight --json
	[ "$(field "$output" state_root.root code)" = location_not_writable ]
	[ "$(field "$output" state_root.root severity)" = blocked ]
	[ "$(json_get "$output" '.result.locations[] | select(.id == "root") | .writable')" = false ]
	[ -z "$(find "$SBX_HOME" -maxdepth 1 -name '.sbx-preflight*')" ]
}

@test "run/ with mode 0777: insecure_mode" {
	provision
	chmod 777 "$SBX_HOME/run"
	run -3 sbx preflight --json
	[ "$(json_get "$output" '.result.locations[] | select(.id == "run") | .status')" = insecure_mode ]
	[ "$(field "$output" state_root.run code)" = location_insecure_mode ]
	[ "$(field "$output" state_root.run severity)" = blocked ]
	[[ "$(field "$output" state_root.run repair_suggestion)" == "chmod 711 $SBX_HOME/run" ]]
	# a token readable by others is as bad
	chmod 711 "$SBX_HOME/run"
	chmod 644 "$SBX_HOME/run/tokens/default"
	run -3 sbx preflight --json
	[ "$(field "$output" state_root.agent_token code)" = location_insecure_mode ]
}

@test "a symlink planted in the root is reported, never followed" {
	provision
	rm -rf "$SBX_HOME/plugins"
	mkdir "$TEST_ROOT/elsewhere"
	ln -s "$TEST_ROOT/elsewhere" "$SBX_HOME/plugins"
	run -3 sbx preflight --json
	[ "$(field "$output" state_root.plugins code)" = location_wrong_type ]
	[[ "$(field "$output" state_root.plugins detail)" == *"symbolic link to $TEST_ROOT/elsewhere"* ]]
	[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ]
}

@test "an empty token file: location_empty_file" {
	provision
	: >"$SBX_HOME/run/tokens/default"
	run sbx preflight --json
	[ "$(field "$output" state_root.agent_token code)" = location_empty_file ]
	[ "$(json_get "$output" '.result.locations[] | select(.id == "agent_token") | .status')" = empty_file ]
}

@test "invalid sandbox.json: warning config_invalid with the parser's message" {
	provision
	printf '{"limits": [1,' >"$SBX_HOME/config/sandbox.json"
	run sbx preflight --json
	[ "$status" -eq 1 ]
	[ "$(json_get "$output" .result.configuration.source)" = invalid_using_defaults ]
	err=$(json_get "$output" .result.configuration.error)
	[[ "$err" == *"malformed JSON at line 1"* ]]
	[ "$(field "$output" configuration.sandbox_json code)" = config_invalid ]
	[ "$(field "$output" configuration.sandbox_json severity)" = warning ]
	[ "$(field "$output" configuration.sandbox_json detail)" = "$err" ]
	# The machine is still proven, in a throw-away root.
	[ "$(field "$output" capability.sandbox code)" = sandbox_ok ]
	# Valid JSON that sbx exec would refuse is invalid too.
	printf '{"limits": {"bogus": 1}}' >"$SBX_HOME/config/sandbox.json"
	run sbx preflight --json
	[[ "$(json_get "$output" .result.configuration.error)" == *"unknown limit"* ]]
	run sbx preflight
	[[ "$output" == *"[warning/failed] config_invalid: config/sandbox.json is invalid"* ]]
	[[ "$output" == *"detail: config/sandbox.json: unknown limit"* ]]
}

@test "a free-space floor above the volume: blocked disk_space_low" {
	provision
	printf '{"preflight": {"min_free_bytes": 4611686018427387904}}' \
	    >"$SBX_HOME/config/sandbox.json"
	run -3 sbx preflight --json
	[ "$(json_get "$output" .result.configuration.source)" = loaded ]
	[ "$(field "$output" state_root.free_space code)" = disk_space_low ]
	printf '{"preflight": {"min_free_bytes": 0}}' >"$SBX_HOME/config/sandbox.json"
	run sbx preflight --json
	[ "$(field "$output" state_root.free_space code)" = disk_space_ok ]
}

@test "SBX_BWRAP=/nonexistent: bubblewrap missing, blocked, nothing passed" {
	provision
	SBX_BWRAP=/nonexistent run -3 sbx preflight --json
	[ "$(field "$output" dependency.bubblewrap code)" = dependency_missing ]
	[ "$(field "$output" dependency.bubblewrap severity)" = blocked ]
	[ "$(json_get "$output" '.result.dependencies[0].status')" = missing ]
	[ "$(json_get "$output" '.result.dependencies[0].path')" = null ]
	# what could not be tried is unproven, never passed
	[ "$(json_get "$output" '[.result.capabilities[] | select(.id != "cgroup_limits") | .status] | unique | join(",")')" = unproven ]
	[ "$(json_get "$output" '[.result.findings[] | select(.id | startswith("capability.")) | select(.id != "capability.cgroup_limits") | .status] | unique | join(",")')" = unproven ]
}

# Every host setting below is neutralised inside sbx's sandboxes (their own
# session, pid namespace and private /tmp; the filter denies TIOCSTI, bpf,
# userfaultfd, perf_event_open, ptrace): once the live probe proves the
# filter holds, each is info with its repair, and the machine stays ready.
@test "mocked host settings that sbx neutralises: info with a remediation each, ready" {
	provision
	sysctl dev.tty.legacy_tiocsti 1
	sysctl kernel.unprivileged_bpf_disabled 0
	sysctl vm.unprivileged_userfaultfd 1
	sysctl kernel.perf_event_paranoid 1
	sysctl fs.protected_symlinks 0
	sysctl fs.protected_hardlinks 0
	sysctl kernel.yama.ptrace_scope 0
	run sbx preflight --json
	assert_ready_but_cgroup
	[ "$(field "$output" capability.seccomp code)" = seccomp_ok ]
	for pair in dev.tty.legacy_tiocsti:tiocsti_enabled \
	    kernel.unprivileged_bpf_disabled:unprivileged_bpf_enabled \
	    vm.unprivileged_userfaultfd:unprivileged_userfaultfd_enabled \
	    kernel.perf_event_paranoid:perf_events_unrestricted \
	    fs.protected_symlinks:protected_symlinks_disabled \
	    fs.protected_hardlinks:protected_hardlinks_disabled \
	    kernel.yama.ptrace_scope:ptrace_unrestricted; do
		id=host.${pair%%:*}
		[ "$(field "$output" "$id" code)" = "${pair#*:}" ]
		[ "$(field "$output" "$id" severity)" = info ]
		[ -n "$(field "$output" "$id" neutralised_by)" ]
		[[ "$(field "$output" "$id" repair_suggestion)" == "sysctl -w ${pair%%:*}="* ]]
	done
	# --fail-on warning is the default: the same, said explicitly.
	run sbx preflight --json --fail-on warning
	assert_ready_but_cgroup
	# An absent setting is reported, not passed.
	rm "$SYSCTL/kernel/yama/ptrace_scope"
	run sbx preflight --json
	[ "$(field "$output" host.kernel.yama.ptrace_scope code)" = host_setting_unavailable ]
	[ "$(field "$output" host.kernel.yama.ptrace_scope status)" = missing ]
}

@test "a kernel older than 4.8: blocked kernel_too_old" {
	provision
	sysctl kernel.osrelease 4.4.0-210-generic
	run -3 sbx preflight --json
	[ "$(field "$output" host.kernel code)" = kernel_too_old ]
	[ "$(json_get "$output" .result.host.kernel)" = 4.4.0-210-generic ]
}

# A bwrap that cannot create namespaces, as on a locked-down kernel.
fake_bwrap() {
	cat >"$TEST_ROOT/bwrap" <<-EOF
	#!/bin/sh
	case "\$1" in
	--version) echo "bubblewrap ${1:-0.8.0}"; exit 0 ;;
	--help) echo "usage: bwrap [OPTIONS...] [--] COMMAND"; exit 0 ;;
	esac
	echo "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2
	exit 1
	EOF
	chmod 755 "$TEST_ROOT/bwrap"
	export SBX_BWRAP="$TEST_ROOT/bwrap"
}

@test "user namespaces unavailable: userns_unavailable with the exact cause" {
	provision
	fake_bwrap
	sysctl user.max_user_namespaces 0
	run -3 sbx preflight --json
	[ "$(field "$output" capability.sandbox code)" = sandbox_failed ]
	[ "$(field "$output" capability.user_namespaces code)" = userns_unavailable ]
	[[ "$(field "$output" capability.user_namespaces detail)" == "user.max_user_namespaces is 0"* ]]
	[[ "$(field "$output" capability.user_namespaces repair_suggestion)" == *"user.max_user_namespaces="* ]]
	[ "$(field "$output" capability.seccomp status)" = unproven ]

	sysctl user.max_user_namespaces 16384
	sysctl kernel.unprivileged_userns_clone 0
	run -3 sbx preflight --json
	[[ "$(field "$output" capability.user_namespaces detail)" == "kernel.unprivileged_userns_clone is 0"* ]]
	[[ "$(field "$output" capability.user_namespaces repair_suggestion)" == *"unprivileged_userns_clone=1"* ]]

	sysctl kernel.unprivileged_userns_clone 1
	sysctl kernel.apparmor_restrict_unprivileged_userns 1
	run -3 sbx preflight --json
	[[ "$(field "$output" capability.user_namespaces detail)" == "kernel.apparmor_restrict_unprivileged_userns is 1"* ]]
	[[ "$(field "$output" capability.user_namespaces repair_suggestion)" == *"apparmor"* ]]
}

@test "setuid bubblewrap: 0.11.1 is a warning, before 0.4.1 blocked (IP-08)" {
	is_root || skip "making a root-owned setuid file needs root"
	provision
	fake_bwrap 0.11.1
	chmod 4755 "$TEST_ROOT/bwrap"
	run -3 sbx preflight --json
	[ "$(json_get "$output" '.result.dependencies[0].setuid')" = true ]
	[ "$(json_get "$output" '.result.dependencies[0].version')" = 0.11.1 ]
	[ "$(field "$output" dependency.bubblewrap.setuid code)" = bwrap_setuid_vulnerable ]
	[ "$(field "$output" dependency.bubblewrap.setuid severity)" = warning ]
	fake_bwrap 0.4.0
	chmod 4755 "$TEST_ROOT/bwrap"
	run -3 sbx preflight --json
	[ "$(field "$output" dependency.bubblewrap code)" = dependency_too_old ]
	[[ "$(field "$output" dependency.bubblewrap detail)" == *CVE-2020-5291* ]]
}

@test "IP-05: a bwrap others can write is blocked, a user's own a warning" {
	provision
	fake_bwrap
	chmod 777 "$TEST_ROOT/bwrap"
	run -3 sbx preflight --json
	[ "$(field "$output" dependency.bubblewrap code)" = dependency_untrusted ]
	[ "$(field "$output" dependency.bubblewrap severity)" = blocked ]
	chmod 755 "$TEST_ROOT/bwrap"
	is_root && chown 65534 "$TEST_ROOT/bwrap"
	run -3 sbx preflight --json
	[ "$(field "$output" dependency.bubblewrap code)" = dependency_untrusted ]
	[ "$(field "$output" dependency.bubblewrap severity)" = warning ]
}

@test "IP-05: sbx's programs under a user-owned prefix are a warning" {
	provision
	cp -R "$SBX_TEST_BUILD/libexec/sbx" "$TEST_ROOT/prefix"
	is_root && chown -R 65534 "$TEST_ROOT/prefix"
	SBX_EXEC_PATH="$TEST_ROOT/prefix" run "$TEST_ROOT/prefix/sbx-preflight" --json
	[ "$(field "$output" installation.ownership code)" = install_insecure ]
	[ "$(field "$output" installation.ownership severity)" = warning ]
	[[ "$(field "$output" installation.ownership detail)" == *"owned by uid 65534"* ]]
	[ "$status" -ge 1 ]
	# a missing sbx-init cannot start a sandbox
	rm "$TEST_ROOT/prefix/sbx-init"
	SBX_EXEC_PATH="$TEST_ROOT/prefix" run -3 "$TEST_ROOT/prefix/sbx-preflight" --json
	[ "$(field "$output" installation.programs code)" = install_incomplete ]
	[ "$(field "$output" capability.sandbox status)" = unproven ]
}

@test "--junit writes JUnit XML that validates, one testcase per finding" {
	command -v xmllint >/dev/null || skip "xmllint is not installed"
	provision
	chmod 777 "$SBX_HOME/run"
	printf '{"limits": ' >"$SBX_HOME/config/sandbox.json"
	SBX_BWRAP=/nonexistent run -3 sbx preflight --json --junit "$TEST_ROOT/junit.xml"
	xmllint --noout "$TEST_ROOT/junit.xml"
	n=$(printf '%s' "$output" | jq '.result.findings | length')
	fails=$(printf '%s' "$output" | jq '[.result.findings[] | select(.status != "unproven" and (.severity == "blocked" or .severity == "warning"))] | length')
	skips=$(printf '%s' "$output" | jq '[.result.findings[] | select(.status == "unproven")] | length')
	[ "$(xmllint --xpath 'count(//testcase)' "$TEST_ROOT/junit.xml")" -eq "$n" ]
	[ "$(xmllint --xpath 'count(//testcase/failure)' "$TEST_ROOT/junit.xml")" -eq "$fails" ]
	[ "$(xmllint --xpath 'count(//testcase/skipped)' "$TEST_ROOT/junit.xml")" -eq "$skips" ]
	[ "$skips" -gt 0 ]
	[ "$(xmllint --xpath 'string(/testsuites/@failures)' "$TEST_ROOT/junit.xml")" -eq "$fails" ]
	[ "$(xmllint --xpath 'string(//property[@name="overall_readiness"]/@value)' "$TEST_ROOT/junit.xml")" = blocked ]
}

@test "--output writes the same report, atomically" {
	provision
	mkdir "$TEST_ROOT/out"
	run sbx preflight --json --output "$TEST_ROOT/out/report.json"
	[ "$(printf '%s' "$output" | jq -S .result)" = "$(jq -S . "$TEST_ROOT/out/report.json")" ]
	# nothing else is left in the directory (no temp file)
	[ "$(ls -A "$TEST_ROOT/out")" = report.json ]
	# text mode writes it too; a symlink there is replaced, not followed
	echo keep >"$TEST_ROOT/target"
	ln -sf "$TEST_ROOT/target" "$TEST_ROOT/out/report.json"
	run sbx preflight --pretty --output "$TEST_ROOT/out/report.json"
	[ ! -L "$TEST_ROOT/out/report.json" ]
	[ "$(cat "$TEST_ROOT/target")" = keep ]
	jq -e .overall_readiness "$TEST_ROOT/out/report.json"
	[ "$(printf '%s' "$output" | jq -S .result)" = "$(jq -S . "$TEST_ROOT/out/report.json")" ]
	[ "$(sed -n 2p "$TEST_ROOT/out/report.json")" = '  "capabilities": [' ]
	# an unwritable destination: exit 73 (cannot create an output file)
	run -73 sbx preflight --json --output "$TEST_ROOT/no/such/dir/r.json"
	[ "$(json_get "$output" .ok)" = false ]
}

@test "IP-09: hostile names and error text cannot forge JSON keys or lines" {
	provision
	bad=$'\n"ready": true,\e[2K\rREADY \\ "'
	mkdir "$SBX_HOME/images/$bad"
	touch "$SBX_HOME/plugins/$bad"
	printf '{"limits": {"%s": 1}}' '\u001b[2K\n\"ready\": true,' \
	    >"$SBX_HOME/config/sandbox.json"
	run sbx preflight --json --junit "$TEST_ROOT/j.xml"
	printf '%s' "$output" | jq -e . >/dev/null
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
	[ "$(json_get "$output" '.result | has("ready")')" = false ]
	[ "$(json_get "$output" '.result.findings[] | select(.code == "image_unexpected_entry") | .path')" = "$SBX_HOME/images/$bad" ]
	[[ "$(json_get "$output" .result.configuration.error)" == *$'\e[2K\n"ready": true,'* ]]
	if command -v xmllint >/dev/null; then
		xmllint --noout "$TEST_ROOT/j.xml"
	fi
	run sbx preflight
	[[ "$output" != *$'\e'* ]]
	[[ "$output" != *$'\r'* ]]
	! printf '%s\n' "$output" | grep -Eq '^("ready"|READY)'
	[[ "$output" == *'\x0a"ready": true,\x1b[2K\x0dREADY \\ "'* ]]
	# A hostile state root path too (control characters are refused by
	# the path grammar; quotes, backslashes and C1 bytes are not).
	export SBX_HOME="$TEST_ROOT/s\"ready\": true,\\"$'\xc2\x9b'"2K"
	run -1 sbx preflight --json
	printf '%s' "$output" | jq -e . >/dev/null
	[ "$(json_get "$output" .result.root.path)" = "$SBX_HOME" ]
	run -1 sbx preflight
	[[ "$output" != *$'\xc2\x9b'* ]]
	[[ "$output" == *'\xc2\x9b2K'* ]]
	export SBX_HOME="$TEST_ROOT/bad"$'\e'"x"
	run -65 sbx preflight --json
	[ "$(json_get "$output" .reason)" = control_character ]
}

@test "--agent checks that agent's home, output and token" {
	provision
	run sbx preflight --json --agent other
	[ "$status" -eq 1 ]
	[ "$(field "$output" state_root.agent_home code)" = location_missing ]
	[ "$(json_get "$output" '.result.locations[] | select(.id == "agent_home") | .path')" = "$SBX_HOME/workspace/agents/other" ]
	[[ "$(field "$output" state_root.agent_home repair_suggestion)" == "sbx provision --agent other" ]]
	run -65 sbx preflight --agent 'Bad/Name'
	run -65 sbx preflight --json --agent ../x
	[ "$(json_get "$output" .kind)" = invalid_args ]
}

@test "--home: the flag wins and is repeated in the repairs" {
	run -1 sbx preflight --json --home "$TEST_ROOT/other"
	[ "$(json_get "$output" .result.root.path)" = "$TEST_ROOT/other" ]
	[ "$(json_get "$output" .result.root.source)" = flag_override ]
	[ "$(field "$output" state_root.root repair_suggestion)" = "sbx provision --home $TEST_ROOT/other" ]
}

@test "usage: --help, --version, bad options" {
	run -0 sbx preflight --help
	[[ "${lines[0]}" == "usage: sbx preflight [--home DIR] [--agent A] [--json] [--pretty]" ]]
	run -0 sbx preflight --version
	[[ "$output" == "sbx-preflight "* ]]
	run -64 sbx preflight --no-such-option
	run -64 sbx preflight extra-argument
}

# The JSON shape, with what varies between machines and runs normalised.
shape() {
	jq -S '{
	  keys: keys,
	  schema_version,
	  root: (.root | keys),
	  configuration: (.configuration | keys),
	  host: (.host | with_entries(.value |= type)),
	  dependencies: [.dependencies[] | {name, minimum, keys: keys}],
	  capabilities: [.capabilities[] | {id, keys: keys}],
	  locations: [.locations[] | {id, kind, status, exists, keys: keys}],
	  findings: [.findings[]
	    | if .id == "capability.cgroup_limits" or .id == "installation.ownership"
	      then .code = "*" | .severity = "*" | .status = "*" else . end
	    | {id, code, severity, status, keys: keys}]
	}'
}

@test "golden: the JSON shape of a provisioned root" {
	provision
	run sbx preflight --json
	got=$(printf '%s' "$output" | jq .result | shape)
	if [ -n "${SBX_UPDATE_GOLDEN:-}" ]; then
		printf '%s\n' "$got" >"$GOLDEN"
	fi
	[ -f "$GOLDEN" ]
	diff -u "$GOLDEN" <(printf '%s\n' "$got")
}

@test "--deep walks each template against its manifest: a changed file blocks" {
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	mkdir -p "$TEST_ROOT/r/bin"
	cp /bin/busybox "$TEST_ROOT/r/bin/"
	ln -s busybox "$TEST_ROOT/r/bin/sh"
	tar -C "$TEST_ROOT/r" -cf "$TEST_ROOT/i.tar" .
	d=$(sha256sum "$TEST_ROOT/i.tar" | cut -d' ' -f1)
	run -0 sbx provision -q
	run -0 sbx provision image add "$TEST_ROOT/i.tar" --sha256 "$d" -q
	run sbx preflight --deep --json
	[ "$(json_get "$output" '[.result.findings[] | select(.code == "image_verified")] | length')" = 1 ]
	chmod u+w "$SBX_HOME/images/$d/rootfs/bin" "$SBX_HOME/images/$d/rootfs/bin/busybox"
	echo tampered >> "$SBX_HOME/images/$d/rootfs/bin/busybox"
	run -3 sbx preflight --deep --json
	[ "$(json_get "$output" '.result.overall_readiness')" = blocked ]
	[ "$(json_get "$output" '[.result.findings[] | select(.code == "image_damaged")] | length')" = 1 ]
}

@test "host settings stay warnings when the probe cannot prove the filter" {
	provision
	fake_bwrap
	sysctl dev.tty.legacy_tiocsti 1
	sysctl fs.protected_symlinks 0
	run sbx preflight --json
	[ "$(field "$output" host.dev.tty.legacy_tiocsti severity)" = warning ]
	[ "$(field "$output" host.dev.tty.legacy_tiocsti neutralised_by)" = null ]
	[ "$(field "$output" host.fs.protected_symlinks severity)" = warning ]
}

@test "--fail-on: a pipeline chooses the readiness that fails it" {
	# Not provisioned: needs_setup (exit 1) by default.
	run -1 sbx preflight --json
	[ "$(readiness "$output")" = needs_setup ]
	run -0 sbx preflight --json --fail-on unproven
	[ "$(readiness "$output")" = needs_setup ]
	run -0 sbx preflight --json --fail-on blocked
	# blocked still fails with --fail-on blocked
	provision
	fake_bwrap
	sysctl user.max_user_namespaces 0
	run -3 sbx preflight --json --fail-on blocked
	[ "$(readiness "$output")" = blocked ]
	run -64 sbx preflight --fail-on maybe
	[[ "$output" == *"--fail-on"*"blocked, unproven, warning"* ]]
}

@test "--output or --junit into a missing directory: exit 73 before the probe, nothing written" {
	provision
	run -73 sbx preflight --output "$TEST_ROOT/nope/report.json"
	[[ "$output" == *"cannot write the report to $TEST_ROOT/nope/report.json"* ]]
	[[ "$output" == *"No such file or directory"* ]]
	run -73 sbx preflight --json --junit "$TEST_ROOT/nope/r.xml"
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .field)" = junit ]
	[ "$(json_get "$output" .reason)" = no_such_directory ]
	run -73 sbx preflight --output "$TEST_ROOT"
	[[ "$output" == *"it is a directory"* ]]
	[ ! -e "$TEST_ROOT/nope" ]
}

@test "--output and --junit with plain file names write into the working directory" {
	# The README's CI step: `--output preflight.json` named no directory,
	# and the check looked for a directory called preflight.json.
	provision
	mkdir "$TEST_ROOT/ci"
	cd "$TEST_ROOT/ci"
	run sbx preflight --json --output preflight.json --junit preflight.xml
	[ "$status" -ne 73 ]
	jq -e .overall_readiness preflight.json
	[ "$(printf '%s' "$output" | jq -S .result)" = "$(jq -S . preflight.json)" ]
	grep -q '<testsuites' preflight.xml
	[ "$(ls -A)" = "$(printf 'preflight.json\npreflight.xml')" ]
	# a plain name whose directory (the working one) cannot be written
	if ! is_root; then
		chmod 0555 "$TEST_ROOT/ci"
		run -73 sbx preflight --output again.json
		[[ "$output" == *"cannot write the report to again.json: directory .: Permission denied"* ]]
		chmod 0755 "$TEST_ROOT/ci"
	fi
}

@test "soft limits only (no writable cgroup): ready with a warning, needs_setup once the agent asks for a limit" {
	provision
	# As uid 65534 there is no writable cgroup at all; as root one is
	# hidden with SBX_CGROUP_ROOT (an empty directory nobody may write).
	local nocg=$TEST_ROOT/no-cgroup
	mkdir -p "$nocg"
	chmod 0555 "$nocg"
	export SBX_CGROUP_ROOT=$nocg
	run -0 sbx preflight --json
	[ "$(readiness "$output")" = ready ]
	[ "$(json_get "$output" .result.limits)" = soft ]
	[ "$(field "$output" capability.cgroup_limits code)" = cgroup_unavailable ]
	[ "$(field "$output" capability.cgroup_limits severity)" = info ]
	[[ "$(field "$output" capability.cgroup_limits detail)" == *"every run works"* ]]
	json_get "$output" '.warnings[]' | grep -q '^limits are soft here'
	[ -z "$(problems "$output")" ]
	# Text: info is said as info, never as a failure.
	run -0 sbx preflight
	[ "${lines[0]}" = "sbx preflight: ready" ]
	[[ "$output" == *"limits: soft (warning: no cgroup can hold them here"* ]]
	[[ "$output" == *"  [info] cgroup_unavailable: no writable cgroup"* ]]
	[[ "$output" != *"[info/"* ]]
	# config/sandbox.json's limits are defaults, not asked for: ready.
	printf '{"limits":{"memory_mib":512}}\n' >"$SBX_HOME/config/sandbox.json"
	run -0 sbx preflight --json
	[ "$(readiness "$output")" = ready ]
	# The agent asks for limits: sbx exec would refuse its runs.
	printf '{"limits":{"memory_mib":512,"pids":100}}\n' \
	    >"$SBX_HOME/config/agents/default.json"
	run -1 sbx preflight --json
	[ "$(readiness "$output")" = needs_setup ]
	[ "$(problems "$output")" = "capability.cgroup_limits cgroup_unavailable" ]
	[ "$(field "$output" capability.cgroup_limits severity)" = warning ]
	[[ "$(field "$output" capability.cgroup_limits detail)" == *"config/agents/default.json asks for memory_mib, pids, and sbx exec refuses its runs"* ]]
	run -0 sbx preflight --json --fail-on unproven
	[ "$(readiness "$output")" = needs_setup ]
	run -1 sbx preflight
	[[ "$output" == *"[warning/missing] cgroup_unavailable"* ]]
}

@test "daemons that this installation does not have are not listed" {
	provision
	run sbx preflight --json
	[ "$(finding "$output" daemon.proxy | jq -r .code)" = daemon_not_running ]
	if [ ! -x "$SBX_TEST_BUILD/libexec/sbx/sbx-bridge" ]; then
		[ -z "$(finding "$output" daemon.bridge)" ]
		[ "$(json_get "$output" '[.result.locations[] | select(.id == "bridge_socket")] | length')" = 0 ]
	fi
}
