# SPDX-License-Identifier: MIT
# Sanitizer and fuzzing builds. Included from the top CMakeLists.txt before
# any target exists, so the flags reach every target: our code, lwIP, the
# tests and the fuzz targets alike (a sanitizer that sees only half of the
# code misses the bugs at the boundary, and ASan needs the allocations of
# both halves).
#
#   -DS5_SANITIZE=address,undefined   ASan + LeakSanitizer + UBSan (make test-asan)
#   -DS5_SANITIZE=thread              ThreadSanitizer                (make test-tsan)
#   -DS5_FUZZ=ON                      clang only: libFuzzer coverage instrumentation
#                                     everywhere, the targets in test/fuzz linked with
#                                     libFuzzer's main (make fuzz); implies
#                                     S5_SANITIZE=address,undefined unless set otherwise
#
# UBSan is built without recovery: its first report ends the program (with
# UBSAN_OPTIONS=halt_on_error=1 that is what the options ask for anyway, and
# this way it holds without them, e.g. under libFuzzer). Reports go where
# the *SAN_OPTIONS say (log_path); the end-to-end harness collects them
# (test/e2e/lib.sh, S5_SANITIZER_LOG).

set(S5_SANITIZE "" CACHE STRING
    "Sanitizers for every target: address,undefined | thread | empty (none)")
option(S5_FUZZ "Build test/fuzz with libFuzzer (clang); instruments everything for coverage" OFF)

if(S5_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "S5_FUZZ needs clang (libFuzzer): configure with -DCMAKE_C_COMPILER=clang "
                        "(Debian: apt-get install clang libclang-rt-14-dev)")
  endif()
  if(NOT S5_SANITIZE)
    set(S5_SANITIZE "address,undefined" CACHE STRING
        "Sanitizers for every target: address,undefined | thread | empty (none)" FORCE)
  endif()
endif()

if(S5_SANITIZE)
  string(REPLACE "," ";" _s5_san_list "${S5_SANITIZE}")
  foreach(_s IN LISTS _s5_san_list)
    if(NOT _s MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "S5_SANITIZE: unknown sanitizer '${_s}' (address, undefined, leak, thread)")
    endif()
  endforeach()
  if("thread" IN_LIST _s5_san_list AND ("address" IN_LIST _s5_san_list OR "leak" IN_LIST _s5_san_list))
    message(FATAL_ERROR "S5_SANITIZE: thread cannot be combined with address or leak")
  endif()

  # Does the compiler have the runtime? Fail at configure time, naming the
  # package, rather than at the first link.
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=${S5_SANITIZE}")
  set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=${S5_SANITIZE}")
  check_c_source_compiles("int main(void) { return 0; }" S5_SANITIZE_WORKS_${CMAKE_C_COMPILER_ID})
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT S5_SANITIZE_WORKS_${CMAKE_C_COMPILER_ID})
    message(FATAL_ERROR "S5_SANITIZE=${S5_SANITIZE}: ${CMAKE_C_COMPILER} cannot build with it "
                        "(Debian: clang needs libclang-rt-14-dev; gcc needs libasan8, libubsan1, libtsan2)")
  endif()

  set(_s5_san_flags -fsanitize=${S5_SANITIZE} -fno-omit-frame-pointer -g)
  if("undefined" IN_LIST _s5_san_list)
    list(APPEND _s5_san_flags -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${_s5_san_flags})
  add_link_options(-fsanitize=${S5_SANITIZE})
  message(STATUS "s5tund: sanitizers ${S5_SANITIZE} on every target")
endif()

if(S5_FUZZ)
  # Coverage feedback from everything a fuzz input reaches (lwIP included);
  # only the fuzz targets link libFuzzer itself (test/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
  add_link_options(-fsanitize=fuzzer-no-link)
  message(STATUS "s5tund: libFuzzer instrumentation on every target")
endif()
