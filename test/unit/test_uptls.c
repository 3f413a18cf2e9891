/* SPDX-License-Identifier: MIT */
/* core/shared/uptls.c: an upstream's TLS state in the shared table, changed
 * by exactly one of the workers that report the same handshake (the one
 * that logs it), a new state seen whole (name with its hash), the refusals
 * counted by cause; and --stats's TLS table (threads/ctl/upstream_render.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "shared/uptls.h"
#include "threads/ctl/render.h"

static struct s5_config cfg;
static struct s5_uptab tab;
static int changed[8];

static void *report(void *arg) {
  int *mine = arg;
  for (int k = 0; k < 1000; k++) *mine += s5_uptab_tls_state(&tab, 1, 0x0304, 0x1301, 1, "proxy.test");
  return NULL;
}

static void test_state(void) {
  cfg.n_upstreams = 2;
  snprintf(cfg.upstreams[0].name, sizeof cfg.upstreams[0].name, "plain");
  snprintf(cfg.upstreams[1].name, sizeof cfg.upstreams[1].name, "tls");
  s5_uptab_init(&tab, &cfg);
  struct s5_up_tls st;
  s5_uptab_tls_read(&tab.u[1], &st);
  CHECK(st.version == 0 && st.name[0] == '\0', "no handshake yet: nothing");
  pthread_t th[8];
  for (int i = 0; i < 8; i++) CHECK(pthread_create(&th[i], NULL, report, &changed[i]) == 0, "pthread_create");
  int sum = 0;
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL), sum += changed[i];
  CHECK(sum == 1, "8 workers x 1000 handshakes of one state: %d changes, want 1 (one info line)", sum);
  s5_uptab_tls_read(&tab.u[1], &st);
  char b[16];
  CHECK(st.version == 0x0304 && st.cipher == 0x1301 && st.verified && strcmp(st.name, "proxy.test") == 0,
        "read back: %x %x %d %s", st.version, st.cipher, st.verified, st.name);
  CHECK(strcmp(s5_tls_version_name(st.version, b, sizeof b), "TLSv1.3") == 0, "TLSv1.3");
  CHECK(strcmp(s5_tls_cipher_name(st.cipher, b, sizeof b), "TLS_AES_128_GCM_SHA256") == 0,
        "the suite's name");
  CHECK(strcmp(s5_tls_cipher_name(0xC0FF, b, sizeof b), "0xC0FF") == 0, "an unknown suite: its number");
  CHECK(s5_uptab_tls_state(&tab, 1, 0x0303, 0xC02F, 0, "10.0.0.1") == 1, "a change: reported");
  s5_uptab_tls_read(&tab.u[1], &st);
  CHECK(st.version == 0x0303 && !st.verified && strcmp(st.name, "10.0.0.1") == 0, "the new state whole");
  const char *lng = "a-name-longer-than-the-table-holds.example.with.more.labels.test";
  CHECK(s5_uptab_tls_state(&tab, 1, 0x0304, 0x1302, 1, lng) == 1, "a long name");
  s5_uptab_tls_read(&tab.u[1], &st);
  CHECK(strlen(st.name) == 47 && strncmp(st.name, lng, 47) == 0, "cut to 47 bytes: %s", st.name);
  s5_uptab_tls_read(&tab.u[0], &st);
  CHECK(st.version == 0, "the other upstream: untouched");
  CHECK(s5_uptab_tls_failed(&tab, 1, S5_TLS_NAME) == 1 && s5_uptab_tls_failed(&tab, 1, S5_TLS_NAME) == 2 &&
          s5_uptab_tls_failed(&tab, 1, S5_TLS_ALERT) == 1,
        "refusals counted by cause (the first of each: the warn line)");
  CHECK(strcmp(s5_tls_cause_name(S5_TLS_NOT_TLS), "not_tls") == 0 &&
          strcmp(s5_tls_cause_name(S5_TLS_CA), "ca") == 0,
        "cause names");
}

/* The TLS table: a name over every column, the state and the causes. */
static void test_table(void) {
  static const char json[] =
    "{\"upstreams\":[{\"name\":\"a\",\"state\":\"up\",\"tls_handshakes\":5,\"tls_resumed\":3,"
    "\"tls_version\":\"TLSv1.3\",\"tls_cipher\":\"TLS_AES_128_GCM_SHA256\",\"tls_name\":\"proxy.test\","
    "\"tls_verified\":true,\"tls_failed_name\":2,\"tls_failed_alert\":1},"
    "{\"name\":\"b\",\"state\":\"up\",\"tls_handshakes\":0,\"tls_version\":\"\",\"tls_cipher\":\"\",\"tls_name\":\"\","
    "\"tls_verified\":false,\"tls_failed_ca\":4},"
    "{\"name\":\"c\",\"state\":\"up\",\"tls_version\":\"\",\"tls_verified\":false}]}";
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  CHECK(f != NULL, "open_memstream");
  if (f == NULL) return;
  s5_upstreams_part.table(f, json);
  fclose(f);
  const char *head = strstr(out, "TLS_of "), *a = head ? strstr(head, "\na ") : NULL,
             *b = head ? strstr(head, "\nb ") : NULL;
  CHECK(head != NULL && a != NULL && b != NULL && strstr(head, "\nc ") == NULL, "TLS table:\n%s",
        head ? head : out);
  if (head == NULL || a == NULL || b == NULL) return;
  int n[3] = {0, 0, 0};
  const char *lines[3] = {head, a + 1, b + 1};
  for (int l = 0; l < 3; l++)
    for (const char *p = lines[l]; *p != '\0' && *p != '\n';) {
      while (*p == ' ') p++;
      if (*p == '\0' || *p == '\n') break;
      n[l]++;
      while (*p != ' ' && *p != '\0' && *p != '\n') p++;
    }
  CHECK(n[0] == 8 && n[1] == 8 && n[2] == 8, "columns %d, %d, %d:\n%s", n[0], n[1], n[2], out);
  CHECK(strstr(a, "TLSv1.3") && strstr(a, "proxy.test") && strstr(a, " yes ") && strstr(a, "name=2,alert=1"),
        "a's row:\n%s", out);
  CHECK(strstr(b, "ca=4") != NULL, "b's row:\n%s", out);
  free(out);
}

int main(void) {
  test_state();
  test_table();
  return check_done();
}
