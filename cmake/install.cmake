# Installation and the exported package: after `cmake --install`, find_package(Tessera) gives
# Tessera::sched, Tessera::kernels_cpu, Tessera::qr, Tessera::batched, and in CUDA builds Tessera::sched_cuda (the
# scheduler's GPU backend) and Tessera::kernels_gpu.
# Included at the end of the top-level CMakeLists.txt, so it sees every target already defined and
# installs only those that exist.
#
# The libraries stay static (the default): nothing to carry or RPATH-patch for the programs, and
# their private dependencies (oneTBB, spdlog, BLAS/LAPACK/LAPACKE, CUDA) appear in the export as
# $<LINK_ONLY:...>, which TesseraConfig.cmake finds again with find_dependency.
include(CMakePackageConfigHelpers)

set(TESSERA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Tessera"
    CACHE STRING "Where the Tessera CMake package files are installed, relative to the prefix")

# Libraries: tessera_<name> with EXPORT_NAME <name>. A target is classified by its type, not its
# name, so a tool target that happens to be called tessera_qr is installed as a program.
set(_tessera_libraries)
set(_tessera_cuda_libraries)
set(_tessera_components)
foreach(_name sched sched_cuda kernels_cpu kernels_gpu qr batched)
  if(NOT TARGET tessera_${_name})
    continue()
  endif()
  get_target_property(_type tessera_${_name} TYPE)
  if(NOT _type MATCHES "^(STATIC|SHARED|INTERFACE)_LIBRARY$")
    continue()
  endif()
  get_target_property(_export_name tessera_${_name} EXPORT_NAME)
  if(NOT _export_name)
    set_target_properties(tessera_${_name} PROPERTIES EXPORT_NAME ${_name})
  endif()
  # Libraries that link CUDA (in a CUDA build, qr links the GPU backend) go to an export file of
  # their own, which TesseraConfig.cmake loads only where CUDA is wanted and found.
  if(TESSERA_CUDA AND _name MATCHES "^(sched_cuda|kernels_gpu|qr|batched)$")
    list(APPEND _tessera_cuda_libraries tessera_${_name})
  else()
    list(APPEND _tessera_libraries tessera_${_name})
  endif()
  list(APPEND _tessera_components ${_name})
  # The public headers: each library's include/ tree (and a generated one, if a library has it).
  get_target_property(_src tessera_${_name} SOURCE_DIR)
  get_target_property(_bin tessera_${_name} BINARY_DIR)
  foreach(_dir "${_src}/include" "${_bin}/include")
    if(IS_DIRECTORY "${_dir}")
      install(DIRECTORY "${_dir}/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
              FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.cuh" PATTERN "*.inl")
    endif()
  endforeach()
endforeach()

# Programs: whichever of these exist, found by output name among all targets of the project.
function(_tessera_collect_targets dir out)
  get_property(_targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _tessera_collect_targets("${_sub}" _more)
    list(APPEND _targets ${_more})
  endforeach()
  set(${out} ${_targets} PARENT_SCOPE)
endfunction()
_tessera_collect_targets("${PROJECT_SOURCE_DIR}" _tessera_all_targets)

set(_tessera_programs)
foreach(_target IN LISTS _tessera_all_targets)
  get_target_property(_type ${_target} TYPE)
  if(NOT _type STREQUAL "EXECUTABLE")
    continue()
  endif()
  get_target_property(_output ${_target} OUTPUT_NAME)
  if(NOT _output)
    set(_output ${_target})
  endif()
  if(_output MATCHES "^(tessera_qr|tessera_qr_bench|tessera_sched_bench|tessera_batched|tessera_batched_bench)$")
    list(APPEND _tessera_programs ${_target})
  endif()
endforeach()

foreach(_export IN ITEMS TesseraTargets TesseraCudaTargets)
  if(_export STREQUAL "TesseraTargets")
    set(_libraries ${_tessera_libraries})
  else()
    set(_libraries ${_tessera_cuda_libraries})
  endif()
  if(_libraries)
    install(TARGETS ${_libraries} EXPORT ${_export}
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
            RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
            INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()
if(_tessera_programs)
  # Installed programs keep finding libraries outside the system paths (CUDA's lib64, and the
  # project's own lib/ should a library ever become shared).
  set_target_properties(${_tessera_programs} PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
    INSTALL_RPATH_USE_LINK_PATH ON)
  # OPTIONAL: a build of the tool alone (scripts/run_main.sh) installs without the benchmarks.
  install(TARGETS ${_tessera_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
endif()

if(_tessera_libraries)
  install(EXPORT TesseraTargets
          NAMESPACE Tessera::
          FILE TesseraTargets.cmake
          DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
  if(_tessera_cuda_libraries)
    install(EXPORT TesseraCudaTargets
            NAMESPACE Tessera::
            FILE TesseraCudaTargets.cmake
            DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
  endif()

  # What the config needs to find the dependencies again as this build found them.
  set(TESSERA_CONFIG_COMPONENTS ${_tessera_components})
  set(TESSERA_CONFIG_CUDA ${TESSERA_CUDA})
  set(TESSERA_CONFIG_BLA_VENDOR "${BLA_VENDOR}")
  if(LAPACKE_LIBRARY)
    get_filename_component(TESSERA_CONFIG_LAPACKE_DIR "${LAPACKE_LIBRARY}" DIRECTORY)
  endif()
  if(TESSERA_CUDA AND CUDAToolkit_BIN_DIR)
    get_filename_component(TESSERA_CONFIG_CUDA_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  endif()
  configure_package_config_file(
    "${CMAKE_CURRENT_LIST_DIR}/TesseraConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/TesseraConfig.cmake"
    INSTALL_DESTINATION ${TESSERA_INSTALL_CMAKEDIR}
    NO_SET_AND_CHECK_MACRO)
  # 0.x: a minor version may break the API, so only the same minor version is compatible.
  write_basic_package_version_file(
    "${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake"
    VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMinorVersion)
  install(FILES "${PROJECT_BINARY_DIR}/TesseraConfig.cmake"
                "${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake"
          DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
endif()
