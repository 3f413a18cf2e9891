# SPDX-License-Identifier: MIT
# cmake -P cmake/blake3-orig.cmake, run in a scratch directory: puts the
# BLAKE3 tree a configure would use (c/, LICENSE, test_vectors/) in
# ./_blake3/blake3-1.3.1 and prints its path on the last line. Same code as
# a configure (third_party/blake3/fetch.cmake): the two pinned Debian
# packages from ./_blake3/download if they are there with their SHA-256,
# else apt-get download fetches them. Used by .ci/deb.sh for the
# orig-blake3 tarball of the Debian package.
include(${CMAKE_CURRENT_LIST_DIR}/../third_party/blake3/fetch.cmake)
s5_blake3_fetch(tree)
message("${tree}")
