# `cmake --install`: the public headers, the runtime for C++ consumers
# (static, MLIR-free), libmlagen.so for C and FFI hosts, the tools, and a
# CMake package:
#
#   find_package(mlagen CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE mlagen::mlagen)   # C API, JIT included
#   target_link_libraries(app PRIVATE mlagen::runtime)  # C++ Runtime, no MLIR
#
# mlagen::bundle writes AOT bundles from a C++ Runtime. The MLIR compiler
# libraries (Pipeline.h) need MLIR 22 at build time and are not exported.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(MLAGENRuntime PROPERTIES EXPORT_NAME runtime)
set_target_properties(MLAGENBundle PROPERTIES EXPORT_NAME bundle)
set_target_properties(mlagen_shared PROPERTIES EXPORT_NAME mlagen)
target_include_directories(mlagen_shared INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

install(TARGETS MLAGENRuntime MLAGENBundle mlagen_shared
  EXPORT mlagenTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS mlagen mlagen-opt mlagen-translate
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/mlagen/Runtime include/mlagen/Bundle
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mlagen)
install(DIRECTORY include/mlagen-c DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(mlagen_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/mlagen)
install(EXPORT mlagenTargets NAMESPACE mlagen::
  DESTINATION ${mlagen_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mlagenConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mlagenConfig.cmake
  INSTALL_DESTINATION ${mlagen_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mlagenConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mlagenConfig.cmake
  ${PROJECT_BINARY_DIR}/mlagenConfigVersion.cmake
  DESTINATION ${mlagen_cmake_dir})
