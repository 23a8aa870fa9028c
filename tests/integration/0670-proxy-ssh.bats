#!/usr/bin/env bats
# Git over SSH in `--network proxy` (issue 20): GIT_SSH_COMMAND runs
# `sbx-host connect %h %p`, a tunnel through the in-sandbox proxy endpoint;
# the proxy checks the name, port and addresses and relays SSH uninspected
# (port 22 is opaque; the test's sshd is on a port of its own, listed in
# opaque_ports).  The sshd is a throwaway on 127.0.0.1 with its own host
# key and config in the test's temp dir, run as the test user.
# sbx-test: unprivileged

load lib
load proxy
bats_require_minimum_version 1.5.0

SSHD=/usr/sbin/sshd

@test "sbx-host connect: GIT_SSH_COMMAND is set, the tunnel carries a server-first protocol; refusals say why" {
	need_proxy_tools
	start_banner
	write_sandbox_config
	write_agent_config alice "{\"opaque_ports\": [$BANNER_PORT]}"
	agent_ready alice
	run pexec alice sh -c 'printf "%s\n" "$GIT_SSH_COMMAND"'
	[ "$output" = "ssh -o ProxyCommand='/run/sbx/bin/sbx-host connect %h %p'" ]
	# A user's own wins.
	run sbx exec -q --network proxy --agent alice --env GIT_SSH_COMMAND=mine -- \
	    sh -c 'printf "%s\n" "$GIT_SSH_COMMAND"'
	[ "$output" = mine ]
	run pexec alice sh -c 'printf "ping\n" | /run/sbx/bin/sbx-host connect allowed.sbx.test "$0"' "$BANNER_PORT"
	echo "$output"
	[[ "$output" == banner-first*ping* ]]
	line=$(grep "\"port\":$BANNER_PORT" "$PLOG" | tail -n 1)
	[ "$(jq -r .verdict <<<"$line")" = allow ]
	# Refused by the policy: the reason on stderr, exit 1, nothing dialled.
	run pexec alice /run/sbx/bin/sbx-host connect evil.sbx.test 22
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"refused evil.sbx.test:22: 403 not_allowlisted"* ]]
	run pexec alice /run/sbx/bin/sbx-host connect 127.0.0.1 22
	[ "$status" -eq 1 ]
	[[ "$output" == *ip_literal* ]]
	# Port 22 is opaque but not open: allowed_ports still decides.
	run pexec alice /run/sbx/bin/sbx-host connect allowed.sbx.test 22
	[ "$status" -eq 1 ]
	[[ "$output" == *port_not_allowed* ]]
	# Bad operands.
	run pexec alice /run/sbx/bin/sbx-host connect 'a b' 22
	[ "$status" -eq 64 ]
	run pexec alice /run/sbx/bin/sbx-host connect allowed.sbx.test 0
	[ "$status" -eq 64 ]
}

@test "git push over SSH to a loopback sshd under an allowlisted name, through the proxy" {
	need_proxy_tools
	[ -x "$SSHD" ] || skip "sshd is not installed (Debian openssh-server)"
	command -v ssh-keygen >/dev/null || skip "ssh-keygen is not installed"
	command -v git >/dev/null || skip "git is not installed"
	me=$(id -un)
	shell=$(getent passwd "$me" | cut -d: -f7)
	case $shell in
	*/nologin|*/false|"") skip "the test user $me has no login shell ($shell) for sshd to run git-receive-pack" ;;
	esac
	T=$TEST_ROOT/ssh
	mkdir -p "$T"
	chmod 0755 "$T"
	ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey" -C host
	ssh-keygen -q -t ed25519 -N '' -f "$T/userkey" -C user
	cp "$T/userkey.pub" "$T/authorized_keys"
	chmod 0600 "$T/authorized_keys"
	port=$(free_port)
	cat > "$T/sshd_config" <<-EOF
		Port $port
		ListenAddress 127.0.0.1
		HostKey $T/hostkey
		PidFile $T/sshd.pid
		AuthorizedKeysFile $T/authorized_keys
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		UsePAM no
		StrictModes no
		PermitRootLogin prohibit-password
		AllowUsers $me
		LogLevel ERROR
	EOF
	[ "$(id -u)" -ne 0 ] || mkdir -p /run/sshd
	"$SSHD" -D -e -f "$T/sshd_config" 2> "$T/sshd.err" 3>&- &
	SERVER_PIDS+=("$!")
	for _ in $(seq 50); do
		"$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null && break
		sleep 0.1
	done
	git init -q --bare "$T/repo.git"
	chmod -R a+rwX "$T/repo.git"
	write_sandbox_config
	write_agent_config alice "{\"opaque_ports\": [$port],
	    \"allowed_domains\": [\"git.sbx.test:$port\"],
	    \"resolve\": {\"git.sbx.test\": \"127.0.0.1\"}}"
	agent_ready alice
	h=$(ahome alice)
	# The key and the host key, written by the sandbox's own user.
	pexec alice sh -c 'mkdir -p -m 700 "$HOME/.ssh" && cat > "$HOME/.ssh/id_ed25519" && chmod 600 "$HOME/.ssh/id_ed25519"' < "$T/userkey"
	printf '[git.sbx.test]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$T/hostkey.pub")" |
	    pexec alice sh -c 'cat > "$HOME/.ssh/known_hosts"'
	run pexec alice sh -c '
		set -e
		cd "$HOME" && rm -rf w && mkdir w && cd w
		git init -q && git config user.email a@sbx.test && git config user.name a
		echo hello > f && git add f && git commit -qm first
		git push -q "ssh://$0@git.sbx.test:$1$2" HEAD:refs/heads/main 2>&1
		echo pushed' "$me" "$port" "$T/repo.git"
	echo "$output"
	cat "$T/sshd.err" >&2 || true
	[ "$status" -eq 0 ]
	[[ "$output" == *pushed* ]]
	[ "$(git --git-dir="$T/repo.git" log --format=%s main)" = first ]
	line=$(grep "\"port\":$port" "$PLOG" | tail -n 1)
	[ "$(jq -r '[.verdict, .host, .method] | join(" ")' <<<"$line")" = \
	    "allow git.sbx.test CONNECT" ]
}
