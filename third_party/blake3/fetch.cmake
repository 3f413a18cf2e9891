# SPDX-License-Identifier: MIT
# Provides BLAKE3's reference C implementation and its test vectors at
# configure time; sets S5_BLAKE3_DIR to a tree laid out as upstream's
# repository is: c/ (blake3.h, blake3.c, ...) and test_vectors/test_vectors.json.
#
# BLAKE3 is never committed. Where it comes from, in order:
#   1. -DBLAKE3_SOURCE_DIR=<tree with c/ and test_vectors/test_vectors.json>
#      (e.g. an upstream checkout, or the Debian package's blake3/): used in
#      place, read only;
#   2. the tree an earlier configure left in ${CMAKE_BINARY_DIR}/_blake3, if
#      its stamp names the same two pinned packages;
#   3. two binary packages of Debian 12 (bookworm), fetched by
#      cmake/deb-fetch.cmake (download cache _blake3/download, then apt-get
#      download with private apt state), each checked against its pinned
#      SHA-256:
#      - librust-blake3-dev 1.3.1-1 (amd64; its files are the same on every
#        architecture): the crate's c/ directory, the reference C code;
#      - golang-lukechampine-blake3-dev 1.1.6-1 (all): testdata/vectors.json,
#        that Go port's copy of upstream's test_vectors.json (22 cases,
#        lengths 0 to 100000, 131-byte outputs; without the context string).
#      The source package rust-blake3 would have test_vectors/ in one
#      tarball, but the mirror answers 404 for its orig tarball.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/deb-fetch.cmake)

set(S5_BLAKE3_VERSION 1.3.1)
set(S5_BLAKE3_DEB librust-blake3-dev_1.3.1-1_amd64.deb)
set(S5_BLAKE3_DEB_SHA256 48affb9072bf90eb2bd92f31c95d73d89117413112f367c2ab5c0425cbff2b76)
set(S5_BLAKE3_VEC_DEB golang-lukechampine-blake3-dev_1.1.6-1_all.deb)
set(S5_BLAKE3_VEC_DEB_SHA256 935e8d04b65807b0f9f048634b4d1fe696442751498260f1d584f98f2dc12148)

set(BLAKE3_SOURCE_DIR "" CACHE PATH
    "BLAKE3 tree (c/ and test_vectors/test_vectors.json) to use instead of downloading one")

set(_s5_blake3_root "${CMAKE_BINARY_DIR}/_blake3")

function(_s5_blake3_check_tree dir what)
  foreach(f c/blake3.h c/blake3.c c/blake3_portable.c c/blake3_dispatch.c
            test_vectors/test_vectors.json)
    if(NOT EXISTS "${dir}/${f}")
      message(FATAL_ERROR "BLAKE3: ${what} (${dir}) has no ${f}")
    endif()
  endforeach()
  file(STRINGS "${dir}/c/blake3.h" v REGEX "#define BLAKE3_VERSION_STRING ")
  if(NOT v MATCHES "\"${S5_BLAKE3_VERSION}\"")
    message(FATAL_ERROR "BLAKE3: ${what} (${dir}) is '${v}', need ${S5_BLAKE3_VERSION}")
  endif()
endfunction()

# A .deb's data, unpacked into dest (CMake reads the ar and tar formats).
function(_s5_blake3_unpack_deb deb dest)
  set(tmp "${dest}.deb")
  file(REMOVE_RECURSE "${tmp}")
  file(ARCHIVE_EXTRACT INPUT "${deb}" DESTINATION "${tmp}")
  file(GLOB data "${tmp}/data.tar.*")
  if(NOT data)
    message(FATAL_ERROR "BLAKE3: ${deb} has no data.tar.*")
  endif()
  file(ARCHIVE_EXTRACT INPUT "${data}" DESTINATION "${dest}")
  file(REMOVE_RECURSE "${tmp}")
endfunction()

function(s5_blake3_fetch out_dir)
  if(BLAKE3_SOURCE_DIR)
    get_filename_component(src "${BLAKE3_SOURCE_DIR}" REALPATH)
    _s5_blake3_check_tree("${src}" "BLAKE3_SOURCE_DIR")
    message(STATUS "BLAKE3: using ${src} (BLAKE3_SOURCE_DIR)")
    set(${out_dir} "${src}" PARENT_SCOPE)
    return()
  endif()

  set(tree "${_s5_blake3_root}/blake3-${S5_BLAKE3_VERSION}")
  set(stamp "${tree}.stamp")
  set(stamp_text "${S5_BLAKE3_DEB}=${S5_BLAKE3_DEB_SHA256}\n"
                 "${S5_BLAKE3_VEC_DEB}=${S5_BLAKE3_VEC_DEB_SHA256}\n")
  string(CONCAT stamp_text ${stamp_text})
  if(EXISTS "${stamp}")
    file(READ "${stamp}" old)
    if(old STREQUAL stamp_text)
      message(STATUS "BLAKE3: using cached tree ${tree}")
      set(${out_dir} "${tree}" PARENT_SCOPE)
      return()
    endif()
  endif()

  s5_deb_fetch(OUT debs ROOT "${_s5_blake3_root}" NAME BLAKE3 KIND binary
               PACKAGES librust-blake3-dev golang-lukechampine-blake3-dev
               FILES "${S5_BLAKE3_DEB}" "${S5_BLAKE3_VEC_DEB}"
               SHA256S "${S5_BLAKE3_DEB_SHA256}" "${S5_BLAKE3_VEC_DEB_SHA256}")
  if(NOT debs)
    message(FATAL_ERROR "BLAKE3: could not obtain Debian's ${S5_BLAKE3_DEB} and "
                        "${S5_BLAKE3_VEC_DEB} (see above). Put them (SHA-256 "
                        "${S5_BLAKE3_DEB_SHA256} and ${S5_BLAKE3_VEC_DEB_SHA256}) in "
                        "${_s5_blake3_root}/download, or pass -DBLAKE3_SOURCE_DIR=<tree>.")
  endif()

  list(GET debs 0 deb)
  list(GET debs 1 vec_deb)
  # Staged, then moved into place; the stamp is written last.
  message(STATUS "BLAKE3: unpacking ${deb} and ${vec_deb}")
  set(staging "${_s5_blake3_root}/staging")
  file(REMOVE_RECURSE "${staging}")
  _s5_blake3_unpack_deb("${deb}" "${staging}/rust")
  _s5_blake3_unpack_deb("${vec_deb}" "${staging}/go")
  set(crate "${staging}/rust/usr/share/cargo/registry/blake3-${S5_BLAKE3_VERSION}")
  set(new "${staging}/blake3-${S5_BLAKE3_VERSION}")
  file(COPY "${crate}/c" "${crate}/LICENSE" DESTINATION "${new}")
  file(COPY "${staging}/go/usr/share/gocode/src/lukechampine.com/blake3/testdata/vectors.json"
       DESTINATION "${new}/test_vectors")
  file(RENAME "${new}/test_vectors/vectors.json" "${new}/test_vectors/test_vectors.json")
  _s5_blake3_check_tree("${new}" "Debian's ${S5_BLAKE3_DEB}")
  file(REMOVE "${stamp}")
  file(REMOVE_RECURSE "${tree}")
  file(RENAME "${new}" "${tree}")
  file(REMOVE_RECURSE "${staging}")
  file(WRITE "${stamp}" "${stamp_text}")
  set(${out_dir} "${tree}" PARENT_SCOPE)
endfunction()
