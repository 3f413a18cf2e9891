/* SPDX-License-Identifier: MIT */
/* The --connections answer: the lists the workers wrote into the shared
 * connection table (core/shared/conntab.c), as a table or JSON. */
#include "threads/ctl/conntab_render.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <sys/socket.h>

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
  _Static_assert(sizeof names / sizeof *names == S5_CONN_DRAINING + 1, "a name for every enum s5_conn_state");
  return s < sizeof names / sizeof *names ? names[s] : "?";
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

/* Every answered entry, as rows; NULL when out of memory. */
static struct row *collect(uint64_t req, size_t *count) {
  size_t total = 0;
  uint32_t n;
  uint64_t over;
  for (unsigned i = 0; i < s5_conntab_queues(); i++)
    if (s5_conntab_answer(i, req, &n, &over) != NULL) total += n;
  struct row *rows = malloc((total ? total : 1) * sizeof *rows);
  if (rows == NULL) return NULL;
  size_t k = 0;
  for (unsigned i = 0; i < s5_conntab_queues(); i++) {
    const struct s5_conn *c = s5_conntab_answer(i, req, &n, &over);
    for (uint32_t j = 0; c != NULL && j < n; j++) rows[k++] = (struct row){i, &c[j]};
  }
  *count = k;
  return rows;
}

/* Queues that did not answer, and entries beyond a queue's list, named. */
static void render_notes(FILE *out, uint64_t req) {
  for (unsigned i = 0; i < s5_conntab_queues(); i++) {
    uint32_t n;
    uint64_t over;
    if (s5_conntab_answer(i, req, &n, &over) == NULL) fprintf(out, "(queue %u did not answer in time)\n", i);
    else if (over) fprintf(out, "(queue %u: %llu more not listed)\n", i, (unsigned long long)over);
  }
}

void s5_conntab_render(FILE *out, uint64_t req, int json, uint64_t now_ms) {
  size_t n = 0;
  struct row *rows = collect(req, &n);
  if (rows == NULL) {
    fprintf(out, json ? "[]\n" : "out of memory\n");
    return;
  }
  qsort(rows, n, sizeof *rows, newest_first);
  if (!json)
    fprintf(out, "%-5s %-5s %-46s %-46s %-12s %-11s %12s %12s %9s %9s\n", "queue", "proto", "client",
            "destination", "upstream", "state", "bytes up", "bytes down", "age s", "idle s");
  else fputc('[', out);
  for (size_t k = 0; k < n; k++) {
    const struct s5_conn *c = rows[k].c;
    char cl[64], de[200], up[72];
    snprintf(up, sizeof up, "%s%s%s", c->group, c->group[0] ? "/" : "", c->upstream[0] ? c->upstream : "-");
    endpoint(c->client, c->client_port, c->v6, cl, sizeof cl);
    destination(c, de, sizeof de);
    double age = (double)(now_ms > c->started_ms ? now_ms - c->started_ms : 0) / 1000.0;
    double idle = (double)(now_ms > c->last_ms ? now_ms - c->last_ms : 0) / 1000.0;
    if (!json) {
      fprintf(out, "%-5u %-5s %-46s %-46s %-12s %-11s %12llu %12llu %9.1f %9.1f\n", rows[k].queue,
              c->udp ? "udp" : "tcp", cl, de, up, state_name(c->state), (unsigned long long)c->bytes_up,
              (unsigned long long)c->bytes_down, age, idle);
      continue;
    }
    fprintf(out, "%s{\"queue\":%u,\"proto\":\"%s\",\"id\":%llu,\"client\":\"%s\",\"destination\":\"",
            k ? "," : "", rows[k].queue, c->udp ? "udp" : "tcp", (unsigned long long)c->id, cl);
    json_text(out, de);
    fprintf(out, "\",\"name\":\"");
    json_text(out, c->name);
    fprintf(out, "\",\"named_by\":\"");
    json_text(out, c->named_by);
    fprintf(out, "\",\"upstream\":\"");
    json_text(out, c->upstream);
    fprintf(out, "\",\"rule\":\"");
    json_text(out, c->rule);
    fprintf(out, "\",\"group\":\"");
    json_text(out, c->group);
    fprintf(out, "\",\"state\":\"%s\",\"bytes_up\":%llu,\"bytes_down\":%llu,\"age\":%.3f,\"idle\":%.3f}",
            state_name(c->state), (unsigned long long)c->bytes_up, (unsigned long long)c->bytes_down, age,
            idle);
  }
  if (json) fputs("]\n", out);
  if (!json) render_notes(out, req);
  free(rows);
}
