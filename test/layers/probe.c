/* SPDX-License-Identifier: MIT */
/* Compiled as if it were a file of one layer or floor (linked like its
 * library, test/CMakeLists.txt): it includes S5_PROBE_HEADER, which is
 * either a header of its own (it must be found, so that a failure is the
 * layering's, not the probe's) or one of a layer or floor above (it must
 * not be). Never part of the program. */
#include S5_PROBE_HEADER

int s5_layer_probe(void) { return 0; }
