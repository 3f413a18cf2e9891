/* SPDX-License-Identifier: MIT */
/* core/shared/flowtab.c: the shared per-queue flow tables (slots reused, a full
 * table refused, take empties, shared across fork) and the probe segments
 * (every field and both checksums, IPv4 and IPv6). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "threads/recovery/flowprobe.h"

static struct s5_flow flow4(uint16_t client_port) {
  struct s5_flow f;
  memset(&f, 0, sizeof f);
  memcpy(f.client, "\x0a\xc8\x00\x01", 4); /* 10.200.0.1 */
  memcpy(f.remote, "\x0a\xc9\x00\x01", 4); /* 10.201.0.1 */
  f.client_port = client_port;
  f.remote_port = 7000;
  return f;
}

static void count_one(const struct s5_flow *f, void *arg) {
  (void)f;
  ++*(int *)arg;
}

static int count(const struct s5_flowq *q) {
  int n = 0;
  s5_flowtab_each(q, count_one, &n);
  return n;
}

static void test_table(void) {
  struct s5_flowtab *t = s5_flowtab_create(2, 4);
  CHECK(t != NULL, "create");
  struct s5_flowq *q0 = s5_flowtab_queue(t, 0), *q1 = s5_flowtab_queue(t, 1);
  CHECK(q0 != NULL && q1 != NULL && q0 != q1 && s5_flowtab_queue(t, 2) == NULL, "queues");
  uint32_t refs[4];
  for (int i = 0; i < 4; i++) {
    struct s5_flow f = flow4((uint16_t)(40000 + i));
    refs[i] = s5_flowtab_add(q0, &f);
    CHECK(refs[i] == (uint32_t)i + 1, "add %d: ref %u", i, refs[i]);
  }
  struct s5_flow f = flow4(50000);
  CHECK(s5_flowtab_add(q0, &f) == 0, "a full table refuses");
  CHECK(count(q0) == 4 && count(q1) == 0, "counts %d %d", count(q0), count(q1));
  s5_flowtab_remove(q0, refs[1]);
  CHECK(count(q0) == 3, "after remove: %d", count(q0));
  uint32_t again = s5_flowtab_add(q0, &f);
  CHECK(again == refs[1], "the freed slot is reused: %u", again);
  CHECK(s5_flowtab_top(q0) == 4, "top %u", s5_flowtab_top(q0));

  struct s5_flow out[8];
  size_t n = s5_flowtab_take(q0, out, 8);
  CHECK(n == 4, "take: %zu", n);
  int seen50000 = 0, seen40001 = 0;
  for (size_t i = 0; i < n; i++) {
    seen50000 += out[i].client_port == 50000;
    seen40001 += out[i].client_port == 40001;
    CHECK(out[i].remote_port == 7000 && memcmp(out[i].client, "\x0a\xc8\x00\x01", 4) == 0, "taken flow %zu",
          i);
  }
  CHECK(seen50000 == 1 && seen40001 == 0, "taken: the live flows only");
  CHECK(count(q0) == 0 && s5_flowtab_top(q0) == 0, "take empties the table");
  CHECK(s5_flowtab_add(q0, &f) == 1, "a fresh table starts at slot 1");
  CHECK(s5_flowtab_take(q0, NULL, 0) == 1 && count(q0) == 0, "take with no room still empties");

  struct s5_flow sorted[3] = {flow4(3), flow4(1), flow4(2)};
  qsort(sorted, 3, sizeof *sorted, s5_flow_cmp);
  struct s5_flow key = flow4(2);
  struct s5_flow *hit = bsearch(&key, sorted, 3, sizeof *sorted, s5_flow_cmp);
  CHECK(hit != NULL && hit->client_port == 2, "bsearch by key");
  s5_flowtab_free(t);
}

/* A worker process writes, the parent (the supervisor) reads. */
static void test_fork(void) {
  struct s5_flowtab *t = s5_flowtab_create(1, 16);
  struct s5_flowq *q = s5_flowtab_queue(t, 0);
  pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < 3; i++) {
      struct s5_flow f = flow4((uint16_t)(1000 + i));
      s5_flowtab_add(q, &f);
    }
    _exit(0);
  }
  int status;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork and wait");
  struct s5_flow out[4];
  CHECK(s5_flowtab_take(q, out, 4) == 3, "the child's flows are seen by the parent");
  s5_flowtab_free(t);
}

/* The Internet checksum over the given parts, computed here independently. */
static uint16_t csum(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  uint64_t sum = 0;
  for (size_t i = 0; i < alen; i += 2) sum += (uint32_t)(a[i] << 8 | a[i + 1]);
  for (size_t i = 0; i < blen; i += 2) sum += (uint32_t)(b[i] << 8 | b[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)sum;
}

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void check_tcp(const uint8_t *tcp, const uint8_t *pseudo, size_t plen, uint8_t flags) {
  CHECK((tcp[0] << 8 | tcp[1]) == 7000 && (tcp[2] << 8 | tcp[3]) == 40000, "ports: remote -> client");
  CHECK(get32(tcp + 4) == 0x89abcdefu, "seq %08x", get32(tcp + 4));
  CHECK(get32(tcp + 8) == (flags & S5_TCP_ACK ? 0x01234567u : 0), "ack %08x", get32(tcp + 8));
  CHECK(tcp[12] == 0x50 && tcp[13] == flags, "header length and flags %02x %02x", tcp[12], tcp[13]);
  CHECK(csum(pseudo, plen, tcp, 20) == 0xffff, "TCP checksum");
}

static void test_probe4(uint8_t flags) {
  struct s5_flow f = flow4(40000);
  uint8_t buf[64];
  CHECK(s5_flow_probe(&f, 1, 2, flags, buf, 39) == 0, "too small a buffer");
  size_t len = s5_flow_probe(&f, 0x89abcdefu, 0x01234567u, flags, buf, sizeof buf);
  CHECK(len == 40, "IPv4 length %zu", len);
  CHECK(buf[0] == 0x45 && (buf[2] << 8 | buf[3]) == 40 && buf[9] == 6 && buf[8] > 0, "IPv4 header");
  CHECK(memcmp(buf + 12, f.remote, 4) == 0 && memcmp(buf + 16, f.client, 4) == 0, "IPv4 addresses");
  CHECK(csum(buf, 20, NULL, 0) == 0xffff, "IPv4 header checksum");
  uint8_t pseudo[12] = {0};
  memcpy(pseudo, f.remote, 4);
  memcpy(pseudo + 4, f.client, 4);
  pseudo[9] = 6;
  pseudo[11] = 20;
  check_tcp(buf + 20, pseudo, sizeof pseudo, flags);
}

static void test_probe6(uint8_t flags) {
  struct s5_flow f = flow4(40000);
  memcpy(f.client, "\xfd\x00\x02\x00\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
  memcpy(f.remote, "\xfd\x00\x02\x01\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
  f.v6 = 1;
  uint8_t buf[64];
  size_t len = s5_flow_probe(&f, 0x89abcdefu, 0x01234567u, flags, buf, sizeof buf);
  CHECK(len == 60, "IPv6 length %zu", len);
  CHECK(buf[0] == 0x60 && (buf[4] << 8 | buf[5]) == 20 && buf[6] == 6 && buf[7] > 0, "IPv6 header");
  CHECK(memcmp(buf + 8, f.remote, 16) == 0 && memcmp(buf + 24, f.client, 16) == 0, "IPv6 addresses");
  uint8_t pseudo[40] = {0};
  memcpy(pseudo, f.remote, 16);
  memcpy(pseudo + 16, f.client, 16);
  pseudo[35] = 20;
  pseudo[39] = 6;
  check_tcp(buf + 40, pseudo, sizeof pseudo, flags);
}

int main(void) {
  test_table();
  test_fork();
  test_probe4(S5_TCP_ACK);
  test_probe4(S5_TCP_RST);
  test_probe6(S5_TCP_ACK);
  test_probe6(S5_TCP_RST);
  return check_done();
}
