/* SPDX-License-Identifier: MIT */
/* The worker context's own parts: configuration snapshots for live reload
 * (a reload changes the configuration of new sessions only, so each
 * snapshot counts who still holds it) and the failure limiter's clock. */
#include "ctx/wctx.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shared/config_slot.h"
#include "base/log.h"

struct s5_cfg_snap {
  unsigned refs; /* the worker's own (while current) and its sessions' */
  struct s5_config cfg;
};

static struct s5_cfg_snap *snap_of(const struct s5_config *cfg) {
  return (struct s5_cfg_snap *)((char *)cfg - offsetof(struct s5_cfg_snap, cfg));
}

int s5_wctx_init(struct s5_wctx *w, const struct s5_config *cfg, unsigned index,
                 struct s5_queue_stats *stats) {
  memset(w, 0, sizeof *w);
  w->cfg = w->cfg0 = cfg;
  w->index = index;
  w->stats = stats;
  return uv_loop_init(&w->loop);
}

const struct s5_config *s5_wctx_cfg_hold(struct s5_wctx *w) {
  if (w->snap != NULL) w->snap->refs++;
  return w->cfg;
}

void s5_wctx_cfg_release(struct s5_wctx *w, const struct s5_config *cfg) {
  if (cfg == NULL || cfg == w->cfg0) return;
  struct s5_cfg_snap *sn = snap_of(cfg);
  if (--sn->refs == 0) free(sn);
}

/* The checks and the keys a reload cannot change were dealt with by the
 * control loop; open sessions keep what they hold. */
int s5_wctx_cfg_take(struct s5_wctx *w) {
  struct s5_cfg_snap *sn = malloc(sizeof *sn);
  if (sn == NULL) {
    s5_error("reload: out of memory: this queue keeps its configuration");
    return 0;
  }
  if (!s5_config_slot_take(&w->cfg_gen, &sn->cfg)) {
    free(sn);
    return 0;
  }
  sn->refs = 1;
  const struct s5_config *old = w->cfg;
  w->snap = sn;
  w->cfg = &sn->cfg;
  s5_wctx_cfg_release(w, old);
  return 1;
}

void s5_wctx_close(struct s5_wctx *w) {
  s5_wctx_cfg_release(w, w->cfg);
  w->cfg = w->cfg0;
  w->snap = NULL;
  int r = uv_loop_close(&w->loop);
  if (r < 0) s5_warn("queue %u: event loop closed with handles open: %s", w->index, uv_strerror(r));
}

void s5_wctx_failure(struct s5_wctx *w, enum s5_log_level level, const char *what) {
  s5_failures_note(&w->fail, uv_now(&w->loop), level, what);
}
