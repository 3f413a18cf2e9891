/* s5tund: a TUN device in, SOCKS5 out, one worker per queue.
 *
 * Following one packet: tun/ opens the queues; threads/ starts a worker per
 * queue (core/worker.c); core/netif.c reads the packet into lwIP; a SYN
 * becomes a session (core/session.c), which connects through the proxy
 * (core/handshake.c) and then relays bytes both ways (core/relay.c). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "run.h"

int main(int argc, char **argv) {
  static struct s5_config cfg;   /* read-only once loaded; every worker reads it */
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
  /* A proxy that goes away mid-write must cost one session, not the daemon. */
  signal(SIGPIPE, SIG_IGN);

  s5_info("s5tund %s starting: %s, %u queues, mode %s", S5_VERSION, cfg.tun.name, cfg.queues,
          cfg.mode == S5_MODE_THREAD ? "thread" : "process");
  return cfg.mode == S5_MODE_THREAD ? s5_run_threads(&cfg) : s5_run_processes(&cfg);
}
