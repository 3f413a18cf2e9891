# SPDX-License-Identifier: MIT
# lwIP per-thread instances (patch 0001) and any-destination listener with
# deferred SYN-ACK (patch 0002). Included from test/unit/CMakeLists.txt.
#
#   unit.lwip_tls               test_lwip_tls.c against lwip: must pass
#   unit.lwip_tls_without_tls   the same test against lwip_notls (one shared
#                               stack): must fail, proving the test detects it
#   unit.lwip_no_globals        no mutable object of the lwip library lives in
#                               .data/.bss: everything is thread-local
#
# This file doubles as the script of unit.lwip_no_globals (cmake -P mode,
# with S5_LWIP_LIB and S5_OBJDUMP set).

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED S5_LWIP_LIB)
  # `nm` cannot tell thread-local objects from ordinary ones (both show as
  # b/B/d/D); objdump -t names the section. Mutable shared state would be in
  # .data, .bss or a common block; .tdata/.tbss are per thread, and
  # .data.rel.ro is read-only after relocation.
  execute_process(COMMAND "${S5_OBJDUMP}" -t "${S5_LWIP_LIB}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "objdump -t ${S5_LWIP_LIB} failed: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${table}")
  set(bad "")
  set(tls 0)
  foreach(line IN LISTS lines)
    if(line MATCHES "[ \t]O[ \t]+(\\.data|\\.bss|\\*COM\\*)([ \t]|\\.[a-z0-9_]+[ \t])"
       AND NOT line MATCHES "\\.data\\.rel\\.ro")
      string(APPEND bad "  ${line}\n")
    elseif(line MATCHES "[ \t]\\.(tbss|tdata)[ \t]")
      math(EXPR tls "${tls} + 1")
    endif()
  endforeach()
  if(bad)
    message(FATAL_ERROR "mutable objects shared between threads in ${S5_LWIP_LIB}:\n${bad}")
  endif()
  if(tls LESS 40)
    message(FATAL_ERROR "only ${tls} thread-local objects in ${S5_LWIP_LIB}: patch 0001 missing?")
  endif()
  message("ok: no .data/.bss objects, ${tls} thread-local ones")
  return()
endif()

find_package(Threads REQUIRED)

s5_unit_test(lwip_tls SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lwip_tls.c LINKS lwip Threads::Threads)
# A shared stack must make the checks fail (exit 1), not crash: WILL_FAIL
# only turns a non-zero exit into a pass.
s5_unit_test(lwip_tls_without_tls SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lwip_tls.c
             LINKS lwip_notls Threads::Threads WILL_FAIL)

# Not in sanitizer or fuzzing builds (cmake/sanitize.cmake): their
# instrumentation adds writable metadata of its own (__unnamed_*, __asan_*)
# to every object; the plain build checks the same sources.
if(CMAKE_OBJDUMP AND NOT S5_SANITIZE AND NOT S5_FUZZ)
  add_test(NAME unit.lwip_no_globals
           COMMAND "${CMAKE_COMMAND}" "-DS5_LWIP_LIB=$<TARGET_FILE:lwip>"
                   "-DS5_OBJDUMP=${CMAKE_OBJDUMP}" -P "${CMAKE_CURRENT_LIST_FILE}")
endif()
