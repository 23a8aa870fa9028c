#!/usr/bin/env bats
# sbx secret: the sealed store from the command line (issue 14).
#
# Values come from a terminal (asked twice, no echo), stdin, --from-fd or
# --from-env, never from argv; names are checked; the files are 0600 and
# hold no plaintext; a damaged store falls back to its previous
# generation; records are bound to their agent and name; 8 concurrent
# writers lose nothing; the scrub filter; remove --yes names the stores.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

@test "set from stdin, list, check, rm; no plaintext on disk; 0600" {
	run --separate-stderr sbx secret set API_TOKEN --description "the api" <<<"tok-value-0800"
	[ "$status" -eq 0 ]
	[[ "$output" == *"stored API_TOKEN for agent default"* ]]
	[ "$(stat -c %a "$SBX_HOME/agents/default/secrets.json")" = 600 ]
	[ "$(stat -c %a "$SBX_HOME/config/secret.key")" = 600 ]
	[ "$(stat -c %s "$SBX_HOME/config/secret.key")" = 32 ]
	! grep -rq "tok-value-0800" "$SBX_HOME"
	run sbx secret list --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" '.result.secrets[0].name')" = API_TOKEN ]
	[ "$(json_get "$output" '.result.secrets[0].description')" = "the api" ]
	[[ "$output" != *tok-value-0800* ]]
	run sbx secret check API_TOKEN
	[ "$status" -eq 0 ]
	run sbx secret check NOPE --json
	[ "$status" -eq 1 ]
	[ "$(json_get "$output" .reason)" = secret_missing ]
	[ "$(json_get "$output" .hint)" = "sbx secret set NOPE --agent default" ]
	run sbx secret rm API_TOKEN
	[ "$status" -eq 0 ]
	run sbx secret rm API_TOKEN --json
	[ "$status" -eq 1 ]
	[ "$(json_get "$output" .kind)" = not_found ]
}

@test "values: --from-env, --from-fd, one trailing newline dropped, NUL and 64 KiB + 1 refused, no --value" {
	CI_TOKEN=from-env-value-1 run sbx secret set A --from-env CI_TOKEN --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.replaced)" = false ]
	run sbx secret set B --from-fd 3 3< <(printf 'fd-value-22\n')
	[ "$status" -eq 0 ]
	run sbx exec -- sh -c 'printf "[%s][%s]" "$A" "$B" | od -c | head -c 0; [ "$A" = from-env-value-1 ] && [ "$B" = fd-value-22 ]'
	[ "$status" -eq 0 ]
	run sbx secret set C --json < <(printf 'a\0b')
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = nul_byte ]
	run sbx secret set C --json < <(head -c 65537 /dev/zero | tr '\0' x)
	[ "$status" -eq 65 ]
	[ "$(json_get "$output" .reason)" = too_long ]
	run sbx secret set C < <(head -c 65536 /dev/zero | tr '\0' x)
	[ "$status" -eq 0 ]
	run sbx secret set C --value x
	[ "$status" -eq 64 ]
	run sbx secret set EMPTY --json </dev/null
	[ "$status" -eq 65 ]
	run --separate-stderr sbx secret set SHORT <<<"abc"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"shorter than 6 bytes: it is not scrubbed"* ]]
}

@test "an option of another subcommand is refused by name; nothing is written" {
	run sbx secret list --from-fd 3 --json
	[ "$status" -eq 64 ]
	[ "$(json_get "$output" .reason)" = not_for_subcommand ]
	[ "$(json_get "$output" .field)" = --from-fd ]
	run sbx secret check A --reveal --json
	[ "$status" -eq 64 ]
	[ "$(json_get "$output" .field)" = --reveal ]
	# get writes to a terminal only: no envelope to ask for.
	run sbx secret get A --reveal --json
	[ "$status" -eq 64 ]
	[ "$(json_get "$output" .field)" = --json ]
	run sbx secret frobnicate
	[ "$status" -eq 64 ]
	run sbx secret --complete-options rm
	[ "$status" -eq 0 ]
	[[ "$output" == *"--agent"* && "$output" != *"--from-fd"* ]]
	[ ! -e "$SBX_HOME/agents/default/secrets.json" ]
}

@test "names: grammar and reserved names (the list in the message)" {
	for n in PATH LD_PRELOAD PYTHONPATH SBX_X HTTPS_PROXY SSL_CERT_FILE NODE_EXTRA_CA_CERTS TZ GCONV_PATH; do
		run sbx secret set "$n" --json <<<"some-value"
		[ "$status" -eq 65 ] || { echo "$n: $output"; false; }
		[ "$(json_get "$output" .reason)" = reserved_name ]
		[[ "$(json_get "$output" .message)" == *"LD_*"*"*_CA_*"* ]]
	done
	for n in lower 1ABC A-B; do
		run sbx secret set "$n" --json <<<"some-value"
		[ "$status" -eq 65 ]
		[ "$(json_get "$output" .reason)" = invalid_name ]
	done
	[ ! -e "$SBX_HOME/agents/default/secrets.json" ]
}

@test "a terminal: asked twice without echo; a mismatch stores nothing; get --reveal only on a terminal" {
	command -v script >/dev/null || skip "script(1) is not installed"
	# Typed after each prompt, as a person would.
	run bash -c '{ sleep 0.5; printf "pty-value-0800\n"; sleep 0.5; printf "pty-value-0800\n"; sleep 0.5; } |
	    script -qec "$0 secret set PTY" /dev/null' "$SBX"
	[ "$status" -eq 0 ]
	[[ "$output" == *"value of PTY: "* ]]
	[[ "$output" == *"(again)"* ]]
	[[ "$output" != *pty-value-0800* ]]
	run bash -c '{ sleep 0.5; printf "one-value-1\n"; sleep 0.5; printf "two-value-2\n"; sleep 0.5; } |
	    script -qec "$0 secret set MISMATCH" /dev/null' "$SBX"
	[[ "$output" == *"the two entries differ"* ]]
	run sbx secret check MISMATCH
	[ "$status" -eq 1 ]
	run script -qec "$SBX secret get PTY --reveal" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *pty-value-0800* ]]
	run sbx secret get PTY --reveal
	[ "$status" -eq 77 ]
	[[ "$output" != *pty-value-0800* ]]
	run sbx secret get PTY
	[ "$status" -eq 64 ]
}

@test "a store truncated at every byte offset: the previous generation, or a clear error" {
	sbx secret set TOK <<<"generation-one-value"
	sbx secret set TOK <<<"generation-two-value"
	f="$SBX_HOME/agents/default/secrets.json"
	cp "$f" "$TEST_ROOT/whole"
	n=$(stat -c %s "$f")
	# Every offset through `sbx secret check` (one bash loop: bats's
	# own per-command cost would dominate); a few through a run
	# (t-secret truncates at every offset in the library too).
	run bash -c 'for ((i = 0; i < $2 - 1; i++)); do
		head -c "$i" "$3" >"$4"
		"$1" secret check TOK 2>"$3.err" >/dev/null &&
		    grep -q "previous generation is used" "$3.err" ||
		    { echo "offset $i: $(cat "$3.err")"; exit 1; }
	done' - "$SBX" "$n" "$TEST_ROOT/whole" "$f"
	[ "$status" -eq 0 ]
	for i in 0 $((n / 2)) $((n - 2)); do
		head -c "$i" "$TEST_ROOT/whole" >"$f"
		run --separate-stderr sbx exec -- sh -c '[ "$TOK" = generation-one-value ]'
		[ "$status" -eq 0 ] || { echo "offset $i: $output $stderr"; false; }
		[[ "$stderr" == *"previous generation is used"* ]]
	done
	# Both generations damaged: rejected, nothing runs.
	head -c 10 "$TEST_ROOT/whole" >"$f"
	head -c 10 "$TEST_ROOT/whole" >"$f.prev"
	run sbx exec --json -- touch ran
	[ "$status" -eq 77 ]
	[ "$(json_get "$output" .reason)" = secret_store_unreadable ]
	[ ! -e "$WS/ran" ]
	run sbx exec --no-secrets -- true
	[ "$status" -eq 0 ]
}

@test "a record copied from agent a's store into b's does not open; a wrong key is wrong_key" {
	sbx secret set TOK --agent a <<<"agent-a-value"
	sbx secret set OTHER --agent b <<<"agent-b-value"
	jq --slurpfile a "$SBX_HOME/agents/a/secrets.json" \
	    '.secrets.TOK = $a[0].secrets.TOK' "$SBX_HOME/agents/b/secrets.json" >"$TEST_ROOT/b.json"
	cp "$TEST_ROOT/b.json" "$SBX_HOME/agents/b/secrets.json"
	run sbx secret check TOK --agent b --json
	[ "$status" -eq 77 ]
	[ "$(json_get "$output" .reason)" = secret_store_unreadable ]
	run sbx secret check OTHER --agent b
	[ "$status" -eq 0 ]
	head -c 32 /dev/urandom >"$TEST_ROOT/other.key"
	chmod 600 "$TEST_ROOT/other.key"
	SBX_SECRET_KEY_FILE="$TEST_ROOT/other.key" run sbx secret list --agent a --json
	[ "$status" -eq 77 ]
	[ "$(json_get "$output" .reason)" = wrong_key ]
	chmod 644 "$TEST_ROOT/other.key"
	SBX_SECRET_KEY_FILE="$TEST_ROOT/other.key" run sbx secret list --agent a --json
	[ "$(json_get "$output" .reason)" = key_file_permissions ]
}

@test "8 concurrent sets: all present afterwards" {
	for i in 1 2 3 4 5 6 7 8; do
		printf 'concurrent-value-%s' "$i" | "$SBX" secret set "C$i" -q &
	done
	wait
	run sbx secret list --json
	[ "$(json_get "$output" '.result.secrets | length')" -eq 8 ]
	run sbx exec -- sh -c 'for i in 1 2 3 4 5 6 7 8; do eval "v=\$C$i"; [ "$v" = "concurrent-value-$i" ] || exit 1; done'
	[ "$status" -eq 0 ]
}

@test "rotate-key re-seals every record; values unchanged" {
	sbx secret set ONE <<<"rotate-value-one"
	sbx secret set TWO <<<"rotate-value-two"
	before=$(jq -c '[.key, .secrets.ONE.value]' "$SBX_HOME/agents/default/secrets.json")
	run sbx secret rotate-key --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.secrets)" = 2 ]
	after=$(jq -c '[.key, .secrets.ONE.value]' "$SBX_HOME/agents/default/secrets.json")
	[ "$before" != "$after" ]
	run sbx exec -- sh -c '[ "$ONE" = rotate-value-one ] && [ "$TWO" = rotate-value-two ]'
	[ "$status" -eq 0 ]
}

@test "a passphrase (Argon2id): needed to open, a wrong one is wrong_key" {
	SBX_SECRET_PASSPHRASE="pass phrase 1" run sbx secret set P --passphrase <<<"pass-sealed-value"
	[ "$status" -eq 0 ]
	jq -e '.kdf.alg == "argon2id13"' "$SBX_HOME/agents/default/secrets.json"
	run sbx secret check P --json </dev/null
	[ "$(json_get "$output" .reason)" = passphrase_required ]
	SBX_SECRET_PASSPHRASE="wrong" run sbx secret check P --json
	[ "$(json_get "$output" .reason)" = wrong_key ]
	SBX_SECRET_PASSPHRASE="pass phrase 1" run sbx exec -- sh -c '[ "$P" = pass-sealed-value ]'
	[ "$status" -eq 0 ]
}

@test "scrub: stdin to stdout, every form redacted" {
	sbx secret set TOK <<<"scrub-me-value-0800"
	b64=$(printf 'scrub-me-value-0800' | base64)
	hex=$(printf 'scrub-me-value-0800' | od -An -tx1 | tr -d ' \n')
	run sbx secret scrub <<<"raw scrub-me-value-0800 b64 $b64 hex $hex"
	[ "$status" -eq 0 ]
	[[ "$output" == "raw [REDACTED:TOK] b64 [REDACTED:TOK]"*" hex [REDACTED:TOK]" ]]
	# One byte at a time through a pipe (quicker than the idle flush).
	run bash -c 'printf "x scrub-me-value-0800 y\n" | while IFS= read -r -n1 c; do printf %s "$c"; done | "$0" secret scrub' "$SBX"
	[ "$output" = "x [REDACTED:TOK] y" ]
}

@test "unprovision keeps secrets; remove --yes lists and deletes them" {
	sbx provision -q --agent a 2>/dev/null || sbx provision --agent a
	sbx secret set KEEP --agent a <<<"keep-me-value"
	run sbx provision unprovision --agent a
	[ "$status" -eq 0 ]
	run sbx secret check KEEP --agent a
	[ "$status" -eq 0 ]
	run sbx provision remove
	[ "$status" -eq 1 ]
	[[ "$output" == *"agents/a/secrets.json (secrets: KEEP)"* ]]
	[[ "$output" == *"config/secret.key"* ]]
	run sbx provision remove --yes --json
	[ "$status" -eq 0 ]
	[[ "$output" == *"agents/a/secrets.json (secrets: KEEP)"* ]]
	[ ! -e "$SBX_HOME/agents/a/secrets.json" ]
	[ ! -e "$SBX_HOME/config/secret.key" ]
}

@test "an option's value that reads --json or -j is a value, not the flag" {
	sbx provision >/dev/null
	run sh -c 'printf value-123456 | "$0" secret set TOK --description --json' "$SBX"
	[ "$status" -eq 0 ]
	[[ "$output" == stored* ]]
	run "$SBX" secret list --json
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.. | objects | select(.description? == "--json")' >/dev/null
	run sh -c 'printf value-123456 | "$0" secret set TOK2 --description -j' "$SBX"
	[ "$status" -eq 0 ]
	[[ "$output" == stored* ]]
}
