# The install_consumer test: installs this build into a scratch prefix, then configures, builds and
# runs tests/install_consumer against it, as a project outside the tree would. Any failing step
# fails the test.
#
# This file has two modes: included from tests/CMakeLists.txt it adds the test; run by ctest as
# `cmake -P install_test.cmake` it performs the steps.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  add_test(NAME install_consumer
           COMMAND ${CMAKE_COMMAND}
                   -DTESSERA_BUILD_DIR=${PROJECT_BINARY_DIR}
                   -DCONSUMER_SOURCE_DIR=${CMAKE_CURRENT_LIST_DIR}/install_consumer
                   -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install_consumer
                   -DCONFIG=$<CONFIG>
                   "-DGENERATOR=${CMAKE_GENERATOR}"
                   -DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}
                   -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
                   -DSANITIZE=${TESSERA_SANITIZE}
                   -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(install_consumer PROPERTIES TIMEOUT 900)
  return()
endif()

# ---- script mode ----
foreach(var TESSERA_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT CONFIG)
  set(CONFIG Release)
endif()

function(run_step name)
  message(STATUS "install_consumer: ${name}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc COMMAND_ECHO STDOUT)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "install_consumer: ${name} failed (${rc})")
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")

run_step(install ${CMAKE_COMMAND} --install "${TESSERA_BUILD_DIR}" --prefix "${prefix}" --config ${CONFIG})

set(configure_args
    -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=${CONFIG}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(SANITIZE)
  # The installed libraries carry sanitizer instrumentation: the program must link the runtimes.
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}"
                             "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
run_step(configure ${CMAKE_COMMAND} ${configure_args})

# The package must come from the scratch prefix, not from the build tree or the system.
file(STRINGS "${build}/CMakeCache.txt" tessera_dir REGEX "^Tessera_DIR:")
string(FIND "${tessera_dir}" "${prefix}/" at)
if(NOT at GREATER -1)
  message(FATAL_ERROR "install_consumer: Tessera was found outside the prefix: ${tessera_dir}")
endif()

run_step(build ${CMAKE_COMMAND} --build "${build}" --config ${CONFIG})

set(program "${build}/consumer")
if(NOT EXISTS "${program}")
  set(program "${build}/${CONFIG}/consumer")   # multi-config generators
endif()
run_step(run "${program}")

# A scheduler-only consumer needs no CUDA: it configures with CUDA hidden (CUDAToolkit cannot be
# found), builds and runs.
set(sched_only "${WORK_DIR}/build-sched-only")
set(sched_only_args ${configure_args})
list(TRANSFORM sched_only_args REPLACE "^${build}$" "${sched_only}")
run_step(configure-sched-only ${CMAKE_COMMAND} ${sched_only_args}
         -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCONSUMER_ALL_HEADERS=OFF)
run_step(build-sched-only ${CMAKE_COMMAND} --build "${sched_only}" --config ${CONFIG})
set(program "${sched_only}/consumer")
if(NOT EXISTS "${program}")
  set(program "${sched_only}/${CONFIG}/consumer")
endif()
run_step(run-sched-only "${program}")
