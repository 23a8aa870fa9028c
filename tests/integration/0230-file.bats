#!/usr/bin/env bats
# sbx file: bounded file tools on an agent's home (issue 18).
#
# Round trips through the real binaries (and ripgrep inside the sandbox);
# every hostile path spelling through every tool; symbolic links to /etc,
# to another agent's home and to /proc/self/root; a FIFO (no hang), a
# socket, a device; a file over the cap; edits whose --old occurs 0, 1 and
# 1,000 times; read-only files and directories; and each time, nothing
# outside the home changed.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	# The homes, made as sbx makes them (owned by the sandbox's uid).
	sbx exec -- true
	sbx exec --agent other -- sh -c 'echo other-secret > s'
	OTHER="$SBX_HOME/workspace/agents/other"
	echo outside >"$TEST_ROOT/outside"
}

teardown() { sbx_teardown; }

# A fingerprint of everything but the default agent's home: names,
# types, sizes, modes, owners and contents.
outside_state() {
	(cd "$TEST_ROOT" && find . -path ./state/workspace/agents/default -prune \
	    -o -printf '%p %y %s %m %u\n' | sort
	find "$TEST_ROOT" -path "$WS" -prune -o -type f -print0 |
	    sort -z | xargs -0 cat 2>/dev/null | sha256sum)
}

# As the sandbox's uid: what the agent could plant itself.
as_agent() {
	if is_root; then
		setpriv --reuid "$(sandbox_uid)" --regid "$(sandbox_uid)" \
		    --clear-groups "$@"
	else
		"$@"
	fi
}

@test "write, read, edit, list, search: a round trip; files are the agent's" {
	run sbx file write src/hi.py --create-dirs --json <<<'print("hi")'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.created)" = true ]
	[ "$(json_get "$output" .result.dirs_created)" = 1 ]
	[ "$(json_get "$output" .result.mode)" = 0644 ]
	[ "$(stat -c %u "$WS/src/hi.py")" = "$(sandbox_uid)" ]
	[ "$(stat -c %u "$WS/src")" = "$(sandbox_uid)" ]
	run sbx file edit src/hi.py --old '"hi"' --new '"hello"' --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.replacements)" = 1 ]
	[ "$(json_get "$output" .result.bytes_before)" = 12 ]
	[ "$(json_get "$output" .result.bytes_after)" = 15 ]
	[ "$(stat -c %u "$WS/src/hi.py")" = "$(sandbox_uid)" ]
	run sbx file read /workspace/agents/default/src/hi.py --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.content)" = 'print("hello")' ]
	[ "$(json_get "$output" .result.path)" = src/hi.py ]
	[ "$(json_get "$output" .result.home)" = /workspace/agents/default ]
	# The sandbox sees the same file and may change it later.
	run sbx exec -- sh -c 'cat src/hi.py && echo more >>src/hi.py'
	[ "$status" -eq 0 ]
	[ "$output" = 'print("hello")' ]
	run sbx file list . --depth 2 --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" '[.result.entries[] | select(.path == "src/hi.py") | .type] | .[0]')" = file ]
	run sbx file read src --json
	[ "$(json_get "$output" .result.type)" = directory ]
	run sbx file search hello --glob '*.py' --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.count)" = 1 ]
	[ "$(json_get "$output" '.result.matches[0].path')" = src/hi.py ]
	[ "$(json_get "$output" '.result.matches[0].line')" = 1 ]
	[ "$(json_get "$output" '.result.matches[0].column')" = 8 ]
	run sbx file search hello
	[ "$output" = 'src/hi.py:1:8:print("hello")' ]
}

@test "read: line windows, character cap with next_start_line, tail" {
	seq 1 20000 | sbx file write n.txt
	run sbx file read n.txt --json
	[ "$(json_get "$output" .result.truncated)" = true ]
	[ "$(json_get "$output" .result.content | wc -c)" -le 15001 ]
	[ "$(json_get "$output" .result.total_lines)" = 20000 ]
	next=$(json_get "$output" .result.next_start_line)
	run sbx file read n.txt --start-line "$next" --line-count 2 --json
	[ "$(json_get "$output" .result.start_line)" = "$next" ]
	[ "$(json_get "$output" .result.end_line)" = $((next + 1)) ]
	[ "$(printf '%s' "$output" | jq -j .result.content | wc -l)" -eq 2 ]
	run sbx file read n.txt --tail-lines 1
	[ "$output" = 20000 ]
	run sbx file read n.txt --start-line 20001 --json
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = beyond_end ]
	run sbx file read n.txt --tail-lines 1 --start-line 2 --json
	[ "$status" -eq 64 ]
	run sbx file read n.txt --max-chars 0 --json
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .field)" = max_chars ]
}

@test "traversal in every spelling, through every tool: invalid_args with a reason, nothing changed" {
	before=$(outside_state)
	nl=$'a\nb'
	esc=$'a\e[2Jb'
	for spec in "..:traversal" "../other/s:traversal" "a/../..:traversal" \
	    "./../x:traversal" "/workspace/agents/default/../other/s:traversal" \
	    "/etc/passwd:outside_home" "/workspace/agents/other/s:outside_home" \
	    "/workspace/shared/x:outside_home" "/:outside_home" \
	    "a//b:empty_component" "//etc/passwd:empty_component" \
	    ":empty" "$nl:control_character" "$esc:control_character"; do
		p=${spec%:*}
		want=${spec##*:}
		for tool in read write edit list search; do
			case $tool in
			read | list) run sbx file "$tool" "$p" --json ;;
			write) run sbx file write "$p" --json <<<x ;;
			edit) run sbx file edit "$p" --old a --new b --json ;;
			search) run sbx file search x --path "$p" --json ;;
			esac
			[ "$status" -eq 65 ] || { echo "$tool $p: status $status"; false; }
			[ "$(json_get "$output" .reason)" = "$want" ] ||
			    { echo "$tool $p: $output"; false; }
			[ "$(json_get "$output" .field)" = path ]
		done
	done
	# %2e%2e is a name like any other (not decoded).
	run sbx file write %2e%2e --json <<<x
	[ "$status" -eq 0 ]
	[ -f "$WS/%2e%2e" ]
	[ "$(outside_state)" = "$before" ]
}

@test "symbolic links to /etc, another agent's home, /proc/self/root: refused by the kernel, nothing changed" {
	as_agent ln -s /etc "$WS/etc"
	as_agent ln -s ../other "$WS/oth"
	as_agent ln -s /proc/self/root "$WS/pr"
	as_agent ln -s ../../../../outside "$WS/up"
	as_agent ln -s "$OTHER/s" "$WS/abs"
	before=$(outside_state)
	for p in etc/passwd etc oth/s pr/etc/passwd up abs; do
		run sbx file read "$p" --json
		[ "$status" -eq 65 ] || { echo "read $p: $output"; false; }
		[ "$(json_get "$output" .reason)" = symlink_escape ]
		run sbx file edit "$p" --old other --new x --json
		[ "$status" -eq 65 ]
	done
	for p in etc/passwd etc/sbx-new oth/s pr/tmp/x; do
		run sbx file write "$p" --create-dirs --json <<<pwned
		[ "$status" -eq 65 ] || { echo "write $p: $output"; false; }
		[ "$(json_get "$output" .reason)" = symlink_escape ]
	done
	# The link itself is never replaced by a write.
	run sbx file write up --json <<<pwned
	[ "$(json_get "$output" .reason)" = symlink ]
	[ -L "$WS/up" ]
	for p in etc oth pr; do
		run sbx file list "$p" --json
		[ "$(json_get "$output" .reason)" = symlink_escape ]
	done
	# list shows links, never enters them.
	run sbx file list . --depth 3 --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" '[.result.entries[].path | select(startswith("etc/") or startswith("oth/") or startswith("pr/"))] | length')" = 0 ]
	[ "$(json_get "$output" '[.result.entries[] | select(.path == "etc") | .type] | .[0]')" = symlink ]
	# search sees the home as the sandbox does: the sandbox's own /etc,
	# never the other agent's home.
	run sbx file search other-secret --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.count)" = 0 ]
	[ "$(outside_state)" = "$before" ]
	[ "$(cat "$OTHER/s")" = other-secret ]
}

@test "a FIFO, a socket, a device, a file over the cap: refused without blocking" {
	as_agent mkfifo "$WS/fifo"
	as_agent "$PY" -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$WS/sock"
	truncate -s 17M "$WS/big"
	for p in fifo sock; do
		run timeout 10 "$SBX" file read "$p" --json
		[ "$status" -eq 65 ] || { echo "read $p: $status $output"; false; }
		[ "$(json_get "$output" .reason)" = not_regular_file ]
		run timeout 10 "$SBX" file write "$p" --json <<<x
		[ "$(json_get "$output" .reason)" = not_regular_file ]
		run timeout 10 "$SBX" file edit "$p" --old a --new b --json
		[ "$(json_get "$output" .reason)" = not_regular_file ]
	done
	[ -p "$WS/fifo" ]
	run sbx file read big --json
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = too_large ]
	run sbx file write big2 --json < <(head -c $((16 * 1024 * 1024 + 1)) /dev/zero)
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = too_large ]
	[ ! -e "$WS/big2" ]
	if is_root; then
		mknod "$WS/null" c 1 3
		run timeout 10 "$SBX" file read null --json
		[ "$(json_get "$output" .reason)" = not_regular_file ]
		[[ "$(json_get "$output" .message)" == *char_device* ]]
	fi
}

@test "edit: --old 0, 1 and 1,000 times; --all; the mode is kept" {
	printf 'alpha\nbeta\ngamma beta\n' | sbx file write e.txt --mode 0640
	run sbx file edit e.txt --old delta --new x --json
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = no_match ]
	[ "$(json_get "$output" .count)" = 0 ]
	run sbx file edit e.txt --old beta --new x --json
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = multiple_matches ]
	[ "$(json_get "$output" .count)" = 2 ]
	[ "$(json_get "$output" '.lines | join(",")')" = 2,3 ]
	run sbx file edit e.txt --old alpha --new A --json
	[ "$status" -eq 0 ]
	[ "$(stat -c %a "$WS/e.txt")" = 640 ]
	for _ in $(seq 1000); do echo tok; done | sbx file write many
	run sbx file edit many --old tok --new T --json
	[ "$(json_get "$output" .count)" = 1000 ]
	[ "$(json_get "$output" '.lines | length')" = 10 ]
	[ "$(grep -c tok "$WS/many")" = 1000 ]
	run sbx file edit many --old tok --new T --all --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.replacements)" = 1000 ]
	[ "$(grep -c T "$WS/many")" = 1000 ]
	run sbx file edit many --old tok --json
	[ "$status" -eq 64 ]
}

@test "read-only file and directory: refused, unchanged" {
	echo keep | sbx file write ro.txt --mode 0444
	as_agent mkdir "$WS/rodir"
	as_agent chmod 555 "$WS/rodir"
	run sbx file write ro.txt --json <<<changed
	[ "$status" -eq 77 ]
	[ "$(json_get "$output" .reason)" = read_only ]
	run sbx file edit ro.txt --old keep --new changed --json
	[ "$status" -eq 77 ]
	[ "$(cat "$WS/ro.txt")" = keep ]
	run sbx file write rodir/new --json <<<x
	[ "$status" -eq 77 ]
	[ "$(json_get "$output" .reason)" = read_only_directory ]
	[ -z "$(ls -A "$WS/rodir")" ]
	status_is_kind
}

@test "search: context, --files, --max, binary files skipped, secrets scrubbed" {
	printf 'one\ntwo foo\nthree\nfoo four\n' | sbx file write a.txt
	printf 'x\0foo\n' | sbx file write bin.dat
	for i in $(seq 30); do echo "foo $i"; done | sbx file write many.txt
	run sbx file search 'two foo' --context 1 --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" '.result.matches[0].before | join(",")')" = one ]
	[ "$(json_get "$output" '.result.matches[0].after | join(",")')" = three ]
	run sbx file search foo --files --json
	[ "$(json_get "$output" '.result.files | sort | join(",")')" = a.txt,many.txt ]
	run sbx file search foo --max 5 --json
	[ "$(json_get "$output" .result.count)" = 5 ]
	[ "$(json_get "$output" .result.truncated)" = true ]
	run sbx file search foo --max 501 --json
	[ "$status" -eq 65 ]
	run sbx file search 'foo(' --json
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = bad_pattern ]
	run sbx file search foo --path nope --json
	[ "$(json_get "$output" .reason)" = not_found ]
	# A pattern that starts with - after --: a pattern, not options.
	echo '-foo-' | sbx file write dash.txt
	run sbx file search --json -- -foo
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.count)" = 1 ]
	printf 'tok-0230-value' | sbx secret set TOK0230
	echo 'key = "tok-0230-value"' | sbx file write conf.txt
	run sbx file search key --json
	[ "$status" -eq 0 ]
	[[ "$output" != *tok-0230-value* ]]
	[[ "$output" == *REDACTED:TOK0230* ]]
	run sbx file read conf.txt --json
	[[ "$output" != *tok-0230-value* ]]
}

@test "usage: unknown subcommand, options of another subcommand, missing home" {
	run sbx file frob x --json
	[ "$status" -eq 64 ]
	run sbx file read x --depth 2 --json
	[ "$status" -eq 64 ]
	[ "$(json_get "$output" .reason)" = not_for_subcommand ]
	run sbx file read x --agent nobody-here --json
	[ "$status" -eq 1 ]
	[ "$(json_get "$output" .reason)" = agent_home_missing ]
	run sbx file read x --agent ../x --json
	[ "$status" -eq 65 ]
	run sbx file write x --mode 4755 --json <<<x
	[ "$(json_get "$output" .reason)" = mode_not_allowed ]
	run sbx file write x --mode 9 --json <<<x
	[ "$(json_get "$output" .reason)" = bad_mode ]
}

@test "a race: d swapped between a directory and a link out while sbx file reads and writes through it" {
	mkdir "$TEST_ROOT/out"
	chmod 777 "$TEST_ROOT/out"
	before=$(ls -A "$TEST_ROOT/out")
	as_agent mkdir "$WS/real"
	echo inside | as_agent tee "$WS/real/passwd" >/dev/null
	# The agent flips d between its own directory and links to /etc and
	# to a directory outside, as fast as it can (bounded: 20 s at most).
	as_agent timeout 20 sh -c '
		cd "$1" || exit 1
		while :; do
			ln -sfn real d.new && mv -T d.new d
			ln -sfn /etc d.new && mv -T d.new d
			ln -sfn "$2" d.new && mv -T d.new d
		done' flip "$WS" "$TEST_ROOT/out" &
	flipper=$!
	for _ in $(seq 100); do
		out=$("$SBX" file read d/passwd --json 2>&1) || true
		[[ "$out" != *root:* ]] || { kill "$flipper"; echo "$out"; false; }
		"$SBX" file write d/pwned --json <<<x >/dev/null 2>&1 || true
	done
	kill "$flipper" 2>/dev/null || true
	wait "$flipper" 2>/dev/null || true
	[ "$(ls -A "$TEST_ROOT/out")" = "$before" ]
	[ ! -e /etc/pwned ]
}
