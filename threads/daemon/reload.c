/* SPDX-License-Identifier: MIT */
#include "threads/daemon/reload.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shared/rules.h"
#include "shared/config_slot.h"
#include "base/log.h"
#include "shared/uptab.h"

static int reload_argc;
static char **reload_argv;

int s5_reload_setup(int argc, char **argv) {
  reload_argc = argc;
  reload_argv = argv;
  int r = s5_config_slot_setup();
  if (r < 0) s5_error("reload: mapping the configuration slot: %s", strerror(-r));
  return r < 0 ? -1 : 0;
}

static void reload_warn(void *arg, const char *section, const char *was, const char *now) {
  (void)arg;
  s5_warn("reload: %s%s%s%s: needs a restart; keeping %s", section[0] ? "[" : "", section,
          section[0] ? "] " : "", now, was);
}

/* The one error message s5_args_load_io() wrote, without its newline. */
static void chomp(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = '\0';
}

int s5_reload(struct s5_config *live, struct s5_stats_area *stats) {
  struct s5_config *next = malloc(sizeof *next);
  char *msg = NULL;
  size_t msg_len = 0;
  FILE *err = open_memstream(&msg, &msg_len);
  FILE *out = fopen("/dev/null", "w");
  if (next == NULL || err == NULL || out == NULL) {
    s5_error("reload: out of memory: configuration unchanged");
    if (err != NULL) fclose(err);
    if (out != NULL) fclose(out);
    free(msg);
    free(next);
    S5_STAT_SET(stats, reload_failures, S5_STAT_GET(stats, reload_failures) + 1);
    return 0;
  }
  enum s5_args_result r = s5_args_load_io(next, reload_argc, reload_argv, out, err);
  fclose(out);
  fclose(err);
  if (r != S5_ARGS_RUN) {
    chomp(msg);
    const char *why = strncmp(msg, "s5tund: ", 8) == 0 ? msg + 8 : msg; /* the command line's prefix */
    s5_error("reload failed, configuration unchanged: %s", why[0] ? why : "(no message)");
    S5_STAT_SET(stats, reload_failures, S5_STAT_GET(stats, reload_failures) + 1);
    free(msg);
    free(next);
    return 0;
  }
  free(msg);
  if (!s5_log_can_apply(&live->log, &next->log)) {
    s5_warn(
      "reload: [log] file = %s: switching between stderr, syslog and a file needs a restart; keeping %s",
      next->log.file[0] ? next->log.file : "(stderr)", live->log.file[0] ? live->log.file : "(stderr)");
    memcpy(next->log.file, live->log.file, sizeof next->log.file);
  }
  /* The shared name table exists only if mapped DNS was on at start. */
  int dns_was = live->dns.addr[0].ss_family != 0 || live->dns.addr[1].ss_family != 0;
  int dns_now = next->dns.addr[0].ss_family != 0 || next->dns.addr[1].ss_family != 0;
  if (dns_was != dns_now) {
    s5_warn("reload: [dns] address: turning mapped DNS %s needs a restart; keeping it %s",
            dns_now ? "on" : "off", dns_was ? "on" : "off");
    memcpy(next->dns.addr, live->dns.addr, sizeof next->dns.addr);
  }
  int kept = s5_config_reload_merge(next, live, reload_warn, NULL);
  char why[512] = "";
  if (s5_rules_reload(next, live, why, sizeof why) != 0) {
    s5_error("reload failed, configuration unchanged: %s", why);
    S5_STAT_SET(stats, reload_failures, S5_STAT_GET(stats, reload_failures) + 1);
    free(next);
    return 0;
  }
  if (s5_uptab() != NULL) s5_uptab_assign(s5_uptab(), next); /* the upstreams' rows, by name */
  *live = *next;
  free(next);
  int lr = s5_log_apply(&live->log);
  if (lr < -1) s5_error("reload: log file %s: %s", live->log.file, strerror(-lr));
  s5_config_slot_publish(live);
  S5_STAT_SET(stats, reloads, S5_STAT_GET(stats, reloads) + 1);
  S5_STAT_SET(stats, last_reload_unix, (uint64_t)time(NULL));
  char note[PATH_MAX * 2 + 256];
  for (unsigned i = 0; i < live->rules.n; i++)
    if (s5_rules_note(live, i, note, sizeof note)) s5_info("%s", note);
  s5_info("configuration reloaded%s: sessions opened from now on use it, open ones keep theirs",
          kept ? " (some keys need a restart: see above)" : "");
  return 1;
}
