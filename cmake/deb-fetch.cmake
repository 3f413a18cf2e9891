# SPDX-License-Identifier: MIT
# One file from Debian's archive, checked against a pinned SHA-256: how the
# third-party code that is never committed (third_party/lwip, third_party/
# blake3) is fetched at configure time.
#
# s5_deb_fetch(OUT var ROOT dir NAME label KIND source|binary
#              PACKAGES pkg... FILES name... SHA256S hash... [SUITE suite] [ARCH arch])
#
# FILES[i] comes from PACKAGES[i] and must have SHA256S[i]. Sets var to the
# list of ROOT/download/FILES[i] once each has its SHA-256, or to "" (with a
# message saying why) when one cannot be had. In order, for each file:
#   1. ROOT/download/FILE if it is there with the right SHA-256: an earlier
#      configure's download, or a copy seeded by hand for an offline build;
#   2. apt-get, once for all the files still missing, with a private
#      sources.list and private state and cache directories under ROOT/apt
#      (the system's apt configuration, lists, dpkg status and locks are not
#      touched; it needs apt-get and the Debian archive keyring): KIND
#      source runs `apt-get source --download-only PACKAGE` (FILE is one of
#      the source package's files, its orig tarball), KIND binary runs
#      `apt-get download PACKAGE...` for ARCH (default amd64: the one pinned
#      file whatever the build machine is; FILE is the .deb). A download
#      with another SHA-256 stops the configure step. ROOT/apt is removed
#      afterwards (~20 MB of lists).
include_guard(GLOBAL)

set(S5_DEB_KEYRING /usr/share/keyrings/debian-archive-keyring.gpg)
set(S5_DEB_MIRROR http://deb.debian.org/debian)

function(s5_sha256_ok file expected out)
  set(ok FALSE)
  if(EXISTS "${file}")
    file(SHA256 "${file}" h)
    if(h STREQUAL expected)
      set(ok TRUE)
    endif()
  endif()
  set(${out} ${ok} PARENT_SCOPE)
endfunction()

function(s5_deb_fetch)
  cmake_parse_arguments(D "" "OUT;ROOT;NAME;KIND;SUITE;ARCH" "PACKAGES;FILES;SHA256S" ${ARGN})
  foreach(req OUT ROOT NAME KIND PACKAGES FILES SHA256S)
    if(NOT D_${req})
      message(FATAL_ERROR "s5_deb_fetch: ${req} missing")
    endif()
  endforeach()
  list(LENGTH D_PACKAGES n)
  list(LENGTH D_FILES nf)
  list(LENGTH D_SHA256S nh)
  if(NOT n EQUAL nf OR NOT n EQUAL nh)
    message(FATAL_ERROR "s5_deb_fetch: PACKAGES, FILES and SHA256S differ in length")
  endif()
  if(NOT D_SUITE)
    set(D_SUITE bookworm)
  endif()
  if(NOT D_ARCH)
    set(D_ARCH amd64)
  endif()
  set(${D_OUT} "" PARENT_SCOPE)
  set(dl "${D_ROOT}/download")
  set(paths "")
  set(missing "")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    list(GET D_FILES ${i} f)
    list(GET D_SHA256S ${i} h)
    list(APPEND paths "${dl}/${f}")
    s5_sha256_ok("${dl}/${f}" "${h}" ok)
    if(NOT ok)
      list(APPEND missing ${i})
    endif()
  endforeach()
  if("${missing}" STREQUAL "")  # not if(NOT missing): a list "0" is false
    set(${D_OUT} "${paths}" PARENT_SCOPE)
    return()
  endif()

  find_program(S5_APT_GET apt-get)
  if(NOT S5_APT_GET OR NOT EXISTS "${S5_DEB_KEYRING}")
    message(STATUS "${D_NAME}: apt-get or the Debian archive keyring not found, skipping Debian")
    return()
  endif()
  set(apt "${D_ROOT}/apt")
  file(MAKE_DIRECTORY "${apt}/state/lists/partial" "${apt}/cache/archives/partial" "${apt}/etc")
  file(WRITE "${apt}/state/status" "")
  set(pkgs "")
  foreach(i IN LISTS missing)
    list(GET D_PACKAGES ${i} p)
    list(APPEND pkgs "${p}")
  endforeach()
  if(D_KIND STREQUAL "source")
    set(line "deb-src [signed-by=${S5_DEB_KEYRING}] ${S5_DEB_MIRROR} ${D_SUITE} main")
    set(cmd source --download-only ${pkgs})
  elseif(D_KIND STREQUAL "binary")
    set(line "deb [arch=${D_ARCH} signed-by=${S5_DEB_KEYRING}] ${S5_DEB_MIRROR} ${D_SUITE} main")
    set(cmd download ${pkgs})
  else()
    message(FATAL_ERROR "s5_deb_fetch: KIND is source or binary, not '${D_KIND}'")
  endif()
  file(WRITE "${apt}/etc/sources.list" "${line}\n")
  # Private everything: no lock on, and no change to, the system's apt state.
  # The sandbox user (_apt) could not write into the build tree.
  set(opts
      -o "Dir::Etc::SourceList=${apt}/etc/sources.list"
      -o "Dir::Etc::SourceParts=/nonexistent"
      -o "Dir::State=${apt}/state"
      -o "Dir::State::status=${apt}/state/status"
      -o "Dir::Cache=${apt}/cache"
      -o "APT::Architecture=${D_ARCH}"
      -o "APT::Architectures=${D_ARCH}"
      -o "Debug::NoLocking=1"
      -o "APT::Sandbox::User=root")
  string(JOIN ", " shown ${pkgs})
  message(STATUS "${D_NAME}: fetching Debian's ${shown} (${D_KIND}, ${D_SUITE})")
  execute_process(COMMAND "${S5_APT_GET}" ${opts} -q update
                  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  if(rc EQUAL 0)
    file(REMOVE_RECURSE "${apt}/dl")
    file(MAKE_DIRECTORY "${apt}/dl")
    execute_process(COMMAND "${S5_APT_GET}" ${opts} -q ${cmd}
                    WORKING_DIRECTORY "${apt}/dl"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE log2 ERROR_VARIABLE log2)
    string(APPEND log "${log2}")
  endif()
  foreach(i IN LISTS missing)
    list(GET D_FILES ${i} f)
    list(GET D_SHA256S ${i} h)
    if(NOT rc EQUAL 0 OR NOT EXISTS "${apt}/dl/${f}")
      message(STATUS "${D_NAME}: Debian's ${f} not available (apt-get: ${rc}):\n${log}")
      return()
    endif()
    s5_sha256_ok("${apt}/dl/${f}" "${h}" ok)
    if(NOT ok)
      message(FATAL_ERROR "${D_NAME}: ${apt}/dl/${f} does not have the expected SHA-256 ${h}")
    endif()
    file(MAKE_DIRECTORY "${dl}")
    file(RENAME "${apt}/dl/${f}" "${dl}/${f}")
  endforeach()
  file(REMOVE_RECURSE "${apt}")
  set(${D_OUT} "${paths}" PARENT_SCOPE)
endfunction()
