# SPDX-License-Identifier: MIT
# Provides a patched lwIP 2.1.3 tree at configure time; sets S5_LWIP_DIR to it.
#
# lwIP is never committed. Where the pristine sources come from, in order:
#   1. -DLWIP_SOURCE_DIR=<pristine lwip-2.1.3 tree>: used as is, copied into
#      the build tree first so that the user's tree is never modified;
#   2. the patched copy an earlier configure left in ${CMAKE_BINARY_DIR}/_lwip,
#      if its stamp names the same patches (same SHA-256) and preparation;
#   3. Debian's source package (cmake/deb-fetch.cmake, shared with BLAKE3):
#      apt-get with a private sources.list and private
#      state/cache directories under _lwip/apt (the system's apt is untouched),
#      orig tarball checked against a pinned SHA-256;
#   4. the upstream release zip from savannah, which publishes no checksum:
#      verified only if -DLWIP_UPSTREAM_SHA256=... is given, else a warning.
# Downloads are kept in _lwip/download, so a patch change re-extracts without
# downloading again.
#
# Preparation: the release archives ship CRLF sources, while a git checkout
# has LF; src/**/*.{c,h} are converted to LF so that our LF patches apply to
# either. Then patches/*.patch are applied in name order with
# `patch -p1 --forward --batch` (or `git apply`); a patch that does not apply
# stops the configure step naming it.

include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/deb-fetch.cmake)

set(S5_LWIP_VERSION 2.1.3)
set(S5_LWIP_DEB_SUITE bookworm)
set(S5_LWIP_DEB_ORIG "lwip_2.1.3+dfsg1.orig.tar.xz")
set(S5_LWIP_DEB_SHA256 0a8276d09fc4e97bbba2f953d74af2388fc2195ea156be9d7589e297a68fde24)
set(S5_LWIP_UPSTREAM_URL "https://download.savannah.nongnu.org/releases/lwip/lwip-2.1.3.zip")
# Bump when the preparation below changes in a way that changes the tree.
set(S5_LWIP_PREP_VERSION "lf-v1")

set(LWIP_SOURCE_DIR "" CACHE PATH
    "Pristine lwIP 2.1.3 source tree to use instead of downloading one (copied, never modified)")
set(LWIP_UPSTREAM_SHA256 "" CACHE STRING
    "SHA-256 of lwip-2.1.3.zip for the upstream download fallback (upstream publishes none)")

set(_s5_lwip_root "${CMAKE_BINARY_DIR}/_lwip")
set(_s5_lwip_patch_dir "${CMAKE_CURRENT_LIST_DIR}/patches")

# Patches in application order, and one hash over their names and contents.
function(_s5_lwip_patches out_list out_hash)
  file(GLOB patches LIST_DIRECTORIES false "${_s5_lwip_patch_dir}/*.patch")
  list(SORT patches)
  set(desc "prep=${S5_LWIP_PREP_VERSION}\n")
  foreach(p IN LISTS patches)
    file(SHA256 "${p}" h)
    get_filename_component(n "${p}" NAME)
    string(APPEND desc "${n}=${h}\n")
  endforeach()
  string(SHA256 hash "${desc}")
  set(${out_list} "${patches}" PARENT_SCOPE)
  set(${out_hash} "${hash}" PARENT_SCOPE)
endfunction()

# Fails unless dir looks like an lwIP 2.1.3 source tree.
function(_s5_lwip_check_tree dir what)
  set(init_h "${dir}/src/include/lwip/init.h")
  if(NOT EXISTS "${dir}/src/core/tcp_in.c" OR NOT EXISTS "${init_h}")
    message(FATAL_ERROR "lwIP: ${what} (${dir}) is not an lwIP source tree")
  endif()
  file(STRINGS "${init_h}" v REGEX "#define LWIP_VERSION_(MAJOR|MINOR|REVISION) ")
  string(REGEX REPLACE "[^0-9;]" "" v "${v}")
  string(REGEX REPLACE ";+" "." v "${v}")
  if(NOT v STREQUAL S5_LWIP_VERSION)
    message(FATAL_ERROR "lwIP: ${what} (${dir}) is version '${v}', need ${S5_LWIP_VERSION}")
  endif()
endfunction()

# Debian's orig tarball (cmake/deb-fetch.cmake: the download cache, then
# apt-get source with private apt state; SHA-256 pinned). Sets out to the
# verified tarball, or to "" (with a message) if unavailable.
function(_s5_lwip_from_debian out)
  s5_deb_fetch(OUT archive ROOT "${_s5_lwip_root}" NAME lwIP KIND source PACKAGES lwip
               FILES "${S5_LWIP_DEB_ORIG}" SHA256S "${S5_LWIP_DEB_SHA256}"
               SUITE "${S5_LWIP_DEB_SUITE}")
  set(${out} "${archive}" PARENT_SCOPE)
endfunction()

# The upstream release zip. Sets out to the archive, or "" if unavailable.
function(_s5_lwip_from_upstream out)
  set(${out} "" PARENT_SCOPE)
  set(zip "${_s5_lwip_root}/download/lwip-${S5_LWIP_VERSION}.zip")
  if(LWIP_UPSTREAM_SHA256)
    set(hash_args EXPECTED_HASH "SHA256=${LWIP_UPSTREAM_SHA256}")
    s5_sha256_ok("${zip}" "${LWIP_UPSTREAM_SHA256}" ok)
    if(ok)
      set(${out} "${zip}" PARENT_SCOPE)
      return()
    endif()
  else()
    set(hash_args "")
    message(WARNING
      "lwIP: downloading ${S5_LWIP_UPSTREAM_URL} WITHOUT checksum verification: "
      "upstream publishes no SHA-256. Pass -DLWIP_UPSTREAM_SHA256=<hash> to verify it, "
      "or -DLWIP_SOURCE_DIR=<tree> to use a tree you checked yourself.")
  endif()
  message(STATUS "lwIP: downloading ${S5_LWIP_UPSTREAM_URL}")
  file(DOWNLOAD "${S5_LWIP_UPSTREAM_URL}" "${zip}.part" TLS_VERIFY ON ${hash_args}
       STATUS st)
  list(GET st 0 code)
  if(NOT code EQUAL 0)
    file(REMOVE "${zip}.part")
    message(STATUS "lwIP: upstream download failed: ${st}")
    return()
  endif()
  file(RENAME "${zip}.part" "${zip}")
  set(${out} "${zip}" PARENT_SCOPE)
endfunction()

# CRLF -> LF for the sources the patches touch (see the header comment).
function(_s5_lwip_to_lf tree)
  file(GLOB_RECURSE files "${tree}/src/*.c" "${tree}/src/*.h")
  foreach(f IN LISTS files)
    # file(READ) already drops CRs (CMake 3.25); the REPLACE covers a CMake
    # that would keep them. A length change tells which files to rewrite.
    file(READ "${f}" text)
    string(REPLACE "\r\n" "\n" text "${text}")
    string(LENGTH "${text}" chars)
    file(SIZE "${f}" bytes)
    if(NOT chars EQUAL bytes)
      file(WRITE "${f}" "${text}")
    endif()
  endforeach()
endfunction()

function(_s5_lwip_apply_patches tree patches origin)
  find_program(S5_PATCH patch)
  if(NOT S5_PATCH)
    find_package(Git QUIET)
    if(NOT GIT_EXECUTABLE)
      message(FATAL_ERROR "lwIP: neither `patch` nor `git` found to apply lwIP patches")
    endif()
  endif()
  foreach(p IN LISTS patches)
    get_filename_component(name "${p}" NAME)
    if(S5_PATCH)
      set(cmd "${S5_PATCH}" -p1 --forward --batch --no-backup-if-mismatch -i "${p}")
    else()
      # The ceiling keeps git from treating an enclosing repository (the build
      # tree may live inside the project's checkout) as the one to patch.
      set(cmd "${CMAKE_COMMAND}" -E env "GIT_CEILING_DIRECTORIES=${_s5_lwip_root}"
              "${GIT_EXECUTABLE}" apply -p1 --whitespace=nowarn "${p}")
    endif()
    execute_process(COMMAND ${cmd} WORKING_DIRECTORY "${tree}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "lwIP: patch ${name} does not apply to lwIP from ${origin}:\n${log}")
    endif()
    message(STATUS "lwIP: applied ${name}")
  endforeach()
endfunction()

# Builds the patched tree in a staging directory, then moves it into place and
# writes the stamp last: an interrupted run leaves no stamp, so it is redone.
function(_s5_lwip_prepare kind source origin tree stamp patches stamp_text)
  set(staging "${_s5_lwip_root}/staging")
  file(REMOVE_RECURSE "${staging}")
  file(MAKE_DIRECTORY "${staging}")
  if(kind STREQUAL "dir")
    file(COPY "${source}/" DESTINATION "${staging}/lwip-${S5_LWIP_VERSION}"
         PATTERN ".git" EXCLUDE)
  else()
    file(ARCHIVE_EXTRACT INPUT "${source}" DESTINATION "${staging}")
  endif()
  set(new "${staging}/lwip-${S5_LWIP_VERSION}")
  _s5_lwip_check_tree("${new}" "${origin}")
  _s5_lwip_to_lf("${new}")
  _s5_lwip_apply_patches("${new}" "${patches}" "${origin}")
  file(REMOVE "${stamp}")
  file(REMOVE_RECURSE "${tree}")
  file(RENAME "${new}" "${tree}")
  file(REMOVE_RECURSE "${staging}")
  file(WRITE "${stamp}" "${stamp_text}")
endfunction()

function(s5_lwip_fetch out_dir)
  set(tree "${_s5_lwip_root}/lwip-${S5_LWIP_VERSION}")
  set(stamp "${_s5_lwip_root}/lwip-${S5_LWIP_VERSION}.stamp")
  _s5_lwip_patches(patches patch_hash)
  # Editing or adding a patch must re-run configure (and so re-extract).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${patches} "${_s5_lwip_patch_dir}")

  set(old "")
  if(EXISTS "${stamp}" AND EXISTS "${tree}/src/core/tcp_in.c")
    file(READ "${stamp}" old)
  endif()

  if(LWIP_SOURCE_DIR)
    get_filename_component(src "${LWIP_SOURCE_DIR}" REALPATH)
    _s5_lwip_check_tree("${src}" "LWIP_SOURCE_DIR")
    set(stamp_text "patches=${patch_hash}\norigin=dir:${src}\n")
    if(old STREQUAL stamp_text)
      message(STATUS "lwIP: using the patched copy of ${src} in ${tree}")
    else()
      message(STATUS "lwIP: copying ${src} (LWIP_SOURCE_DIR) into the build tree")
      _s5_lwip_prepare(dir "${src}" "LWIP_SOURCE_DIR ${src}" "${tree}" "${stamp}"
                       "${patches}" "${stamp_text}")
    endif()
    set(${out_dir} "${tree}" PARENT_SCOPE)
    return()
  endif()

  # Any earlier origin is fine as long as the same patches were applied to it.
  if(old MATCHES "^patches=${patch_hash}\n")
    message(STATUS "lwIP: using cached patched tree ${tree}")
    set(${out_dir} "${tree}" PARENT_SCOPE)
    return()
  endif()

  _s5_lwip_from_debian(archive)
  if(archive)
    set(origin "Debian ${S5_LWIP_DEB_ORIG}")
  else()
    _s5_lwip_from_upstream(archive)
    set(origin "upstream lwip-${S5_LWIP_VERSION}.zip")
  endif()
  if(NOT archive)
    message(FATAL_ERROR "lwIP: could not obtain lwIP ${S5_LWIP_VERSION} (Debian source "
                        "package and upstream download both failed). Pass "
                        "-DLWIP_SOURCE_DIR=<pristine lwip-${S5_LWIP_VERSION} tree>.")
  endif()
  message(STATUS "lwIP: extracting ${archive}")
  _s5_lwip_prepare(archive "${archive}" "${origin}" "${tree}" "${stamp}" "${patches}"
                   "patches=${patch_hash}\norigin=${origin}\n")
  set(${out_dir} "${tree}" PARENT_SCOPE)
endfunction()
