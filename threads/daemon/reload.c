/* SPDX-License-Identifier: MIT */
#include "threads/daemon/reload.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/assert.h"
#include "base/log.h"
#include "base/ossl.h"
#include "shared/config_slot.h"
#include "shared/rules.h"
#include "shared/uptab.h"
#include "threads/ctl/group_select.h"

#define S5_ABANDON_WAIT_S 1 /* a cancelled walk stops at its next line: far less in practice */

static int reload_argc;
static char **reload_argv;
static int done_fd = -1; /* eventfd: written by the thread as its last act */

/* One reload. The control loop fills it and starts the thread, which then
 * owns it, and nothing else of the loop's, until it writes done_fd; the
 * loop joins it and publishes. What the thread does besides is safe on a
 * thread of its own: files of its own, the rules' half no worker uses
 * (core/shared/rules.c), log lines (one write(2) each, base/log.c). An
 * abandoned job is not freed unless its thread was joined. */
struct job {
  pthread_t tid;
  struct s5_config live; /* a copy of the live configuration */
  struct s5_config next;
  int ok;         /* next is ready to publish */
  int kept;       /* keys that need a restart kept their value */
  char why[1024]; /* why not */
};

static struct job *running; /* the loop's: started, not yet joined */

int s5_reload_setup(int argc, char **argv) {
  reload_argc = argc;
  reload_argv = argv;
  int r = s5_config_slot_setup();
  if (r < 0) {
    s5_error("reload: mapping the configuration slot: %s", strerror(-r));
    return -1;
  }
  done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (done_fd < 0) {
    s5_error("reload: eventfd: %s", strerror(errno));
    return -1;
  }
  return 0;
}

int s5_reload_fd(void) { return done_fd; }
int s5_reload_running(void) { return running != NULL; }

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

/* On the thread: reads, checks, merges and compiles j->next. 1, or 0 with j->why. */
static int load(struct job *j) {
  struct s5_config *next = &j->next;
  const struct s5_config *live = &j->live;
  char *msg = NULL;
  size_t msg_len = 0;
  FILE *err = open_memstream(&msg, &msg_len);
  FILE *out = fopen("/dev/null", "w");
  if (err == NULL || out == NULL) {
    snprintf(j->why, sizeof j->why, "%s: %s", err == NULL ? "open_memstream" : "/dev/null", strerror(errno));
    if (err != NULL) fclose(err);
    if (out != NULL) fclose(out);
    free(msg);
    return 0;
  }
  enum s5_args_result r = s5_args_load_io(next, reload_argc, reload_argv, out, err);
  fclose(out);
  fclose(err);
  if (r != S5_ARGS_RUN) {
    chomp(msg);
    const char *why = strncmp(msg, "s5tund: ", 8) == 0 ? msg + 8 : msg; /* the command line's prefix */
    snprintf(j->why, sizeof j->why, "%s", why[0] ? why : "(no message)");
    free(msg);
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
  j->kept = s5_config_reload_merge(next, live, reload_warn, NULL);
  /* OpenSSL, if the new configuration needs it and it is not loaded yet:
   * loaded here, so a worker process forked from now on has it too. */
  if (s5_ossl_load_for(next, j->why, sizeof j->why) != 0) return 0;
  return s5_rules_reload(next, live, j->why, sizeof j->why) == 0;
}

static void *reload_main(void *arg) {
  struct job *j = arg;
  j->ok = load(j);
  uint64_t one = 1;
  if (write(done_fd, &one, sizeof one) != (ssize_t)sizeof one) /* cannot fail: the counter is 0 or 1 */
    s5_error("reload: waking the control loop: %s", strerror(errno));
  return NULL;
}

static void count_failure(struct s5_stats_area *stats) {
  S5_STAT_SET(stats, reload_failures, S5_STAT_GET(stats, reload_failures) + 1);
}

int s5_reload_start(const struct s5_config *live, struct s5_stats_area *stats) {
  S5_ASSERT(running == NULL); /* one reload at a time: the control loop coalesces SIGHUPs */
  struct job *j = malloc(sizeof *j);
  if (j == NULL) {
    s5_error("reload failed, configuration unchanged: out of memory");
    count_failure(stats);
    return -1;
  }
  j->live = *live;
  j->ok = j->kept = 0;
  j->why[0] = '\0';
  s5_rules_cancel(false);
  /* Every signal blocked on the thread: the control loop's stay with its
   * signalfd, and no handler ever runs there. */
  sigset_t all, old;
  sigfillset(&all);
  int m = pthread_sigmask(SIG_SETMASK, &all, &old);
  if (m != 0) s5_warn("reload: blocking signals for its thread: %s", strerror(m));
  int r = pthread_create(&j->tid, NULL, reload_main, j);
  if (m == 0 && (m = pthread_sigmask(SIG_SETMASK, &old, NULL)) != 0)
    s5_error("reload: restoring the control loop's signal mask: %s", strerror(m));
  if (r != 0) {
    s5_error("reload failed, configuration unchanged: starting its thread: %s", strerror(r));
    count_failure(stats);
    free(j);
    return -1;
  }
  running = j;
  return 0;
}

int s5_reload_finish(struct s5_config *live, struct s5_stats_area *stats) {
  uint64_t n;
  if (running == NULL || read(done_fd, &n, sizeof n) != (ssize_t)sizeof n) return -1; /* not done */
  struct job *j = running;
  running = NULL;
  int r = pthread_join(j->tid, NULL);
  if (r != 0) s5_error("reload: joining its thread: %s", strerror(r)); /* it wrote done_fd: it is ending */
  if (!j->ok) {
    s5_error("reload failed, configuration unchanged: %s", j->why);
    count_failure(stats);
    free(j);
    return 0;
  }
  int kept = j->kept;
  s5_rules_commit(&j->next);
  if (s5_uptab() != NULL) {
    s5_uptab_assign(s5_uptab(), &j->next);         /* the upstreams' rows, the groups' state, by name */
    s5_group_reloaded(s5_uptab(), live, &j->next); /* a changed selected wins over the live choice */
  }
  *live = j->next;
  free(j);
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

void s5_reload_worker_died(unsigned q) { s5_rules_released(q); }

void s5_reload_abandon(void) {
  if (running == NULL) return;
  s5_rules_cancel(true);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += S5_ABANDON_WAIT_S;
  int r = pthread_timedjoin_np(running->tid, NULL, &until);
  if (r == 0) {
    s5_info("reload abandoned: the daemon stops");
    free(running);
  } else {
    s5_warn("reload abandoned: its thread did not stop within %d s (%s); stopping without it",
            S5_ABANDON_WAIT_S, strerror(r));
    pthread_detach(running->tid);
  }
  running = NULL;
}
