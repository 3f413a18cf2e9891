/* SPDX-License-Identifier: MIT */
/* Switches from the environment, for tests and comparisons
 * (S5TUND_NO_UDP_OFFLOAD, S5TUND_NO_STEERING, S5TUND_POOL_SHORT_AGE,
 * S5TUND_DNS_STATE_SHORT): one reading of what "set" means for all of them. */
#ifndef S5_CORE_ENV_H
#define S5_CORE_ENV_H

/* 1 when the variable is set to anything but "" or "0". */
int s5_env_flag(const char *name);

#endif
