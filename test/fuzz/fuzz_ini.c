/* SPDX-License-Identifier: MIT */
/* Fuzz target: the configuration loader (ini/): an INI file through
 * s5_config_load_file(), and a command line through s5_args_load_io()
 * (s5_args_load() with its output streams given; both share one
 * implementation).
 *
 * Input: byte 0 even: the rest is the file. Byte 0 odd: the rest is split
 * at the first "\0\0" into a command line (arguments separated by NUL) and
 * a file. The file is written to a memfd, named /proc/self/fd/N. Every
 * argument containing a '/' is replaced by that name (so --config and
 * friends can only reach our file, never /dev/stdin or /dev/zero), and the
 * flags are read in an empty directory (so relative names find nothing).
 *
 * Checks: the loader returns 0 or -1 only; on -1 it wrote one non-empty,
 * single-line, NUL-terminated message and left the configuration
 * untouched; on 0 what --check-config would print loads again and prints
 * the same (the password, printed as "***", included). The args loader
 * returns one of its four results, a RUN (or --explain) result is a
 * complete configuration (queues resolved), and --explain's flow has an
 * address of a family and a protocol. */
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ini/config.h"
#include "fuzz_check.h"

#define MAX_ARGS 64

static FILE *devnull;
static int here_fd, empty_fd; /* the working directory, and an empty (deleted) one */

static void setup(void) {
  if (devnull != NULL) return;
  devnull = fopen("/dev/null", "w");
  char dir[] = "/tmp/s5fuzz-ini.XXXXXX";
  if (devnull == NULL || mkdtemp(dir) == NULL) abort();
  here_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  empty_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (here_fd < 0 || empty_fd < 0 || rmdir(dir) < 0) abort();
}

/* A memfd holding len bytes; its /proc name in path. Returns the fd. */
static int make_file(const uint8_t *data, size_t len, char *path, size_t cap) {
  int fd = memfd_create("s5fuzz.ini", MFD_CLOEXEC);
  if (fd < 0) abort();
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(fd, data + done, len - done);
    if (n <= 0) abort();
    done += (size_t)n;
  }
  snprintf(path, cap, "/proc/self/fd/%d", fd);
  return fd;
}

static void check_message(const char *err, size_t cap) {
  size_t n = strnlen(err, cap);
  FUZZ_CHECK(n < cap, "message not terminated");
  FUZZ_CHECK(n > 0, "error without a message");
  FUZZ_CHECK(strchr(err, '\n') == NULL, "message of more than one line: %s", err);
}

/* --check-config's output, as a string. */
static char *print(const struct s5_config *cfg) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (out == NULL) abort();
  s5_config_print(cfg, out);
  fclose(out);
  return text;
}

static void check_file(const uint8_t *data, size_t len) {
  char path[64];
  int fd = make_file(data, len, path, sizeof path);
  static struct s5_config cfg, before, again;
  char err[512];
  memset(err, 'x', sizeof err);
  s5_config_defaults(&cfg);
  memcpy(&before, &cfg, sizeof cfg);
  int r = s5_config_load_file(&cfg, path, err, sizeof err);
  FUZZ_CHECK(r == 0 || r == -1, "load returned %d", r);
  if (r < 0) {
    check_message(err, sizeof err);
    FUZZ_CHECK(memcmp(&cfg, &before, sizeof cfg) == 0, "failed load changed the configuration");
    close(fd);
    return;
  }
  /* What --check-config prints must load again, and print the same. */
  char *text = print(&cfg);
  char path2[64];
  int fd2 = make_file((const uint8_t *)text, strlen(text), path2, sizeof path2);
  s5_config_defaults(&again);
  r = s5_config_load_file(&again, path2, err, sizeof err);
  FUZZ_CHECK(r == 0, "printed configuration does not load: %s\n%s", err, text);
  char *text2 = print(&again);
  FUZZ_CHECK(strcmp(text, text2) == 0, "printed configuration loads differently:\n%s\n---\n%s", text, text2);
  free(text2);
  free(text);
  close(fd2);
  close(fd);
}

static void check_args(const uint8_t *data, size_t len) {
  const uint8_t *sep = memmem(data, len, "\0\0", 2);
  size_t args_len = sep != NULL ? (size_t)(sep - data) : len;
  const uint8_t *file = sep != NULL ? sep + 2 : data + len;
  char path[64];
  int fd = make_file(file, len - (size_t)(file - data), path, sizeof path);

  char *copy = malloc(args_len + 1);
  if (copy == NULL) abort();
  memcpy(copy, data, args_len);
  copy[args_len] = '\0';
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = "s5tund";
  for (char *p = copy; args_len > 0 && p <= copy + args_len && argc < MAX_ARGS + 1; p += strlen(p) + 1)
    argv[argc++] = strchr(p, '/') != NULL ? path : p;
  argv[argc] = NULL;

  static struct s5_config cfg;
  /* In an empty directory, so that relative names find nothing (libFuzzer
   * itself reads its corpus relative to the real one between calls). */
  if (fchdir(empty_fd) < 0) abort();
  enum s5_args_result r = s5_args_load_io(&cfg, argc, argv, devnull, devnull);
  if (fchdir(here_fd) < 0) abort();
  FUZZ_CHECK(r == S5_ARGS_RUN || r == S5_ARGS_EXIT_OK || r == S5_ARGS_EXIT_BAD || r == S5_ARGS_EXPLAIN,
             "result %d", (int)r);
  if (r == S5_ARGS_EXPLAIN) {
    const struct s5_explain *e = s5_args_explain();
    FUZZ_CHECK(e->dst.ss_family == AF_INET || e->dst.ss_family == AF_INET6, "--explain family %d",
               e->dst.ss_family);
    FUZZ_CHECK(e->proto == IPPROTO_TCP || e->proto == IPPROTO_UDP, "--explain proto %d", e->proto);
  }
  if (r == S5_ARGS_RUN || r == S5_ARGS_EXPLAIN) {
    FUZZ_CHECK(cfg.queues >= 1 && cfg.queues <= S5_QUEUES_MAX, "queues %u", cfg.queues);
    FUZZ_CHECK(cfg.tun.mtu >= 1280 && cfg.tun.mtu <= 65535, "mtu %u", cfg.tun.mtu);
    FUZZ_CHECK(cfg.socks5.addr.ss_family == AF_INET || cfg.socks5.addr.ss_family == AF_INET6,
               "proxy family %d", cfg.socks5.addr.ss_family);
  }
  free(copy);
  close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup();
  if (size < 1) return 0;
  if (data[0] & 1) check_args(data + 1, size - 1);
  else check_file(data + 1, size - 1);
  return 0;
}
