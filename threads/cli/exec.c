/* SPDX-License-Identifier: MIT */
/* s5tund exec [FLAGS] -- COMMAND [ARGS...]: one command in a network
 * namespace of its own whose only way out is the proxy (see exec.h).
 *
 * Three processes: this one (the parent: it waits, passes signals on and
 * returns the command's status); the daemon, s5tund itself run with
 * --netns s5exec-PID (so the namespace, the device, its routes and the
 * resolv.conf are [tun] netns's, made and removed by the daemon), in a
 * process group of its own so that the terminal's Ctrl-C reaches the
 * command, not the tunnel; and the command, started once the daemon says
 * READY=1 (the sd_notify protocol, on a socket of ours), inside the
 * namespace, as the user who ran sudo. */
#include "threads/cli/exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tun/netns.h"

/* How long the tunnel may take to come up before the command gives up. */
#define S5_EXEC_READY_S 30
/* How long the daemon gets to stop cleanly once the command has ended. */
#define S5_EXEC_STOP_S 15

static volatile sig_atomic_t child_pid; /* the command, for the forwarded signals */
static volatile sig_atomic_t early_sig; /* SIGTERM or SIGHUP before the command ran */

static void forward(int sig) {
  if (child_pid > 0) kill(child_pid, sig);
  else early_sig = sig;
}

static int usage(void) {
  fprintf(stderr, "usage: s5tund exec [--config FILE] [FLAGS] -- COMMAND [ARGS...]\n");
  return 2;
}

/* The socket the daemon says READY=1 on: abstract, named after us. */
static int notify_open(char *name, size_t len) {
  snprintf(name, len, "@s5tund/exec/%d", (int)getpid());
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  size_t n = strlen(name);
  memcpy(sun.sun_path, name, n);
  sun.sun_path[0] = '\0';
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (bind(fd, (struct sockaddr *)&sun, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The daemon: our own binary with the flags given and the namespace. */
static pid_t daemon_start(char **flags, int nflags, const char *netns, const char *notify) {
  char **av = calloc((size_t)nflags + 6, sizeof *av);
  if (av == NULL) return -1;
  int n = 0;
  av[n++] = "s5tund";
  /* The tunnel's info lines would land in the command's terminal: warn and
   * above, unless the command line names a level (it comes later, and wins). */
  av[n++] = "--log-level";
  av[n++] = "warn";
  for (int i = 0; i < nflags; i++) av[n++] = flags[i];
  av[n++] = "--netns";
  av[n++] = (char *)netns;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0); /* the terminal's Ctrl-C is the command's */
    /* Our forwarders, inherited, would swallow the death signal below until
     * execv (they forward to no command yet): the tunnel would outlive us. */
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0); /* we killed: a clean stop still */
    if (getppid() != parent) _exit(1);         /* killed before the line above: no tunnel */
    setenv("NOTIFY_SOCKET", notify, 1);
    execv("/proc/self/exe", av);
    fprintf(stderr, "s5tund exec: starting the tunnel: %s\n", strerror(errno));
    _exit(127);
  }
  free(av);
  return pid;
}

/* Until READY=1 from the daemon, its exit (*gone then), or the time is up. */
static int daemon_wait_ready(int nfd, pid_t daemon, bool *gone) {
  time_t end = time(NULL) + S5_EXEC_READY_S;
  while (time(NULL) < end) {
    if (early_sig != 0) {
      fprintf(stderr, "s5tund exec: %s while the tunnel came up: the command does not run\n",
              strsignal(early_sig));
      return 128 + early_sig;
    }
    struct pollfd p = {.fd = nfd, .events = POLLIN};
    int r = poll(&p, 1, 200); /* a signal ends it early */
    if (r > 0) {
      char msg[256];
      ssize_t n = recv(nfd, msg, sizeof msg - 1, 0);
      if (n > 0) {
        msg[n] = '\0';
        if (strstr(msg, "READY=1") != NULL) return 0;
      }
    }
    int st;
    if (waitpid(daemon, &st, WNOHANG) == daemon) {
      *gone = true;
      fprintf(stderr, "s5tund exec: the tunnel did not come up (s5tund exited with status %d; see above)\n",
              WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
      return WIFEXITED(st) && WEXITSTATUS(st) != 0 ? WEXITSTATUS(st) : 1;
    }
  }
  fprintf(stderr, "s5tund exec: the tunnel did not come up within %d s\n", S5_EXEC_READY_S);
  return 1;
}

/* As `ip netns exec` does: a mount namespace of our own, where the
 * namespace's /etc/netns/NAME/resolv.conf (the mapped resolver) is seen as
 * /etc/resolv.conf. */
static void command_resolv(const char *netns) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "/etc/netns/%s/resolv.conf", netns);
  if (access(path, R_OK) != 0) return;
  if (unshare(CLONE_NEWNS) < 0 || mount("", "/", "none", MS_SLAVE | MS_REC, NULL) < 0 ||
      mount(path, "/etc/resolv.conf", "none", MS_BIND, NULL) < 0)
    fprintf(stderr, "s5tund exec: /etc/resolv.conf for the command: %s (names resolve as on the host)\n",
            strerror(errno));
}

/* Started through sudo: the command runs as the user who ran it. */
static int command_user(void) {
  const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
  if (geteuid() != 0 || u == NULL || g == NULL) return 0;
  uid_t uid = (uid_t)strtoul(u, NULL, 10);
  gid_t gid = (gid_t)strtoul(g, NULL, 10);
  struct passwd *pw = getpwuid(uid);
  if ((pw != NULL ? initgroups(pw->pw_name, gid) : setgroups(1, &gid)) < 0 || setresgid(gid, gid, gid) < 0 ||
      setresuid(uid, uid, uid) < 0)
    return -1;
  return 0;
}

/* The command's process. SIGTERM and SIGHUP stay blocked from before the
 * fork until each side is ready for them: the parent until child_pid names
 * the command (one that came meanwhile is forwarded then), the child until
 * it has dropped the forwarders it inherited (one forwarded meanwhile ends
 * it, as it would the command). */
static pid_t command_start(char **cmd, const char *netns) {
  sigset_t fwd, old;
  sigemptyset(&fwd);
  sigaddset(&fwd, SIGTERM);
  sigaddset(&fwd, SIGHUP);
  sigprocmask(SIG_BLOCK, &fwd, &old);
  pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    return pid;
  }
  signal(SIGINT, SIG_DFL);
  signal(SIGQUIT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  sigprocmask(SIG_SETMASK, &old, NULL);
  struct s5_netns ns;
  char err[320];
  if (s5_netns_open(&ns, netns, err, sizeof err) < 0 || s5_netns_enter(&ns) < 0) {
    fprintf(stderr, "s5tund exec: entering the namespace: %s\n", err);
    _exit(127);
  }
  command_resolv(netns);
  if (command_user() < 0) {
    fprintf(stderr, "s5tund exec: dropping to SUDO_UID/SUDO_GID: %s\n", strerror(errno));
    _exit(127);
  }
  unsetenv("NOTIFY_SOCKET");
  execvp(cmd[0], cmd);
  fprintf(stderr, "s5tund exec: %s: %s\n", cmd[0], strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

/* SIGTERM, then the daemon's clean stop (the namespace goes with it);
 * SIGKILL if it takes too long. */
static void daemon_stop(pid_t daemon) {
  int st;
  if (waitpid(daemon, &st, WNOHANG) == daemon) {
    /* Gone before we asked: whatever it had made is ours to remove. */
    if (WIFSIGNALED(st))
      fprintf(stderr, "s5tund exec: warning: the tunnel died (signal %d) while the command ran\n",
              WTERMSIG(st));
    else
      fprintf(stderr, "s5tund exec: warning: the tunnel exited (status %d) while the command ran\n",
              WEXITSTATUS(st));
    return;
  }
  kill(daemon, SIGTERM);
  for (int i = 0; i < S5_EXEC_STOP_S * 10; i++) {
    if (waitpid(daemon, &st, WNOHANG) == daemon) return;
    usleep(100 * 1000);
  }
  fprintf(stderr, "s5tund exec: the tunnel did not stop within %d s: killed\n", S5_EXEC_STOP_S);
  kill(daemon, SIGKILL);
  waitpid(daemon, &st, 0);
}

/* What the tunnel of exec PID leaves if it dies without its clean stop:
 * the namespace's mount and /etc/netns/NAME/resolv.conf (only ours). */
static void leftovers_remove(const char *name) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "/run/netns/%s", name);
  if (umount2(path, MNT_DETACH) == 0 || errno == EINVAL) {
    if (unlink(path) == 0) fprintf(stderr, "s5tund exec: removed the leftover namespace %s\n", name);
  }
  snprintf(path, sizeof path, "/etc/netns/%s/resolv.conf", name);
  FILE *f = fopen(path, "r");
  char line[128] = "";
  if (f != NULL) {
    if (fgets(line, sizeof line, f) == NULL) line[0] = '\0';
    fclose(f);
  }
  if (strncmp(line, "# written by s5tund", 19) == 0) unlink(path);
  snprintf(path, sizeof path, "/etc/netns/%s", name);
  rmdir(path); /* only if empty: an admin's files stay */
}

/* Namespaces of execs that no longer run (killed -9 with their tunnel):
 * swept before a new one is made, so none lingers to be "used as it is". */
static void leftovers_sweep(void) {
  DIR *d = opendir("/run/netns");
  if (d == NULL) return;
  struct dirent *e;
  size_t plen = strlen(S5_EXEC_NETNS_PREFIX);
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, S5_EXEC_NETNS_PREFIX, plen) != 0) continue;
    char *end;
    long pid = strtol(e->d_name + plen, &end, 10);
    if (*end != '\0' || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
    leftovers_remove(e->d_name);
  }
  closedir(d);
}

int s5_exec_command(int argc, char **argv) {
  int dash = 2;
  while (dash < argc && strcmp(argv[dash], "--") != 0) dash++;
  if (dash + 1 >= argc) return usage();
  char netns[64], notify[108];
  snprintf(netns, sizeof netns, S5_EXEC_NETNS_PREFIX "%d", (int)getpid());
  int nfd = notify_open(notify, sizeof notify);
  if (nfd < 0) {
    fprintf(stderr, "s5tund exec: notify socket: %s\n", strerror(errno));
    return 1;
  }
  leftovers_sweep();
  /* Ctrl-C and the like are the command's: we outlive it to clean up. */
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGTERM, forward);
  signal(SIGHUP, forward);
  pid_t daemon = daemon_start(argv + 2, dash - 2, netns, notify);
  if (daemon < 0) {
    fprintf(stderr, "s5tund exec: fork: %s\n", strerror(errno));
    return 1;
  }
  bool gone = false;
  int r = daemon_wait_ready(nfd, daemon, &gone);
  if (r != 0) {
    if (!gone) daemon_stop(daemon);
    leftovers_remove(netns);
    close(nfd);
    return r;
  }
  pid_t cmd = command_start(argv + dash + 1, netns);
  if (cmd < 0) {
    fprintf(stderr, "s5tund exec: fork: %s\n", strerror(errno));
    daemon_stop(daemon);
    leftovers_remove(netns);
    close(nfd);
    return 1;
  }
  if (early_sig != 0) kill(cmd, early_sig); /* came after the tunnel was up, before the command */
  int st;
  while (waitpid(cmd, &st, 0) < 0 && errno == EINTR) {
  }
  child_pid = 0;
  daemon_stop(daemon);
  leftovers_remove(netns); /* nothing after a clean stop */
  close(nfd);              /* open until here: the daemon says STOPPING=1 on it */
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
