# bash completion for sbx(1)                               -*- shell-script -*-
#
# Thin: every candidate comes from sbx itself, `sbx --complete KIND ...`
# (sbx(1), COMPLETION): the commands; each (sub)command's options, from
# its program's option table, with what completes their values; the
# subcommands; what completes an operand; the agents, jobs and images of
# the state root, resolved as sbx resolves it.  This file only splits the
# command line into words and hands the answers to bash.

# _sbx_ask KIND ARG...: the lines of `sbx --complete KIND ARG...`.
_sbx_ask()
{
	"$_sbx_bin" --complete "$@" 2>/dev/null
}

# _sbx_reply WORDLIST CUR: COMPREPLY = the words of WORDLIST matching CUR
# (commands, options, agents, job ids and keys never contain blanks).
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

# _sbx_values CUR SPEC: complete a value or an operand as the option
# table's SPEC says: items separated by `|`, each a word or a @kind.
_sbx_values()
{
	local cur=$1 item words=""
	local -a items

	IFS='|' read -r -a items <<<"$2"
	for item in "${items[@]}"; do
		case $item in
		@agent) words+=" $(_sbx_ask agents "${_sbx_home[@]}")" ;;
		@job) words+=" $(_sbx_ask jobs "${_sbx_home[@]}" "${_sbx_agent[@]}")" ;;
		@image) words+=" $(_sbx_ask images "${_sbx_home[@]}")" ;;
		@plugin) words+=" $(_sbx_ask plugins "${_sbx_home[@]}")" ;;
		@key) words+=" $(_sbx_ask keys "${_sbx_global[@]}")" ;;
		@command)
			mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
			return
			;;
		@dir)
			_sbx_dirs "$cur"
			return
			;;
		@cwd)
			_sbx_dirs "$cur" "$(_sbx_ask cwd "${_sbx_home[@]}" "${_sbx_agent[@]}")"
			return
			;;
		@file)
			compopt -o default 2>/dev/null
			COMPREPLY=()
			return
			;;
		@*) ;;
		*) words+=" $item" ;;
		esac
	done
	_sbx_reply "$words" "$cur"
}

# _sbx_note OPTION VALUE: remember what changes the candidates (the state
# root, the agent, config's --global).
_sbx_note()
{
	case $1 in
	--home) _sbx_home=(--home "$2") ;;
	--agent) _sbx_agent=(--agent "$2") ;;
	*) [[ ${_sbx_val[$1]-} == @agent ]] && _sbx_agent=(--agent "$2") ;;
	esac
}

# _sbx_load CMD SUB...: the options of the (sub)command into _sbx_val
# (OPTION -> SPEC; empty for a flag).
_sbx_load()
{
	local o v

	_sbx_val=()
	while IFS=$'\t' read -r o v; do
		[[ -n $o ]] && _sbx_val[$o]=$v
	done < <(_sbx_ask options "$@")
}

_sbx()
{
	local _sbx_bin=${COMP_WORDS[0]} cur w cmd subs spec take="" ch
	local i j k n glue=0 dd=-1 npos=0
	local -a W=() subw=() _sbx_home=() _sbx_agent=() _sbx_global=()
	local -A _sbx_val=()

	COMPREPLY=()
	# `--opt=value`: bash splits at `=` (COMP_WORDBREAKS); join it back.
	for ((j = 0; j <= COMP_CWORD; j++)); do
		w=${COMP_WORDS[j]}
		if [[ $w == "=" && ${#W[@]} -gt 0 && ${W[-1]} == --* ]]; then
			W[-1]+="="
			glue=1
		elif ((glue)); then
			W[-1]+=$w
			glue=0
		else
			W+=("$w")
		fi
	done
	n=$((${#W[@]} - 1))
	cur=${W[n]}

	if ((n == 1)); then
		if [[ $cur == -* ]]; then
			_sbx_reply "$(_sbx_ask options | cut -f1)" "$cur"
		else
			_sbx_reply "$(_sbx_ask commands)" "$cur"
		fi
		return 0
	fi
	cmd=${W[1]}
	case $cmd in
	help)
		((n == 2)) && _sbx_reply "$(_sbx_ask commands)" "$cur"
		return 0
		;;
	-*) return 0 ;;
	esac

	# The words before the current one: options (and their values),
	# subcommand words, operands, `--`.
	_sbx_load "$cmd"
	subs=$(_sbx_ask subcommands "$cmd")
	for ((i = 2; i < n; i++)); do
		w=${W[i]}
		if [[ -n $take ]]; then
			_sbx_note "$take" "$w"
			take=""
			continue
		fi
		if ((dd >= 0)); then
			npos=$((npos + 1))
			continue
		fi
		case $w in
		--)
			dd=$i
			npos=0
			;;
		--*=*) _sbx_note "${w%%=*}" "${w#*=}" ;;
		--global | -g) _sbx_global=(--global) ;;
		--*) [[ -n ${_sbx_val[$w]-} ]] && take=$w ;;
		-?*)
			for ((k = 1; k < ${#w}; k++)); do
				ch=-${w:k:1}
				if [[ -n ${_sbx_val[$ch]-} ]]; then
					if ((k + 1 < ${#w})); then
						_sbx_note "$ch" "${w:k+1}"
					else
						take=$ch
					fi
					break
				fi
			done
			;;
		*)
			if ((npos == 0)) && [[ $'\n'$subs$'\n' == *$'\n'$w$'\n'* ]]; then
				subw+=("$w")
				_sbx_load "$cmd" "${subw[@]}"
				subs=$(_sbx_ask subcommands "$cmd" "${subw[@]}")
			else
				npos=$((npos + 1))
			fi
			;;
		esac
	done

	# The value of an option.
	if [[ -n $take ]]; then
		_sbx_values "$cur" "${_sbx_val[$take]}"
		return 0
	fi
	if [[ $cur == --*=* && -n ${_sbx_val[${cur%%=*}]-} ]]; then
		_sbx_values "${cur#*=}" "${_sbx_val[${cur%%=*}]}"
		return 0
	fi
	spec=$(_sbx_ask operands "$cmd" "${subw[@]}")
	# After `--`: the command to run, then its arguments.
	if ((dd >= 0)); then
		if [[ $spec == @command ]] && ((npos == 0)); then
			_sbx_values "$cur" @command
		else
			compopt -o default 2>/dev/null
		fi
		return 0
	fi
	# `--` comes before a command to run.
	[[ $spec == @command ]] && dd=" --" || dd=""
	if [[ $cur == -* ]]; then
		_sbx_reply "${!_sbx_val[*]}$dd" "$cur"
		return 0
	fi
	if ((npos == 0)) && [[ -n $subs ]]; then
		_sbx_reply "$subs$dd" "$cur"
	elif ((npos == 0)) && [[ -n $spec && $spec != @command ]]; then
		_sbx_values "$cur" "$spec"
	elif [[ $spec == @file ]]; then
		compopt -o default 2>/dev/null
	fi
	return 0
}

complete -F _sbx sbx
