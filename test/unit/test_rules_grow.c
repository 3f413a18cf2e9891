/* SPDX-License-Identifier: MIT */
/* [rules] files that change while they are compiled: a blocklist updater
 * that writes in place while s5tund starts or reloads. The compiler reads
 * the files twice (once to count, once to lay out); here the file changes
 * between the two reads, deterministically: a thread holds each open of
 * the file (fanotify's permission events) and rewrites the file before it
 * lets the open go on. Whatever the file does, the build never writes past
 * what it counted (ASan's heap-buffer-overflow, or a crash, before the
 * fix), and it ends with a consistent set or a clear error.
 * fanotify's permission events need root: skipped without. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "check.h"
#include "shared/rules.h"

static struct s5_config cfg;
static char dir[] = "/tmp/test_rules_grow.XXXXXX";
static char path[256];

/* n lines "PREFIXi.example" from line from on (bare names: the file's
 * outbound), appended ('a') or in place of the file ('w'), through fd:
 * the holder may not open the file it holds. */
static void write_names_fd(int fd, char mode, int from, int n, const char *prefix) {
  if (mode == 'w' && ftruncate(fd, 0) != 0) exit(1);
  FILE *f = fdopen(dup(fd), "a");
  if (f == NULL) exit(1);
  for (int i = from; i < from + n; i++) fprintf(f, "%s%d.example\n", prefix, i);
  if (fclose(f) != 0) exit(1);
}

static void write_names(int n, const char *prefix) {
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) exit(1);
  write_names_fd(fd, 'w', 0, n, prefix);
  close(fd);
}

/* What happens to the file before its Nth open is let through. */
struct change {
  int open;    /* 1 = the first open */
  char mode;   /* 'a': grow; 'w': rewrite */
  int from, n; /* its lines */
  const char *prefix;
};

struct holder {
  int fd;  /* fanotify */
  int wfd; /* the file, opened to write before it was held */
  const struct change *changes;
  int n_changes;
  int opens;
  _Atomic int stop;
};

static void *holder_main(void *arg) {
  struct holder *h = arg;
  char buf[4096] __attribute__((aligned(8)));
  while (!h->stop) {
    struct pollfd p = {.fd = h->fd, .events = POLLIN};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t r = read(h->fd, buf, sizeof buf);
    if (r <= 0) continue;
    for (struct fanotify_event_metadata *m = (void *)buf; FAN_EVENT_OK(m, r); m = FAN_EVENT_NEXT(m, r)) {
      if (m->mask & FAN_OPEN_PERM) {
        h->opens++;
        for (int i = 0; i < h->n_changes; i++)
          if (h->changes[i].open == h->opens)
            write_names_fd(h->wfd, h->changes[i].mode, h->changes[i].from, h->changes[i].n,
                           h->changes[i].prefix);
        struct fanotify_response ok = {.fd = m->fd, .response = FAN_ALLOW};
        if (write(h->fd, &ok, sizeof ok) != sizeof ok) exit(1);
      }
      if (m->fd >= 0) close(m->fd);
    }
  }
  return NULL;
}

/* Builds (its size, then the set) while the holder applies the changes.
 * Returns the set or NULL (err says why); *opens: how often the file was
 * opened. */
static struct s5_rules *build_while(const struct change *ch, int n, int *opens, char *err, size_t errlen) {
  struct holder h = {.changes = ch, .n_changes = n, .wfd = open(path, O_WRONLY | O_CLOEXEC)};
  pthread_t th;
  if (h.wfd < 0) exit(1);
  h.fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY);
  if (h.fd < 0) {
    printf("SKIP: fanotify permission events: %s (root needed)\n", strerror(errno));
    exit(CHECK_SKIP);
  }
  if (fanotify_mark(h.fd, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, path) != 0 ||
      pthread_create(&th, NULL, holder_main, &h) != 0)
    exit(1);
  err[0] = '\0';
  struct s5_rules *t = NULL;
  size_t need = s5_rules_build(NULL, 0, &cfg, err, errlen);
  if (need != 0) {
    t = malloc(need);
    if (t == NULL || s5_rules_build(t, need, &cfg, err, errlen) != need) {
      if (err[0] == '\0') snprintf(err, errlen, "the set's size changed between the two builds");
      free(t);
      t = NULL;
    }
  }
  h.stop = 1;
  pthread_join(th, NULL);
  close(h.fd);
  close(h.wfd);
  *opens = h.opens;
  return t;
}

static void setup(void) {
  memset(&cfg, 0, sizeof cfg);
  cfg.n_upstreams = 1;
  snprintf(cfg.upstreams[0].name, 32, "a");
  snprintf(cfg.rules.conf, sizeof cfg.rules.conf, "/etc/s5tund.ini");
  char item[300];
  snprintf(item, sizeof item, "%s -> block", path);
  struct s5_rules_cfg *rc = &cfg.rules;
  rc->kind[0] = S5_RULE_ITEM_FILE;
  rc->line[0] = 3;
  memcpy(rc->text, item, strlen(item) + 1);
  rc->used = strlen(item) + 1;
  rc->n = 1;
}

/* 2,000 lines counted; 6,000 more before they are laid out. */
static void test_grows(void) {
  char err[512];
  int opens;
  write_names(2000, "ads");
  const struct change grow = {.open = 2, .mode = 'a', .from = 2000, .n = 6000, .prefix = "ads"};
  struct s5_rules *t = build_while(&grow, 1, &opens, err, sizeof err);
  CHECK(t != NULL, "a file that grew while it was read: read again, not refused: %s", err);
  if (t != NULL) {
    CHECK(s5_rules_count(t) == 8000, "every rule of the grown file: %u", s5_rules_count(t));
    struct s5_flow f = {.family = AF_INET, .dport = 443, .proto = IPPROTO_TCP, .name = "ads7999.example"};
    uint32_t rule;
    CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_BLOCK && rule == 7999, "its last line matches");
  }
  CHECK(opens >= 4, "the file was read again (%d opens)", opens);
  free(t);
}

/* As many lines, each name longer: the rules' text outgrows its count. */
static void test_names_lengthen(void) {
  char err[512];
  int opens;
  write_names(2000, "a");
  const struct change longer = {
    .open = 2, .mode = 'w', .n = 2000, .prefix = "a-much-longer-name-than-before-"};
  struct s5_rules *t = build_while(&longer, 1, &opens, err, sizeof err);
  CHECK(t != NULL && s5_rules_count(t) == 2000, "names that lengthened: read again: %s", err);
  free(t);
}

/* Fewer lines at the second read: no rule left half laid out. */
static void test_shrinks(void) {
  char err[512];
  int opens;
  write_names(2000, "s");
  const struct change shrink = {.open = 2, .mode = 'w', .n = 10, .prefix = "s"};
  struct s5_rules *t = build_while(&shrink, 1, &opens, err, sizeof err);
  CHECK(t != NULL && s5_rules_count(t) == 10, "a file that shrank: read again: %s", err);
  free(t);
}

/* A file that changes between the reads of every attempt is refused with
 * a clear error, never half built. */
static void test_never_settles(void) {
  char err[512];
  int opens;
  write_names(100, "x");
  struct change every[16];
  for (int i = 0; i < 16; i++)
    every[i] =
      (struct change){.open = 2 * i + 2, .mode = 'a', .from = 100 + 500 * i, .n = 500, .prefix = "x"};
  struct s5_rules *t = build_while(every, 16, &opens, err, sizeof err);
  CHECK(t == NULL && strstr(err, "changed while it was read") != NULL,
        "a file that changes at every read: refused: [%s]", err);
  free(t);
}

int main(void) {
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(path, sizeof path, "%s/list.txt", dir);
  setup();
  test_grows();
  test_names_lengthen();
  test_shrinks();
  test_never_settles();
  unlink(path);
  rmdir(dir);
  return check_done();
}
