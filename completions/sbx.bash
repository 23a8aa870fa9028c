# bash completion for sbx(1)                               -*- shell-script -*-
#
# Commands come from `sbx --list-commands` at run time.  The options of
# `sbx exec` mirror the option table of cmd/sbx-exec.c; the test
# tests/integration/0010-docs.sh fails when a long option of
# `sbx-exec --help` is missing here.

# _sbx_state_root HOME_ARG: the state root, resolved as sbx resolves it
# (--home, SBX_HOME, $XDG_DATA_HOME/sbx, ~/.local/share/sbx).
_sbx_state_root()
{
	local h=${1-}

	if [[ -n $h ]]; then
		# The word is as typed: expand a leading ~ ourselves.
		[[ $h == \~ || $h == \~/* ]] && h=$HOME${h#\~}
		printf '%s\n' "$h"
	elif [[ -n ${SBX_HOME-} ]]; then
		printf '%s\n' "$SBX_HOME"
	elif [[ ${XDG_DATA_HOME-} == /* ]]; then
		printf '%s\n' "$XDG_DATA_HOME/sbx"
	else
		printf '%s\n' "${HOME-}/.local/share/sbx"
	fi
}

# _sbx_agents ROOT: the agents that have a home under ROOT.
_sbx_agents()
{
	local d n

	for d in "$1"/workspace/agents/*/; do
		[[ -d $d ]] || continue
		n=${d%/}
		n=${n##*/}
		[[ $n =~ ^[a-z0-9][a-z0-9_-]{0,31}$ ]] && printf '%s\n' "$n"
	done
}

# _sbx_jobs ROOT AGENT: the ids of the agent's background jobs.
_sbx_jobs()
{
	local f n

	for f in "$1/agents/$2/jobs"/*.json; do
		[[ -f $f ]] || continue
		n=${f##*/}
		n=${n%.json}
		[[ $n =~ ^[0-9a-f]{16}$ ]] && printf '%s\n' "$n"
	done
}

# _sbx_commands SBX: the installed commands, or a fallback.
_sbx_commands()
{
	local out

	out=$("$1" --list-commands 2>/dev/null) || out=
	[[ -n $out ]] || out="exec"
	printf '%s\n' "$out"
}

# _sbx_reply WORDLIST CUR: COMPREPLY = the words of WORDLIST matching CUR
# (commands, agents, job ids and options never contain blanks).
_sbx_reply()
{
	mapfile -t COMPREPLY < <(compgen -W "$1" -- "$2")
}

# _sbx_dirs CUR [BASE]: directories; relative to BASE when given.
_sbx_dirs()
{
	local cur=$1 base=${2-} d
	local -a found

	compopt -o filenames -o nospace 2>/dev/null
	COMPREPLY=()
	if [[ -n $base && $cur != /* ]]; then
		mapfile -t found < <(compgen -d -- "$base/$cur")
		for d in "${found[@]}"; do
			COMPREPLY+=("${d#"$base"/}/")
		done
	else
		mapfile -t found < <(compgen -d -- "$cur")
		for d in "${found[@]}"; do
			COMPREPLY+=("$d/")
		done
	fi
}

_sbx_exec()
{
	local cur=$1 prev=$2
	local -a w=("${@:3}")
	# Options that take a value, short (one letter) and long.
	local argshort=aCwetnc
	local arglong=" --agent --home --cwd --workdir --env --timeout --network --allow-domain --max-output --tail-lines --memory --cpus --pids --disk --wall-timeout --nofile --file-size --seccomp --stdin --request --envelope-fd "
	local runopts="--agent --home --cwd --workdir --workdir-follow-symlinks --env --timeout --network --allow-domain --json --max-output --memory --cpus --pids --disk --wall-timeout --nofile --file-size --soft-limits --seccomp --stdin --request --envelope-fd --tty --background --quiet --verbose --help --version -a -C -w -e -t -n -c -b -j -q -v -h"
	local subopts="--agent --home --json --quiet --verbose --help -a -j -q -v -h"
	local i n=${#w[@]} word sub="" npos=0 home="" agent="" root
	local dd=-1 take="" k ch

	# Scan the words before the one being completed.
	for ((i = 0; i < n; i++)); do
		word=${w[i]}
		if [[ -n $take ]]; then
			[[ $word == "=" ]] && continue
			case $take in
			a | --agent) agent=$word ;;
			--home) home=$word ;;
			esac
			take=""
			continue
		fi
		if ((dd >= 0)); then
			continue
		fi
		case $word in
		--)
			[[ -z $sub ]] && dd=$i
			;;
		--*=*)
			case ${word%%=*} in
			--agent) agent=${word#*=} ;;
			--home) home=${word#*=} ;;
			esac
			;;
		--*)
			[[ $arglong == *" $word "* ]] && take=$word
			;;
		-?*)
			for ((k = 1; k < ${#word}; k++)); do
				ch=${word:k:1}
				if [[ $argshort == *"$ch"* ]]; then
					if ((k + 1 < ${#word})); then
						[[ $ch == a ]] && agent=${word:k+1}
					else
						take=$ch
					fi
					break
				fi
			done
			;;
		*)
			if [[ -z $sub ]]; then
				sub=$word
			else
				npos=$((npos + 1))
			fi
			;;
		esac
	done

	root=$(_sbx_state_root "$home")
	[[ -n $agent ]] || agent=${SBX_AGENT:-default}

	# After `--`: the command to run in the sandbox.
	if ((dd >= 0)); then
		if ((n == dd + 1)); then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
		else
			compopt -o default 2>/dev/null
			COMPREPLY=()
		fi
		return 0
	fi

	# The value of an option.
	[[ -n $take ]] && prev=$take
	case $prev in
	-a | a | --agent)
		_sbx_reply "$(_sbx_agents "$root")" "$cur"
		return 0
		;;
	--home | -w | w | --workdir)
		_sbx_dirs "$cur"
		return 0
		;;
	-C | C | --cwd)
		_sbx_dirs "$cur" "$root/workspace/agents/$agent"
		return 0
		;;
	-n | n | --network)
		_sbx_reply "none proxy outbound" "$cur"
		return 0
		;;
	--seccomp)
		_sbx_reply "on off" "$cur"
		return 0
		;;
	--stdin)
		_sbx_reply "inherit null" "$cur"
		return 0
		;;
	--request)
		compopt -o default 2>/dev/null
		COMPREPLY=()
		return 0
		;;
	--envelope-fd)
		COMPREPLY=()
		return 0
		;;
	-e | e | --env | --timeout | -c | c | --max-output | --tail-lines | --allow-domain | \
	    --memory | --cpus | --pids | --disk | --wall-timeout | --nofile | --file-size)
		COMPREPLY=()
		return 0
		;;
	esac

	case $sub in
	"")
		if [[ $cur == -* ]]; then
			_sbx_reply "$runopts --" "$cur"
		else
			_sbx_reply "ps poll wait kill gc --" "$cur"
		fi
		;;
	ps)
		[[ $cur == -* ]] && _sbx_reply "$subopts" "$cur"
		;;
	gc)
		# Reaps the caller's stale cgroups: no agent, no arguments.
		((npos == 0)) && [[ $cur == -* ]] &&
		    _sbx_reply "--home --json --quiet --verbose --help -j -q -v -h" "$cur"
		;;
	poll | wait | kill)
		if [[ $cur == -* ]]; then
			case $sub in
			poll) _sbx_reply "$subopts --tail-lines" "$cur" ;;
			wait) _sbx_reply "$subopts --timeout -t" "$cur" ;;
			kill) _sbx_reply "$subopts --force" "$cur" ;;
			esac
		elif ((npos == 0)); then
			_sbx_reply "$(_sbx_jobs "$root" "$agent")" "$cur"
		fi
		;;
	esac
	return 0
}

# _sbx_proxy CUR PREV WORD...: sbx proxy serve|status|stop|check; the
# options mirror the option table of cmd/sbx-proxy.c.
_sbx_proxy()
{
	local cur=$1 prev=$2 sub="" word home="" prevw
	local -a w=("${@:3}")
	local i

	for ((i = 0; i < ${#w[@]}; i++)); do
		word=${w[i]}
		case $word in
		--home) home=${w[i + 1]-} ;;
		--home=*) home=${word#*=} ;;
		-*) ;;
		*)
			prevw=""
			((i > 0)) && prevw=${w[i - 1]}
			case $prevw in
			--home | -a | --agent | --allow-domain) ;;
			*) [[ -z $sub ]] && sub=$word ;;
			esac
			;;
		esac
	done
	case $prev in
	--home)
		_sbx_dirs "$cur"
		return 0
		;;
	-a | --agent)
		_sbx_reply "$(_sbx_agents "$(_sbx_state_root "$home")")" "$cur"
		return 0
		;;
	--allow-domain)
		COMPREPLY=()
		return 0
		;;
	esac
	case $sub in
	"")
		if [[ $cur == -* ]]; then
			_sbx_reply "--help --version -h" "$cur"
		else
			_sbx_reply "serve status stop check" "$cur"
		fi
		;;
	serve)
		_sbx_reply "--foreground --home --json --quiet --verbose --help -j -q -v -h" "$cur"
		;;
	status | stop)
		_sbx_reply "--home --json --help -j -h" "$cur"
		;;
	check)
		[[ $cur == -* ]] &&
		    _sbx_reply "--agent --allow-domain --resolve --home --json --help -a -j -h" "$cur"
		;;
	esac
	return 0
}

_sbx()
{
	local cur prev cword
	local -a words

	COMPREPLY=()
	words=("${COMP_WORDS[@]}")
	cword=$COMP_CWORD
	cur=${words[cword]}
	prev=""
	((cword > 0)) && prev=${words[cword - 1]}
	# `--opt=value`: bash splits at `=` (COMP_WORDBREAKS).
	if [[ $cur == "=" ]]; then
		cur=""
	elif [[ $prev == "=" ]] && ((cword > 1)); then
		prev=${words[cword - 2]}
	fi

	if ((cword == 1)); then
		if [[ $cur == -* ]]; then
			_sbx_reply "--help --version --list-commands -h" "$cur"
		else
			_sbx_reply "$(_sbx_commands "${words[0]}") help" "$cur"
		fi
		return 0
	fi

	case ${words[1]} in
	help)
		((cword == 2)) &&
		    _sbx_reply "$(_sbx_commands "${words[0]}")" "$cur"
		;;
	exec)
		_sbx_exec "$cur" "$prev" "${words[@]:2:cword-2}"
		;;
	proxy)
		_sbx_proxy "$cur" "$prev" "${words[@]:2:cword-2}"
		;;
	provision|status)
		case $prev in
		--home) compopt -o dirnames 2>/dev/null; return 0 ;;
		--agent) _sbx_reply "$(_sbx_agents "$(_sbx_state_root)")" "$cur"; return 0 ;;
		--image)
			# image names from images/names.json, and `none`
			_sbx_reply "none $(grep -oE '"[a-z0-9][a-z0-9._-]*":' \
			    "$(_sbx_state_root)/images/names.json" 2>/dev/null | tr -d '":')" "$cur"
			return 0 ;;
		--sha256|--name) return 0 ;;
		esac
		if [[ $cur == -* ]]; then
			if [[ ${words[2]-} == image ]]; then
				_sbx_reply "--sha256 --name --force --home --json -q --help" "$cur"
			else
				_sbx_reply "--agent --home --image --env --no-env --no-create-user --json --yes -q -v --help --version" "$cur"
			fi
		elif ((cword == 2)) && [[ ${words[1]} == provision ]]; then
			_sbx_reply "list status unprovision reset remove image" "$cur"
		elif [[ ${words[2]-} == image ]] && ((cword == 3)); then
			_sbx_reply "add list rm verify" "$cur"
		else
			compopt -o default 2>/dev/null
		fi
		;;
	config)
		# Keys from the schema itself: `sbx config keys [--global]`.
		local g="" wd
		for wd in "${words[@]:2:cword-2}"; do
			[[ $wd == --global || $wd == -g ]] && g=--global
		done
		case $prev in
		--home) compopt -o dirnames 2>/dev/null; return 0 ;;
		--agent|-a) _sbx_reply "$(_sbx_agents "$(_sbx_state_root)")" "$cur"; return 0 ;;
		esac
		if [[ $cur == -* ]]; then
			_sbx_reply "--agent --global --json-value --home --json --quiet --verbose --help --version -a -g -j -q -v -h" "$cur"
		elif ((cword == 2)); then
			_sbx_reply "get set unset add rm show keys" "$cur"
		elif ((cword == 3)) || [[ $prev == get || $prev == set || $prev == unset || $prev == add || $prev == rm ]]; then
			case ${words[2]} in
			get|set|unset|add|rm)
				_sbx_reply "$("${words[0]}" config keys $g 2>/dev/null)" "$cur" ;;
			esac
		elif [[ ${words[2]} == set && $prev == network ]]; then
			_sbx_reply "none proxy outbound" "$cur"
		fi
		;;
	install)
		case $prev in
		--home) compopt -o dirnames 2>/dev/null; return 0 ;;
		--agent|-a) _sbx_reply "$(_sbx_agents "$(_sbx_state_root)")" "$cur"; return 0 ;;
		--manager|-m) _sbx_reply "apt pip npm" "$cur"; return 0 ;;
		--timeout) return 0 ;;
		esac
		if [[ $cur == -* ]]; then
			_sbx_reply "--agent --manager --home --timeout --allow-url --json --quiet --verbose --help --version -a -m -j -q -v -h" "$cur"
		elif ((cword == 2)); then
			_sbx_reply "list reconcile" "$cur"
		fi
		;;
	preflight)
		case $prev in
		--home) compopt -o dirnames 2>/dev/null; return 0 ;;
		--output|--junit) compopt -o default 2>/dev/null; return 0 ;;
		--agent) _sbx_reply "$(_sbx_agents "$(_sbx_state_root)")" "$cur"; return 0 ;;
		--fail-on) _sbx_reply "blocked unproven warning" "$cur"; return 0 ;;
		esac
		_sbx_reply "--agent --home --json --pretty --output --junit --deep --fail-on -q -v --help --version" "$cur"
		;;
	-*)
		;;
	*)
		compopt -o default 2>/dev/null
		;;
	esac
	return 0
}

complete -F _sbx sbx
