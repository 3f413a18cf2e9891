/* SPDX-License-Identifier: MIT */
/* --explain DST:PORT and its companions --name, --src, --proto: the flow
 * that threads/cli/explain.c looks up in the [rules] (see config.h). */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ini/internal.h"

static struct s5_explain explain;

const struct s5_explain *s5_args_explain(void) { return &explain; }

int s5_explain_flag(const char *flag, const char *value, char *err, size_t errlen) {
  socklen_t len;
  if (flag == NULL) { /* a fresh command line */
    memset(&explain, 0, sizeof explain);
    explain.proto = IPPROTO_TCP;
    explain.proto_given = 0;
    return 0;
  }
  if (strcmp(flag, "explain") == 0) return s5_parse_listen(value, &explain.dst, err, errlen);
  if (strcmp(flag, "name") == 0 || strcmp(flag, "sni") == 0) {
    if (explain.name[0] != '\0') {
      snprintf(err, errlen, "one of --name and --sni, once");
      return -1;
    }
    explain.sniffed = flag[1] == 'n';
    if (strlen(value) < sizeof explain.name) {
      snprintf(explain.name, sizeof explain.name, "%s", value);
      return 0;
    }
    snprintf(err, errlen, "a name is at most %zu characters", sizeof explain.name - 1);
    return -1;
  }
  if (strcmp(flag, "src") == 0) return s5_parse_ip(value, 0, &explain.src, &len, err, errlen);
  explain.proto_given = 1;
  if (strcmp(value, "tcp") == 0 || strcmp(value, "udp") == 0) {
    explain.proto = value[0] == 't' ? IPPROTO_TCP : IPPROTO_UDP;
    return 0;
  }
  snprintf(err, errlen, "takes tcp or udp");
  return -1;
}
