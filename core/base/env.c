/* SPDX-License-Identifier: MIT */
/* Environment switches (see env.h). */
#include "base/env.h"

#include <stdlib.h>
#include <string.h>

int s5_env_flag(const char *name) {
  const char *v = getenv(name);
  return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}
