/* SPDX-License-Identifier: MIT */
/* [tun] post-up and pre-down: operator commands run with /bin/sh around the
 * device's life, with the device name, queue count and mode in the
 * environment. They run to completion (bounded: a hung script is killed)
 * before s5tund goes on, so routes or firewall rules they add are in place
 * before traffic is served. */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "threads/device/device.h"

#define S5_HOOK_TIMEOUT_MS 30000

extern char **environ;

static int hook_wait(pid_t pid, const char *what) {
  int status;
  for (int waited = 0;; waited += 20) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      s5_error("%s: waitpid: %s", what, strerror(errno));
      return -1;
    }
    if (waited >= S5_HOOK_TIMEOUT_MS) {
      s5_error("%s: still running after %d s: killing it", what, S5_HOOK_TIMEOUT_MS / 1000);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    nanosleep(&(struct timespec){0, 20 * 1000000}, NULL);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFSIGNALED(status)) s5_error("%s: killed by %s", what, strsignal(WTERMSIG(status)));
  else s5_error("%s: exit code %d", what, WEXITSTATUS(status));
  return -1;
}

int s5_hook_run(const struct s5_config *cfg, const char *key, const char *command) {
  if (command[0] == '\0') return 0;
  char dev[64], queues[64], mode[64];
  snprintf(dev, sizeof dev, "S5TUND_DEVICE=%s", cfg->tun.name);
  snprintf(queues, sizeof queues, "S5TUND_QUEUES=%u", cfg->queues);
  snprintf(mode, sizeof mode, "S5TUND_MODE=%s", cfg->mode == S5_MODE_THREAD ? "thread" : "process");

  size_t n = 0;
  while (environ[n] != NULL) n++;
  char *env[n + 4];
  memcpy(env, environ, n * sizeof *env);
  env[n] = dev;
  env[n + 1] = queues;
  env[n + 2] = mode;
  env[n + 3] = NULL;

  /* The control loop blocks its signals; the script gets a clean mask. */
  posix_spawnattr_t attr;
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  char *argv[] = {"/bin/sh", "-c", (char *)command, NULL};
  pid_t pid;
  int r = posix_spawn(&pid, "/bin/sh", NULL, &attr, argv, env);
  posix_spawnattr_destroy(&attr);
  char what[64];
  snprintf(what, sizeof what, "[tun] %s", key);
  if (r != 0) {
    s5_error("%s: starting /bin/sh: %s", what, strerror(r));
    return -1;
  }
  s5_info("%s: running %s", what, command);
  return hook_wait(pid, what);
}
