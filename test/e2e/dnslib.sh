# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What udp.sh, dns.sh and pool.sh share, sourced after lib.sh: the mapped resolver's
# addresses, target.test in S's /etc/hosts, dnsmasq in S, s5tund with extra
# INI sections at log level debug, udpclient.py in C, and waits on
# s5tund's log. The caller sets MODE and QUEUES.

# shellcheck disable=SC2034  # used by udp.sh and dns.sh
DNS_ADDR=198.18.0.2
DNS_POOL=100.64.0.0/10
DNS_ADDR6=fc00::53
DNS_POOL6=fdff:5335::/96

# /etc/netns/<S>/hosts is bind-mounted over /etc/hosts by `ip netns exec`:
# the proxies in S resolve target.test there. Removed on exit: call
# udp_install_exit after e2e_init (it replaces lib.sh's EXIT trap).
udp_exit() {
  local rc=$?
  trap - ERR
  set +e
  rm -rf "$NETNS_ETC"
  (exit "$rc")    # e2e_cleanup takes the status from $?
  e2e_cleanup
}

udp_install_exit() {
  NETNS_ETC=/etc/netns/$NS_S
  trap udp_exit EXIT
}

udp_hosts() {
  mkdir -p "$NETNS_ETC"
  printf '127.0.0.1 localhost\n%s target.test\n' "$TGT4" >"$NETNS_ETC/hosts"
}

# dnsmasq in S on the targets' addresses, UDP and TCP port 53: *.example.test
# is TGT4 and TGT6, every other name is unknown (no upstream).
start_dnsmasq() {
  E2E_LOGS+=("$WORK/dnsmasq.log")
  ip netns exec "$NS_S" dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces \
    --listen-address="$TGT4" --listen-address="$TGT6" --except-interface=veth0 \
    --address=/example.test/"$TGT4" --address=/example.test/"$TGT6" \
    --pid-file="$WORK/dnsmasq.pid" --log-queries --log-facility=- \
    --user=root --group=root >"$WORK/dnsmasq.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    in_s ss -Hlun "sport = :53" | grep -qF "$TGT4" && { log "dnsmasq on $TGT4 and [$TGT6] port 53"; return 0; }
    sleep 0.1
  done
  fail "dnsmasq does not listen on $TGT4:53"
}

# start_s5 PROXY_ADDR PROXY_PORT EXTRA-INI: the usual configuration plus
# EXTRA-INI (whole sections) appended; log level debug (the teardown checks
# read association lines from the log). The file is $S5_CFG.
start_s5() {
  S5_CFG=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$1 CFG_PROXY_PORT=$2 CFG_LOG_LEVEL=debug \
    e2e_write_config "$S5_CFG"
  printf '\n%s\n' "$3" >>"$S5_CFG"
  e2e_start_s5tund --config "$S5_CFG"
}

uclient() {   # udpclient.py in C, bounded
  bg_wait ip netns exec "$NS_C" timeout -k 5 "${CLIENT_T:-$T_STEP}" "$PY" "$E2E_DIR/udpclient.py" "$@"
}

# udp_wait_log ERE SECONDS WHAT: until s5tund's log has a matching line.
udp_wait_log() {
  local line
  for _ in $(seq $(($2 * 10))); do
    line=$(grep -E -m 1 -- "$1" "$S5LOG" 2>/dev/null || true)
    [[ -n $line ]] && { log "s5tund log: $line"; return 0; }
    sleep 0.1
  done
  fail "no $3 in s5tund's log within $2s"
}

udp_count_log() { grep -cE -- "$1" "$S5LOG" 2>/dev/null || true; }

# start_sshd_socks PORT: OpenSSH's sshd in S (the binary unpacked from
# Debian's openssh-server package under the build tree by `make deps`, run
# as nobody: no privilege separation user, no host service touched), and
# ssh -D S_ADDR4:PORT logged in to it: a SOCKS5 server that does CONNECT
# and no UDP ASSOCIATE.
start_sshd_socks() {
  local port=$1 sshd=${S5_SSHD:-$E2E_DIR/../../build/openssh-server/usr/sbin/sshd} d=$WORK/sshd i
  [[ -x $sshd ]] || fail "no sshd at $sshd (run 'make deps')"
  mkdir -p "$d"
  ssh-keygen -q -t ed25519 -N "" -f "$d/host_key"
  ssh-keygen -q -t ed25519 -N "" -f "$d/client_key"
  cp "$d/client_key.pub" "$d/authorized_keys"
  chown -R nobody "$d"
  chmod 755 "$d"
  # sshd running as nobody takes nobody's shadow entry ("*") for a locked
  # account: in S only (ip netns exec binds /etc/netns/S/shadow over
  # /etc/shadow), nobody gets a readable entry without a password.
  mkdir -p "$NETNS_ETC"
  sed 's/^nobody:[^:]*:/nobody:NP:/' /etc/shadow >"$NETNS_ETC/shadow"
  chmod 644 "$NETNS_ETC/shadow"
  cat >"$d/sshd_config" <<EOC
ListenAddress $S_ADDR4:2222
HostKey $d/host_key
AuthorizedKeysFile $d/authorized_keys
PidFile $d/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowTcpForwarding yes
EOC
  E2E_LOGS+=("$d/sshd.log" "$d/ssh.log")
  ip netns exec "$NS_S" setpriv --reuid=nobody --regid=nogroup --clear-groups \
    "$sshd" -D -e -f "$d/sshd_config" >"$d/sshd.log" 2>&1 &
  e2e_wait_listen 2222 "$S_ADDR4"
  ip netns exec "$NS_S" ssh -N -D "$S_ADDR4:$port" -i "$d/client_key" -p 2222 \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
    -o ExitOnForwardFailure=yes nobody@"$S_ADDR4" >"$d/ssh.log" 2>&1 &
  e2e_wait_listen "$port" "$S_ADDR4"
  log "ssh -D on $S_ADDR4:$port through sshd on $S_ADDR4:2222"
}
