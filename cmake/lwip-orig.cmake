# SPDX-License-Identifier: MIT
# cmake -P cmake/lwip-orig.cmake, run in a scratch directory: puts Debian's
# pristine lwIP orig tarball in ./_lwip/download and prints its path on the
# last line. Same code as a configure (third_party/lwip/fetch.cmake): a
# tarball already there is reused if its SHA-256 matches, else apt-get
# source fetches it with private apt state; the SHA-256 is checked either
# way. Used by .ci/deb.sh for the orig-lwip tarball of the Debian package.
include(${CMAKE_CURRENT_LIST_DIR}/../third_party/lwip/fetch.cmake)
_s5_lwip_from_debian(archive)
if(NOT archive)
  message(FATAL_ERROR "lwIP: Debian's ${S5_LWIP_DEB_ORIG} is not available (see above); "
                      "put a copy with SHA-256 ${S5_LWIP_DEB_SHA256} in "
                      "${CMAKE_BINARY_DIR}/_lwip/download")
endif()
message("${archive}")
