/* SPDX-License-Identifier: MIT */
/* The configuration keys: the one table (see keys.h) and what is derived
 * from it: lookup, the hints for a key or section that is not there, the
 * section list, and the defaults, which go through the same parsers as the
 * file so that a default can never be a value the loader would refuse.
 * Adding a key is one line here (and the docs, which test/unit/
 * test_config_docs.c checks against this table). */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ini/internal.h"
#include "ini/keys.h"

/* Offset and size of a field of struct s5_config. */
#define AT(member) offsetof(struct s5_config, member), sizeof(((struct s5_config *)0)->member)

static const char *const mode_words[] = {"thread", "process", NULL};
static const char *const level_words[] = {"error", "warn", "info", "debug", NULL};
static const char *const icmp_words[] = {"off", "reply", NULL};
static const char *const udp_words[] = {"off", "associate", NULL};
static const char *const upstream_words[] = {"socks5", "socks4", "http", "shadowsocks", NULL};
static const char *const ss_words[] = {"chacha20-ietf-poly1305",
                                       "aes-128-gcm",
                                       "aes-256-gcm",
                                       "2022-blake3-aes-128-gcm",
                                       "2022-blake3-aes-256-gcm",
                                       "2022-blake3-chacha20-poly1305",
                                       NULL};
static const char *const balance_words[] = {"failover", "round-robin", "least-connections", "hash", NULL};
/* A group's strategies: [balance]'s four, then fastest and select (enum s5_balance). */
static const char *const group_words[] = {"failover", "round-robin", "least-connections", "hash", "fastest",
                                          "select",   NULL};

/* An enum field is read and written as an int (types.c). */
_Static_assert(sizeof(enum s5_mode) == sizeof(int), "enum s5_mode is not an int");
_Static_assert(sizeof(enum s5_log_level) == sizeof(int), "enum s5_log_level is not an int");
_Static_assert(sizeof(enum s5_upstream_type) == sizeof(int), "enum s5_upstream_type is not an int");
_Static_assert(sizeof(enum s5_balance) == sizeof(int), "enum s5_balance is not an int");

/* A key of every [upstream NAME] section: declared at upstreams[0], moved
 * to the section's upstream by upstream_sections.c. */
#define UP(member) AT(upstreams[0].member), .upstream = true
/* A key of every [group NAME] section: declared at groups[0], moved to the
 * section's group by group_sections.c. Every one is live. */
#define GR(member) AT(groups[0].member), .group = true, .live = true

/* The order is the order of --check-config and of the "expected one of"
 * hints; within a sockaddr, address comes before port (the defaults). */
static const struct s5_key keys[] = {
  {"", "mode", &s5_type_enum, AT(mode), .words = mode_words, .def = "thread",
   .doc = "thread: one worker thread per queue; process: one worker process per queue under a supervisor"},
  {"", "queues", &s5_type_queues, AT(queues_configured), .max = S5_QUEUES_MAX, .def = "0",
   .doc = "TUN queues and workers, 0 = one per online CPU"},

  {"tun", "name", &s5_type_ifname, AT(tun.name), .def = "tun0",
   .doc = "device name, 1..15 characters [A-Za-z0-9_.-]"},
  /* 1280 is the IPv6 minimum link MTU (RFC 8200): the kernel drops IPv6 from
   * a device below it, and one floor for both families keeps it simple.
   * 65535 is the largest IP packet (and lwIP keeps the MTU in 16 bits). */
  {"tun", "mtu", &s5_type_uint, AT(tun.mtu), .min = 1280, .max = 65535, .def = "8500", .doc = "device MTU"},
  /* The kernel's queue toward the workers (the tun ring of each queue):
   * 500 by default, which a storm of SYNs overflows (docs/router.md). */
  {"tun", "txqueuelen", &s5_type_uint, AT(tun.txqueuelen), .min = 0, .max = 1000000, .def = "4096",
   .doc = "transmit queue of a device s5tund creates, packets; 0 = the kernel's default (500)"},
  /* Either family may be empty; s5_config_check() wants at least one. */
  {"tun", "ipv4", &s5_type_prefix, AT(tun.ipv4), .family = AF_INET, .def = "198.18.0.1/15",
   .doc = "address/prefix of the device; may be empty if ipv6 is set"},
  {"tun", "ipv6", &s5_type_prefix, AT(tun.ipv6), .family = AF_INET6, .def = "",
   .doc = "address/prefix of the device, e.g. fc00::1/64"},
  {"tun", "persist", &s5_type_bool, AT(tun.persist), .def = "false", .doc = "keep the device after exit"},
  {"tun", "icmp", &s5_type_enum, AT(tun.icmp_reply), .words = icmp_words, .def = "off",
   .doc = "off: drop ICMP echo requests; reply: answer them for any address"},
  {"tun", "offload", &s5_type_bool, AT(tun.offload), .def = "true",
   .doc = "IFF_VNET_HDR with checksum and TSO offloads (64 KiB segments both ways)"},
  {"tun", "auto-route", &s5_type_bool, AT(tun.auto_route), .def = "false",
   .doc = "route everything but packets with [socks5] mark into the device"},
  {"tun", "kill-switch", &s5_type_bool, AT(tun.kill_switch), .def = "true",
   .doc =
     "with auto-route: block tunnel-bound traffic while the device is absent instead of sending it around"},
  {"tun", "exclude-uid", &s5_type_uids, AT(tun.exclude_uid), .def = "",
   .doc = "with auto-route: these users' traffic never enters the tunnel (uids, names, ranges 1000-1999)"},
  {"tun", "include-uid", &s5_type_uids, AT(tun.include_uid), .def = "",
   .doc = "with auto-route: only these users' traffic enters the tunnel (not with exclude-uid)"},
  {"tun", "exclude-local", &s5_type_bool, AT(tun.exclude_local), .def = "true",
   .doc = "with auto-route: the host's connected networks (every non-default route of the main table) and "
          "connections into the host from outside the tunnel stay out of it"},
  /* Live: a reload installs the new lists before it removes the old ones. */
  {"tun", "route-exclude", &s5_type_prefixes, AT(tun.route_exclude), .live = true, .def = "",
   .doc = "with auto-route: prefixes that never enter the tunnel, either family, comma-separated (wins over "
          "route-include)"},
  {"tun", "route-include", &s5_type_prefixes, AT(tun.route_include), .live = true, .def = "",
   .doc = "with auto-route: only these prefixes enter the tunnel; empty = everything"},
  {"tun", "route-exclude-file", &s5_type_prefix_file, AT(tun.route_exclude_file), .live = true, .def = "",
   .doc = "with auto-route: a file of prefixes to exclude, one a line, # comments (absolute path)"},
  {"tun", "route-include-file", &s5_type_prefix_file, AT(tun.route_include_file), .live = true, .def = "",
   .doc = "with auto-route: a file of prefixes to include, one a line, # comments (absolute path)"},
  /* Checked by s5_config_check: a name as `ip netns` takes it, no auto-route. */
  {"tun", "netns", &s5_type_text, AT(tun.netns), .def = "",
   .doc = "create the device in this named network namespace (made if missing) with a default route via "
          "it; s5tund's proxy sockets stay in its own; empty = its own"},
  {"tun", "post-up", &s5_type_text, AT(tun.post_up), .def = "",
   .doc = "command run with /bin/sh once the device is up"},
  {"tun", "pre-down", &s5_type_text, AT(tun.pre_down), .def = "",
   .doc = "command run before the device goes"},

  {"socks5", "address", &s5_type_proxy, AT(socks5.addr), .live = true, .def = "127.0.0.1",
   .doc = "the proxy: an IPv4 or IPv6 literal (no host names: DNS may itself be in the tunnel)"},
  {"socks5", "port", &s5_type_port, AT(socks5.addr), .min = 1, .max = 65535, .live = true, .def = "1080",
   .doc = "the proxy's port"},
  /* RFC 1929 carries each field with a one-byte length: 1..255 bytes; empty
   * means not set, and s5_config_check() wants both or neither. */
  {"socks5", "username", &s5_type_text, AT(socks5.username), .live = true, .def = "",
   .doc = "RFC 1929 authentication, both or neither, 1..255 bytes each"},
  {"socks5", "password", &s5_type_secret, AT(socks5.password), .live = true, .def = "",
   .doc = "RFC 1929 password (--check-config prints ***)"},
  {"socks5", "mark", &s5_type_mark, AT(socks5.mark), .max = 4294967295ul, .def = "0",
   .doc = "SO_MARK on sockets to the proxy, decimal or 0x hex, 0 = none"},
  {"socks5", "pipeline", &s5_type_bool, AT(socks5.pipeline), .live = true, .def = "false",
   .doc = "send greeting, auth and CONNECT in one write (servers that read a stream)"},
  /* Bounded: each is an idle session at the proxy (a process or thread for
   * some servers) and about 1.2 KB here, per worker. */
  {"socks5", "pool", &s5_type_uint, AT(socks5.pool), .max = 64, .live = true, .def = "4",
   .doc = "proxy connections per worker kept connected, greeted and authenticated ahead of time, so a new "
          "connection costs one round trip (its CONNECT); recycled before servers' idle timeouts, 0 = off"},
  /* Off by default: a client's SYN is answered only once CONNECT succeeded,
   * and that promise (a refused CONNECT looks like a refused connection)
   * stays unless asked for. */
  {"socks5", "optimistic", &s5_type_bool, AT(socks5.optimistic), .live = true, .def = "false",
   .doc = "answer a SYN at once and send the client's first bytes right behind the CONNECT: a round trip "
          "less, but a refused CONNECT resets a connection the client saw open (servers that read a "
          "stream)"},
  {"socks5", "udp", &s5_type_enum, AT(socks5.udp), .words = udp_words, .live = true, .def = "associate",
   .doc = "associate: UDP ASSOCIATE; off: ICMP port unreachable to the client"},
  /* Empty: the relay address the proxy returns (its own if unspecified). */
  {"socks5", "udp-address", &s5_type_addr, AT(socks5.udp_addr), .max = 0, .live = true, .def = "",
   .doc = "UDP relay address to use instead of the one the proxy returns"},

  /* Each [upstream NAME] section is one more proxy, in file order; the keys
   * are [socks5]'s (same defaults, same bounds) plus type and weight. */
  {"upstream", "type", &s5_type_enum, UP(type), .words = upstream_words, .live = true, .def = "socks5",
   .doc = "socks5; socks4 (4a for mapped names); http (CONNECT, RFC 9110); shadowsocks (AEAD, SIP004)"},
  {"upstream", "address", &s5_type_proxy, UP(addr), .live = true, .def = "127.0.0.1",
   .doc = "the proxy: an IPv4 or IPv6 literal"},
  {"upstream", "port", &s5_type_port, UP(addr), .min = 1, .max = 65535, .live = true, .def = "1080",
   .doc = "the proxy's port"},
  {"upstream", "username", &s5_type_text, UP(username), .live = true, .def = "",
   .doc = "socks5: RFC 1929 with password; socks4: the user id; http: Basic with password"},
  {"upstream", "password", &s5_type_secret, UP(password), .live = true, .def = "",
   .doc = "socks5 and http; shadowsocks: the key's, 2022: the key in base64, or iPSK:uPSK for a multi-user "
          "server (--check-config prints ***); socks4 has none"},
  {"upstream", "method", &s5_type_enum, UP(ss_method), .words = ss_words, .live = true,
   .def = "chacha20-ietf-poly1305",
   .doc =
     "shadowsocks: chacha20-ietf-poly1305, aes-128-gcm, aes-256-gcm; 2022-blake3-aes-128-gcm, "
     "2022-blake3-aes-256-gcm, 2022-blake3-chacha20-poly1305 (TCP and UDP; password: base64 of the key)"},
  {"upstream", "mark", &s5_type_mark, UP(mark), .max = 4294967295ul, .def = "0",
   .doc = "SO_MARK on sockets to the proxy, decimal or 0x hex, 0 = none"},
  {"upstream", "pipeline", &s5_type_bool, UP(pipeline), .live = true, .def = "false",
   .doc = "socks5: send greeting, auth and CONNECT in one write"},
  {"upstream", "pool", &s5_type_uint, UP(pool), .max = 64, .live = true, .def = "4",
   .doc = "proxy connections per worker kept ready ahead of time, 0 = off"},
  {"upstream", "optimistic", &s5_type_bool, UP(optimistic), .live = true, .def = "false",
   .doc = "answer a SYN at once and send the client's first bytes right behind the CONNECT"},
  {"upstream", "udp", &s5_type_enum, UP(udp), .words = udp_words, .live = true, .def = "associate",
   .doc =
     "socks5 and shadowsocks: associate (shadowsocks: its UDP relay, ss-server -u) or off; other types never carry UDP"},
  {"upstream", "udp-address", &s5_type_addr, UP(udp_addr), .max = 0, .live = true, .def = "",
   .doc = "socks5: UDP relay address to use instead of the one the proxy returns"},
  {"upstream", "weight", &s5_type_uint, UP(weight), .min = 1, .max = 1000, .live = true, .def = "1",
   .doc = "share of new sessions under [balance] round-robin, 1..1000"},
  /* TLS to the proxy (core/socks5/tls.c): an HTTPS proxy, SOCKS5 inside TLS. */
  {"upstream", "tls", &s5_type_bool, UP(tls), .live = true, .def = "false",
   .doc = "http and socks5: TLS 1.2+ to the proxy (an HTTPS proxy; SOCKS5 inside TLS), certificate and name "
          "verified"},
  {"upstream", "tls-server-name", &s5_type_text, UP(tls_server_name), .live = true, .def = "",
   .doc = "with tls: the name sent (SNI) and verified in the proxy's certificate; empty = the address "
          "(verified against the certificate's IP addresses)"},
  {"upstream", "tls-ca-file", &s5_type_text, UP(tls_ca_file), .live = true, .def = "",
   .doc = "with tls: PEM file of the CAs trusted for the proxy's certificate; empty = the system's store"},
  {"upstream", "tls-verify", &s5_type_bool, UP(tls_verify), .live = true, .def = "true",
   .doc = "with tls: verify the proxy's certificate and name; false is warned about at start"},
  {"upstream", "tls-cert-file", &s5_type_text, UP(tls_cert_file), .live = true, .def = "",
   .doc = "with tls: PEM client certificate (chain) shown to the proxy, with tls-key-file; empty = none"},
  {"upstream", "tls-key-file", &s5_type_text, UP(tls_key_file), .live = true, .def = "",
   .doc = "with tls: PEM private key of tls-cert-file"},
  /* Well under connect-timeout: a black hole (takes the TCP connection,
   * never answers) costs this much before the next upstream is tried. */
  {"upstream", "handshake-timeout", &s5_type_uint, UP(handshake_timeout), .min = 1, .max = 3600, .live = true,
   .def = "3",
   .doc = "seconds the proxy has to answer at all (socks5: the greeting; http, socks4: the CONNECT); then "
          "the next upstream, and it counts toward down"},

  /* Outbound groups: upstreams a rule (or [rules] default) names as one
   * (docs/upstreams-balance.md). members is resolved once every upstream
   * is known (group_sections.c). */
  {"group", "members", &s5_type_members, GR(members), .def = "",
   .doc = "the group's upstreams, in order, comma-separated (upstream names: groups do not nest)"},
  {"group", "strategy", &s5_type_enum, GR(strategy), .words = group_words, .def = "failover",
   .doc = "failover, round-robin, least-connections, hash (as [balance], over the members); fastest: the "
          "lowest probed latency within tolerance; select: the operator's choice"},
  {"group", "selected", &s5_type_text, GR(selected), .def = "",
   .doc = "select: the member chosen (a member's name); empty = the first member"},
  {"group", "probe", &s5_type_probe, GR(probe), .def = "",
   .doc = "fastest: http://HOST:PORT/PATH (time to the status line) or connect HOST:PORT (time to the "
          "proxy's grant), through each member"},
  {"group", "probe-interval", &s5_type_uint, GR(probe_interval), .min = 1, .max = 3600, .def = "10",
   .doc = "fastest: seconds between probes of each member (jittered)"},
  {"group", "probe-timeout", &s5_type_uint, GR(probe_timeout), .min = 1, .max = 3600, .def = "5",
   .doc = "fastest: seconds a probe may take"},
  {"group", "tolerance", &s5_type_uint, GR(tolerance), .max = 60000, .def = "50",
   .doc = "fastest: milliseconds by which another member must be faster to take over"},

  /* Several upstreams: which one a new session takes, and when one is
   * taken out and put back (core/shared/uptab.h, docs/upstreams-balance.md). */
  {"balance", "strategy", &s5_type_enum, AT(balance.strategy), .words = balance_words, .live = true,
   .def = "failover",
   .doc = "failover: the first healthy upstream in file order; round-robin: by weight; least-connections: "
          "fewest open sessions per weight; hash: by destination, one site keeps its upstream"},
  {"balance", "fail-after", &s5_type_uint, AT(balance.fail_after), .min = 1, .max = 1000, .def = "3",
   .live = true,
   .doc = "set-ups failed in a row (connect, handshake, auth, timeout) that mark an upstream down"},
  {"balance", "check-interval", &s5_type_uint, AT(balance.check_interval), .min = 1, .max = 3600,
   .live = true, .def = "5",
   .doc = "seconds between checks of a down upstream (jittered); one that answers is up again"},
  {"balance", "check-timeout", &s5_type_uint, AT(balance.check_timeout), .min = 1, .max = 3600, .live = true,
   .def = "5", .doc = "seconds a check may take (connect-timeout bounds it too)"},
  {"balance", "check-target", &s5_type_listen, AT(balance.check_target), .live = true, .def = "",
   .doc = "ADDR:PORT each check CONNECTs to through the upstream; empty = the last destination reached"},

  /* Outbound names are checked once every upstream is known (rules_syntax.c). */
  {"rules", "default", &s5_type_text, AT(rules.def), .live = true, .def = "",
   .doc = "outbound of flows no rule matches: an upstream's or a group's name, direct or block; empty = any "
          "upstream, as [balance] chooses"},
  {"rules", "mark", &s5_type_mark, AT(rules.mark), .live = true, .def = "0",
   .doc = "SO_MARK of direct connections, so that they leave around the tunnel; 0 = auto-route's mark"},
  {"rules", "resolver", &s5_type_addr, AT(rules.resolver), .max = 53, .live = true, .def = "",
   .doc = "DNS server (port 53) that resolves direct's names, asked with direct's mark; empty = the system's "
          "resolver (which must not be s5tund's own mapped DNS)"},
  {"rules", "rule", &s5_type_rule, AT(rules), .live = true, .repeat = true, .def = "",
   .doc =
     "MATCHERS -> OUTBOUND (domain: full: keyword: dst: src: port: proto:), repeatable, first match wins"},
  {"rules", "rules-file", &s5_type_rule_file, AT(rules), .live = true, .repeat = true, .def = "",
   .doc = "PATH [-> OUTBOUND]: a rule a line, or with an outbound a bare name or prefix a line; repeatable"},

  /* [sniff] (core/tcp/sniffing.c, docs/rules.md): the name of a flow that
   * has none, from its first bytes, for [rules] alone. */
  {"sniff", "tls", &s5_type_ports, AT(sniff.tls), .live = true, .def = "",
   .doc =
     "ports whose TCP flows are sniffed for a TLS ClientHello's server_name, e.g. 443, 8443; empty = none"},
  {"sniff", "http", &s5_type_ports, AT(sniff.http), .live = true, .def = "",
   .doc = "ports whose TCP flows are sniffed for an HTTP request's Host, e.g. 80, 8080; empty = none"},
  {"sniff", "quic", &s5_type_ports, AT(sniff.quic), .live = true, .def = "",
   .doc = "UDP ports whose QUIC Initials are sniffed for their server_name, e.g. 443; empty = none"},
  {"sniff", "timeout", &s5_type_uint, AT(sniff.timeout), .min = 1, .max = 10000, .live = true, .def = "300",
   .doc = "milliseconds a sniffed flow's client may take to send its first bytes; then routed by address"},
  {"sniff", "override", &s5_type_bool, AT(sniff.override), .live = true, .def = "false",
   .doc = "false: the name chooses the rule, the CONNECT goes to the address; true: CONNECT by the name "
          "(the proxy resolves it)"},
  {"sniff", "skip", &s5_type_sniff_skip, AT(sniff.skip), .live = true, .def = "",
   .doc = "address prefixes never sniffed, and names (with the names under them) not used when found"},

  /* A connect that takes an hour is already a failure. */
  {"session", "connect-timeout", &s5_type_uint, AT(session.connect_timeout), .min = 1, .max = 3600,
   .live = true, .def = "10", .doc = "seconds for the proxy connect and SOCKS5 handshake"},
  /* Up to a day: longer idle flows are better served by keepalives in the
   * application than by pinning memory here. */
  {"session", "tcp-idle-timeout", &s5_type_uint, AT(session.tcp_idle_timeout), .min = 1, .max = 86400,
   .live = true, .def = "600", .doc = "seconds without a byte either way before a TCP session is reset"},
  /* A million sessions per worker already exceeds any sane fd limit; a
   * bigger number is more likely a typo than a plan. */
  {"session", "max-sessions", &s5_type_uint, AT(session.max_sessions), .max = 1000000, .live = true,
   .def = "0", .doc = "TCP sessions per worker, 0 = unlimited; beyond it new SYNs get a RST"},
  /* UDP has no close: an association ends after this long without a
   * datagram either way (or when the proxy closes its control connection). */
  {"session", "udp-idle-timeout", &s5_type_uint, AT(session.udp_idle_timeout), .min = 1, .max = 86400,
   .live = true, .def = "60", .doc = "seconds without a datagram either way before a UDP association ends"},
  /* Interrupt moderation for the relays' datagrams (udp_io.c), as a NIC's
   * rx-usecs: only while they queue up. */
  {"session", "udp-coalesce", &s5_type_uint, AT(session.udp_coalesce), .max = 10000, .live = true,
   .def = "250",
   .doc = "microseconds a worker waits before reading relays again after it found two or more datagrams "
          "waiting, 0 = off"},
  {"session", "tcp-buffer", &s5_type_uint, AT(session.tcp_buffer), .min = S5_TCP_BUFFER_MIN,
   .max = S5_TCP_BUFFER_MAX, .live = true, .def = "524288", .doc = "bytes one TCP session holds each way"},

  {"dns", "address", &s5_type_addrs, AT(dns.addr), .max = 53, .live = true, .def = "",
   .doc = "mapped resolver (port 53) inside the device's network: an IPv4 address, an IPv6 one, or both "
          "comma-separated; empty = off"},
  {"dns", "network", &s5_type_pool, AT(dns.network), .def = "100.64.0.0/10",
   .doc = "IPv4 pool of mapped addresses, /30 or wider, no host bits"},
  /* AAAA answers, from the same entry as the name's A answer. */
  {"dns", "network6", &s5_type_pool6, AT(dns.network6), .def = "",
   .doc = "IPv6 pool of mapped addresses (e.g. fdff:5335::/96), /120 or wider; empty = AAAA gets no answer"},
  /* An entry takes about 270 bytes of shared memory (the default is under
   * 3 MB); s5_config_check() holds it to the pool's size. */
  {"dns", "cache-size", &s5_type_uint, AT(dns.cache_size), .min = 1, .max = 1000000, .def = "10000",
   .doc = "names kept (at most the pool size), least recently used recycled"},
  /* Read per datagram and per SYN, so it is live; s5_config_check() wants
   * an address with it. */
  {"dns", "hijack", &s5_type_bool, AT(dns.hijack), .live = true, .def = "false",
   .doc = "answer DNS (UDP and TCP) to port 53 of every address entering the device with the mapped "
          "resolver, not only at address"},
  /* Written by the main process (core/dns/dnsmap.c), read once at start. */
  {"dns", "state", &s5_type_text, AT(dns.state), .def = "",
   .doc = "file keeping the mapped names across restarts; empty = dnsmap in systemd's StateDirectory= "
          "($STATE_DIRECTORY), else none; off = none"},

  {"log", "level", &s5_type_enum, AT(log.level), .words = level_words, .live = true, .def = "info",
   .doc = "error, warn, info or debug"},
  /* Only the name is checked: opening it is the logger's job, at start-up. */
  {"log", "file", &s5_type_text, AT(log.file), .live = true, .def = "",
   .doc = "empty = stderr, syslog = syslog, else a file (reopened on SIGHUP)"},
  {"log", "sessions", &s5_type_bool, AT(log.sessions), .live = true, .def = "false",
   .doc = "a line per finished TCP session and UDP association: who, where, bytes, duration, how it ended"},
  {"log", "sessions-max-per-second", &s5_type_uint, AT(log.sessions_max_per_second), .min = 1, .max = 1000000,
   .live = true, .def = "1000",
   .doc = "session lines per worker and second at most; the rest counted and summed up"},

  {"run", "user", &s5_type_user, AT(run.user), .def = "",
   .doc = "workers drop to this user (keeping CAP_NET_ADMIN only if mark is set); empty = stay"},
  {"run", "pid-file", &s5_type_text, AT(run.pid_file), .def = "", .doc = "written once every queue serves"},
  {"run", "drain-timeout", &s5_type_uint, AT(run.drain_timeout), .max = 3600, .live = true, .def = "5",
   .doc = "seconds open TCP sessions get after SIGTERM"},
  /* Every session holds a socket to the proxy (a UDP association two): a
   * daemon meant for many connections needs more than the usual 1024. The
   * kernel's own ceiling (fs.nr_open) is checked at start-up by setrlimit. */
  {"run", "limit-nofile", &s5_type_uint, AT(run.limit_nofile), .max = 16777216, .def = "0",
   .doc = "RLIMIT_NOFILE to set at start, 0 = leave as is"},

  /* sun_path holds 108 bytes including the terminating NUL. */
  {"stats", "socket", &s5_type_text, AT(stats.socket), .live = true, .def = "",
   .doc = "unix socket answering one JSON document of counters per connection"},
  /* Off by default: an open port is a decision. The counters say how much
   * goes where, so a non-loopback address is warned about at start. */
  {"stats", "http", &s5_type_listen, AT(stats.http), .def = "",
   .doc = "ADDR:PORT answering GET /metrics (Prometheus text format), e.g. 127.0.0.1:9553; empty = off"},
};

#define KEY_COUNT ((int)(sizeof keys / sizeof keys[0]))

int s5_config_key_count(void) { return KEY_COUNT; }

const struct s5_key *s5_config_key(int key) { return &keys[key]; }

/* The i-th distinct section in table order. */
const char *s5_config_section(int i) {
  for (int k = 0; k < KEY_COUNT; k++) {
    bool seen = false;
    for (int j = 0; j < k && !seen; j++) seen = strcmp(keys[j].section, keys[k].section) == 0;
    if (!seen && i-- == 0) return keys[k].section;
  }
  return NULL;
}

int s5_config_key_find(const char *section, const char *name) {
  for (int i = 0; i < KEY_COUNT; i++)
    if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0) return i;
  return -1;
}

const char *s5_config_key_section(int key) { return keys[key].section; }

const char *s5_config_key_name(int key) { return keys[key].name; }

int s5_config_key_set(struct s5_config *cfg, int key, const char *value, char *err, size_t errlen) {
  return keys[key].type->parse(&keys[key], cfg, value, err, errlen);
}

static bool section_known(const char *section) {
  for (int i = 0; s5_config_section(i) != NULL; i++)
    if (strcmp(s5_config_section(i), section) == 0) return true;
  return false;
}

/* Joins the keys of a section ("name, mtu, ...") or, for section NULL, the
 * named sections ("[tun], [socks5], ... or [stats]"). */
static void list_names(const char *section, char *buf, size_t len) {
  const char *names[KEY_COUNT];
  int n = 0;
  if (section != NULL) {
    for (int i = 0; i < KEY_COUNT; i++)
      if (strcmp(keys[i].section, section) == 0) names[n++] = keys[i].name;
  } else {
    for (int i = 0; s5_config_section(i) != NULL; i++)
      if (s5_config_section(i)[0] != '\0') names[n++] = s5_config_section(i);
  }
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && at < len; i++) {
    const char *sep = i == 0 ? "" : section == NULL && i == n - 1 ? " or " : ", ";
    bool up = section == NULL && (strcmp(names[i], "upstream") == 0 || strcmp(names[i], "group") == 0);
    at += (size_t)snprintf(buf + at, len - at, section == NULL ? "%s[%s%s]" : "%s%s%s", sep, names[i],
                           up ? " NAME" : "");
  }
}

static void section_unknown(const char *section, char *err, size_t errlen) {
  char known[256];
  for (int i = 0; s5_config_section(i) != NULL; i++) {
    if (s5_config_section(i)[0] != '\0' && strcasecmp(s5_config_section(i), section) == 0) {
      snprintf(err, errlen, "unknown section [%s] (section names are lowercase: [%s])", section,
               s5_config_section(i));
      return;
    }
  }
  list_names(NULL, known, sizeof known);
  snprintf(err, errlen, "unknown section [%s] (expected %s)", section, known);
}

void s5_config_key_unknown(const char *section, const char *name, char *err, size_t errlen) {
  char known[256];
  if (!section_known(section)) {
    section_unknown(section, err, errlen);
    return;
  }
  /* Right name, wrong place or wrong case: point at the right spelling. */
  for (int i = 0; i < KEY_COUNT; i++) {
    if (strcmp(keys[i].name, name) != 0) continue;
    if (keys[i].section[0] == '\0')
      snprintf(err, errlen, "unknown key here (%s goes before the first [section])", name);
    else snprintf(err, errlen, "unknown key here (did you mean [%s] %s?)", keys[i].section, name);
    return;
  }
  for (int i = 0; i < KEY_COUNT; i++) {
    if (strcmp(keys[i].section, section) == 0 && strcasecmp(keys[i].name, name) == 0) {
      snprintf(err, errlen, "unknown key (key names are lowercase: %s)", keys[i].name);
      return;
    }
  }
  list_names(section, known, sizeof known);
  snprintf(err, errlen, "unknown key (expected one of: %s)", known);
}

int s5_config_set(struct s5_config *cfg, const char *section, const char *key, const char *value, char *err,
                  size_t errlen) {
  int i = s5_config_key_find(section, key);
  if (i < 0) {
    s5_config_key_unknown(section, key, err, errlen);
    return -1;
  }
  return s5_config_key_set(cfg, i, value, err, errlen);
}

/* One key's line as --check-config prints it, without the newline. */
void s5_key_line(const struct s5_key *k, const struct s5_config *cfg, char *buf, size_t len) {
  FILE *f = fmemopen(buf, len, "w");
  if (f == NULL) {
    snprintf(buf, len, "%s", k->name);
    return;
  }
  k->type->print(k, cfg, f);
  fclose(f);
  buf[len - 1] = '\0';
  size_t n = strlen(buf);
  if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
}
