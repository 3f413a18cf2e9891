/* SPDX-License-Identifier: MIT */
/* Compiled as if it were a file of core/base/ (linked like s5_base): with
 * S5_PROBE_UP it includes a header of a layer above, which must not be
 * found; without, a header of its own layer, which must be (so the failure
 * is the layering's, not the probe's). Never part of the program. */
#ifdef S5_PROBE_UP
#include "tcp/session.h"
#else
#include "base/log.h"
#endif

int s5_layer_probe(void) { return 0; }
