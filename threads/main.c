/* SPDX-License-Identifier: MIT */
/* s5tund: a TUN device in, SOCKS5 out, one worker per queue.
 *
 * In threads/, the top layer, because it starts a run mode (pool.c or
 * supervisor.c) and the stats client: everything it calls lies below it,
 * and nothing in core/ reaches up to threads/.
 *
 * Following one packet: tun/ opens the queues; threads/ starts a worker per
 * queue (core/worker.c); core/netif.c reads the packet into lwIP; a SYN
 * becomes a session (core/session.c), which connects through the proxy
 * (core/handshake.c) and then relays bytes both ways (core/relay.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "config.h"
#include "conntab.h"
#include "dns.h"
#include "log.h"
#include "memtrim.h"
#include "privileges.h"
#include "reload.h"
#include "run.h"
#include "stats.h"
#include "stats_server.h"

/* [run] limit-nofile: the soft limit to n, the hard one raised to n if it
 * is lower (needs CAP_SYS_RESOURCE; the kernel's ceiling is fs.nr_open).
 * Before any worker exists, so threads and forked workers all get it. */
static int raise_nofile(unsigned n) {
  struct rlimit rl;
  if (n == 0) return 0;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0) rl.rlim_max = 0;
  rl.rlim_cur = n;
  if (rl.rlim_max < n) rl.rlim_max = n;
  if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
    s5_error(
      "[run] limit-nofile = %u: setrlimit(RLIMIT_NOFILE): %s%s", n, strerror(errno),
      errno == EPERM ? " (raising the hard limit needs CAP_SYS_RESOURCE; see also sysctl fs.nr_open)" : "");
    return -1;
  }
  return 0;
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

int main(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "--stats") == 0 || strcmp(argv[1], "--connections") == 0))
    return stats_command(argc, argv);
  s5_memtrim_setup(); /* before any thread or worker; refused (a sanitizer), the default holds */

  static struct s5_config cfg; /* read-only once loaded; every worker reads it */
  switch (s5_args_load(&cfg, argc, argv)) {
    case S5_ARGS_RUN: break;
    case S5_ARGS_EXIT_OK: return 0;
    default: return 2;
  }
  int r = s5_log_open(&cfg);
  if (r < 0) {
    fprintf(stderr, "s5tund: opening log file %s: %s\n", cfg.log.file, strerror(-r));
    return 1;
  }
  if (raise_nofile(cfg.run.limit_nofile) < 0) return 1;
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
  int r2 = s5_conntab_setup(cfg.queues);
  if (r2 < 0) {
    s5_error("mapping the connection lists: %s", strerror(-r2));
    return 1;
  }
  s5_info("s5tund %s starting: %s, %u %s, mode %s", S5_VERSION, cfg.tun.name, cfg.queues,
          cfg.queues == 1 ? "queue" : "queues", cfg.mode == S5_MODE_THREAD ? "thread" : "process");
  return cfg.mode == S5_MODE_THREAD ? s5_run_threads(&cfg, stats) : s5_run_processes(&cfg, stats);
}
