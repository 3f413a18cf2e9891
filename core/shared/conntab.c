/* SPDX-License-Identifier: MIT */
#include "shared/conntab.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

struct s5_connq {
  uint64_t req;  /* written by the control loop */
  uint64_t done; /* written by the worker: the request answered */
  uint32_t n;    /* entries of the answer */
  uint64_t over; /* connections beyond S5_CONN_MAX */
  struct s5_conn c[S5_CONN_MAX];
};

static struct s5_connq *lists; /* set before the workers start */
static unsigned nlists;
static uint64_t last_req; /* the control loop's */

int s5_conntab_setup(unsigned queues) {
  size_t len = (size_t)queues * sizeof *lists;
  /* Pages are touched only by answers: an unused list costs nothing. */
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return -errno;
  lists = m;
  nlists = queues;
  return 0;
}

struct s5_connq *s5_conntab_queue(unsigned queue) {
  return lists != NULL && queue < nlists ? &lists[queue] : NULL;
}

void s5_conntab_begin(struct s5_connq *q) {
  q->n = 0;
  q->over = 0;
}

uint64_t s5_conntab_pending(const struct s5_connq *q) {
  uint64_t req = __atomic_load_n(&q->req, __ATOMIC_ACQUIRE);
  return req != __atomic_load_n(&q->done, __ATOMIC_RELAXED) ? req : 0;
}

void s5_conntab_put(struct s5_connq *q, const struct s5_conn *c) {
  if (q->n < S5_CONN_MAX) q->c[q->n++] = *c;
  else q->over++;
}

void s5_conntab_done(struct s5_connq *q, uint64_t req) { __atomic_store_n(&q->done, req, __ATOMIC_RELEASE); }

uint64_t s5_conntab_request(void) {
  uint64_t req = ++last_req;
  /* Only the workers write their lists (a late one may still be writing
   * the answer to an earlier request): each empties its own first. */
  for (unsigned i = 0; i < nlists; i++) __atomic_store_n(&lists[i].req, req, __ATOMIC_RELEASE);
  return req;
}

int s5_conntab_answered(unsigned queue, uint64_t req) {
  return queue < nlists && __atomic_load_n(&lists[queue].done, __ATOMIC_ACQUIRE) == req;
}

/* ---- rendering ---- */

struct row {
  unsigned queue;
  const struct s5_conn *c;
};

static int newest_first(const void *a, const void *b) {
  const struct s5_conn *x = ((const struct row *)a)->c, *y = ((const struct row *)b)->c;
  return x->started_ms < y->started_ms ? 1 : x->started_ms > y->started_ms ? -1 : 0;
}

static void endpoint(const uint8_t *a, uint16_t port, int v6, char *buf, size_t len) {
  char t[INET6_ADDRSTRLEN];
  inet_ntop(v6 ? AF_INET6 : AF_INET, a, t, sizeof t);
  snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", t, port);
}

static void destination(const struct s5_conn *c, char *buf, size_t len) {
  if (!c->has_dest) snprintf(buf, len, "-");
  else if (c->name[0] != '\0') snprintf(buf, len, "%s:%u", c->name, c->dest_port);
  else endpoint(c->dest, c->dest_port, c->v6, buf, len);
}

static const char *state_name(uint8_t s) {
  static const char *const names[] = {"connecting", "open", "half-closed", "draining"};
  return s < 4 ? names[s] : "?";
}

/* A name as a JSON string's content: the names are [a-z0-9_.-] already
 * (mapped DNS refuses others), but nothing here relies on it. */
static void json_text(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(out, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(out, "\\u%04x", (unsigned char)*s);
    else fputc(*s, out);
  }
}

void s5_conntab_render(FILE *out, uint64_t req, int json, uint64_t now_ms) {
  size_t total = 0;
  for (unsigned i = 0; i < nlists; i++)
    if (s5_conntab_answered(i, req)) total += lists[i].n;
  struct row *rows = malloc((total ? total : 1) * sizeof *rows);
  if (rows == NULL) {
    fprintf(out, json ? "[]\n" : "out of memory\n");
    return;
  }
  size_t n = 0;
  for (unsigned i = 0; i < nlists; i++) {
    if (!s5_conntab_answered(i, req)) continue;
    for (uint32_t k = 0; k < lists[i].n; k++) rows[n++] = (struct row){i, &lists[i].c[k]};
  }
  qsort(rows, n, sizeof *rows, newest_first);
  if (!json)
    fprintf(out, "%-5s %-5s %-46s %-46s %-11s %12s %12s %9s %9s\n", "queue", "proto", "client", "destination",
            "state", "bytes up", "bytes down", "age s", "idle s");
  else fputc('[', out);
  for (size_t k = 0; k < n; k++) {
    const struct s5_conn *c = rows[k].c;
    char cl[64], de[200];
    endpoint(c->client, c->client_port, c->v6, cl, sizeof cl);
    destination(c, de, sizeof de);
    double age = (double)(now_ms > c->started_ms ? now_ms - c->started_ms : 0) / 1000.0;
    double idle = (double)(now_ms > c->last_ms ? now_ms - c->last_ms : 0) / 1000.0;
    if (!json) {
      fprintf(out, "%-5u %-5s %-46s %-46s %-11s %12llu %12llu %9.1f %9.1f\n", rows[k].queue,
              c->udp ? "udp" : "tcp", cl, de, state_name(c->state), (unsigned long long)c->bytes_up,
              (unsigned long long)c->bytes_down, age, idle);
      continue;
    }
    fprintf(out, "%s{\"queue\":%u,\"proto\":\"%s\",\"id\":%llu,\"client\":\"%s\",\"destination\":\"",
            k ? "," : "", rows[k].queue, c->udp ? "udp" : "tcp", (unsigned long long)c->id, cl);
    json_text(out, de);
    fprintf(out, "\",\"name\":\"");
    json_text(out, c->name);
    fprintf(out, "\",\"state\":\"%s\",\"bytes_up\":%llu,\"bytes_down\":%llu,\"age\":%.3f,\"idle\":%.3f}",
            state_name(c->state), (unsigned long long)c->bytes_up, (unsigned long long)c->bytes_down, age,
            idle);
  }
  if (json) fputs("]\n", out);
  for (unsigned i = 0; i < nlists && !json; i++) {
    if (!s5_conntab_answered(i, req)) fprintf(out, "(queue %u did not answer in time)\n", i);
    else if (lists[i].over)
      fprintf(out, "(queue %u: %llu more not listed)\n", i, (unsigned long long)lists[i].over);
  }
  free(rows);
}
