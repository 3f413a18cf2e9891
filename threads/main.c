/* SPDX-License-Identifier: MIT */
/* s5tund: a TUN device in, SOCKS5 out, one worker per queue.
 *
 * On threads/, the top floor, because it starts a run mode
 * (threads/modes/) and the stats client: everything it calls lies below
 * it, and nothing in ini/, tun/ or core/ reaches up to threads/.
 *
 * Following one packet: tun/ opens the queues; threads/ starts a worker per
 * queue (core/worker/worker.c); core/netif/netif.c reads the packet into
 * lwIP; a SYN
 * becomes a session (core/tcp/session.c), which connects through the proxy
 * (core/tcp/handshake.c) and then relays bytes both ways (core/tcp/relay.c). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "ini/config.h"
#include "shared/rules.h"
#include "shared/conntab.h"
#include "dns/dns.h"
#include "dns/dnsmap.h"
#include "threads/cli/exec.h"
#include "threads/cli/explain.h"
#include "base/log.h"
#include "base/ossl.h"
#include "ctx/memtrim.h"
#include "base/privileges.h"
#include "threads/daemon/reload.h"
#include "threads/device/device.h"
#include "threads/modes/modes.h"
#include "shared/stats.h"
#include "shared/uptab.h"
#include "threads/ctl/stats_server.h"
#include "socks5/upstream.h"
#include "socks5/tls_ctx.h"

/* What a configuration needs to run at all, in open files of one process
 * (thread mode holds everything in one; process mode's supervisor holds
 * every queue): a fixed part (stdio, the log, the stats and metrics
 * sockets, the control loop, netlink, the claim on the device) and per
 * queue its fd, its loop's (epoll, eventfd, libuv's reserve fd) and room
 * for a few sessions (a socket to the proxy each, two per UDP association).
 * Below it a start fails, or serves next to nothing, far from the cause. */
#define S5_NOFILE_FIXED 32
#define S5_NOFILE_PER_QUEUE 8

static unsigned long long nofile_floor(unsigned queues) {
  return S5_NOFILE_FIXED + (unsigned long long)S5_NOFILE_PER_QUEUE * queues;
}

/* The hard limit cannot be raised (no CAP_SYS_RESOURCE: a container, a
 * unit's LimitNOFILE=, a login session; or n above fs.nr_open): the soft
 * limit to the hard one, with a warning: fewer connections rather than no
 * daemon. Only a hard limit below what the configuration needs at all
 * stops the start. */
static int nofile_to_hard(unsigned n, unsigned queues, struct rlimit rl) {
  unsigned long long hard = rl.rlim_max, need = nofile_floor(queues);
  if (hard < need) {
    s5_error(
      "[run] limit-nofile = %u: the hard limit of open files is %llu and cannot be raised (needs "
      "CAP_SYS_RESOURCE), below the minimum of %llu for %u %s",
      n, hard, need, queues, queues == 1 ? "queue" : "queues");
    return -1;
  }
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
    s5_error("[run] limit-nofile: setrlimit(RLIMIT_NOFILE) to the hard limit %llu: %s", hard,
             strerror(errno));
    return -1;
  }
  s5_warn(
    "[run] limit-nofile = %u: the hard limit of open files is %llu and cannot be raised (needs "
    "CAP_SYS_RESOURCE; at most sysctl fs.nr_open): running with %llu",
    n, hard, hard);
  return 0;
}

/* [run] limit-nofile: the soft limit to n, the hard one raised to n if it
 * is lower; where it cannot be, nofile_to_hard(). Before any worker exists,
 * so threads and forked workers all get it. */
static int raise_nofile(unsigned n, unsigned queues) {
  if (n == 0) return 0;
  if (n < nofile_floor(queues)) {
    s5_error("[run] limit-nofile = %u: below the minimum of %llu open files for %u %s", n,
             nofile_floor(queues), queues, queues == 1 ? "queue" : "queues");
    return -1;
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
    s5_error("[run] limit-nofile: getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
    return -1;
  }
  struct rlimit want = {.rlim_cur = n, .rlim_max = rl.rlim_max < n ? n : rl.rlim_max};
  if (setrlimit(RLIMIT_NOFILE, &want) == 0) return 0;
  if (errno == EPERM && rl.rlim_max < n) return nofile_to_hard(n, queues, rl);
  s5_error("[run] limit-nofile = %u: setrlimit(RLIMIT_NOFILE): %s", n, strerror(errno));
  return -1;
}

/* s5tund --stats|--connections [SOCKET] [--json]: a client of a running daemon. */
static int stats_command(int argc, char **argv) {
  const char *path = S5_STATS_DEFAULT_SOCKET;
  int json = 0, connections = strcmp(argv[1], "--connections") == 0;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) json = 1;
    else if (argv[i][0] != '-') path = argv[i];
    else {
      fprintf(stderr, "s5tund: %s: unknown option %s (usage: s5tund %s [SOCKET] [--json])\n", argv[1],
              argv[i], argv[1]);
      return 2;
    }
  }
  return connections ? s5_connections_client(path, json) : s5_stats_client(path, json);
}

/* s5tund --select GROUP MEMBER [SOCKET]: a select group's member, live. */
static int select_command(int argc, char **argv) {
  if (argc < 4 || argc > 5 || argv[2][0] == '-' || argv[3][0] == '-' || (argc == 5 && argv[4][0] == '-')) {
    fprintf(stderr, "s5tund: usage: s5tund --select GROUP MEMBER [SOCKET]\n");
    return 2;
  }
  return s5_select_client(argc == 5 ? argv[4] : S5_STATS_DEFAULT_SOCKET, argv[2], argv[3]);
}

int main(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "--stats") == 0 || strcmp(argv[1], "--connections") == 0))
    return stats_command(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "--select") == 0) return select_command(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "exec") == 0) return s5_exec_command(argc, argv);
  s5_memtrim_setup(); /* before any thread or worker; refused (a sanitizer), the default holds */

  static struct s5_config cfg;                  /* read-only once loaded; every worker reads it */
  s5_config_tls_pair_check = s5_tls_pair_check; /* a client key checked with its certificate */
  switch (s5_args_load(&cfg, argc, argv)) {
    case S5_ARGS_RUN: break;
    case S5_ARGS_EXIT_OK: return 0;
    case S5_ARGS_EXPLAIN: return s5_explain(&cfg, s5_args_explain(), stdout);
    default: return 2;
  }
  int r = s5_log_open(&cfg.log);
  if (r < 0) {
    fprintf(stderr, "s5tund: opening log file %s: %s\n", cfg.log.file, strerror(-r));
    return 1;
  }
  char note[PATH_MAX * 2 + 256];
  for (unsigned i = 0; i < cfg.rules.n; i++)
    if (s5_rules_note(&cfg, i, note, sizeof note)) s5_info("%s", note);
  /* OpenSSL, if the configuration needs it, before any thread or worker:
   * every worker sees it loaded, and a library missing is said here. */
  char ossl_why[512];
  if (s5_ossl_load_for(&cfg, ossl_why, sizeof ossl_why) != 0) {
    s5_error("%s", ossl_why);
    return 1;
  }
  if (raise_nofile(cfg.run.limit_nofile, cfg.queues) < 0) return 1;
  /* A proxy that goes away mid-write must cost one session, not the daemon. */
  signal(SIGPIPE, SIG_IGN);

  /* Counters live in memory shared across fork, so one area serves both modes. */
  struct s5_stats_area *stats = s5_stats_create(cfg.queues);
  if (stats == NULL) {
    s5_error("mapping the stats area: %s", strerror(errno));
    return 1;
  }
  /* Mapped DNS names, shared by every worker: mapped before any exists;
   * so is the slot a reload publishes the configuration in. */
  if (s5_dns_setup(&cfg) < 0 || s5_reload_setup(argc, argv) < 0) return 1;
  int r2 = s5_uptab_setup(&cfg);
  if (r2 < 0) {
    s5_error("mapping the upstream table: %s", strerror(-r2));
    return 1;
  }
  char why[512] = "";
  r2 = s5_rules_setup(&cfg, why, sizeof why);
  if (r2 != 0) {
    s5_error("[rules]: %s", r2 == -1 ? why : strerror(-r2));
    return 1;
  }
  r2 = s5_conntab_setup(cfg.queues);
  if (r2 < 0) {
    s5_error("mapping the connection lists: %s", strerror(-r2));
    return 1;
  }
  s5_info("s5tund %s starting: %s, %u %s, mode %s", S5_VERSION, cfg.tun.name, cfg.queues,
          cfg.queues == 1 ? "queue" : "queues", cfg.mode == S5_MODE_THREAD ? "thread" : "process");
  s5_upstreams_log(&cfg);
  int code = cfg.mode == S5_MODE_THREAD ? s5_run_threads(&cfg, stats) : s5_run_processes(&cfg, stats);
  s5_dnsmap_state_stop(); /* every worker is gone: the names as they were at the end */
  return code;
}
