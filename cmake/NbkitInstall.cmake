# What `cmake --install` puts under the prefix: the `nbkit` command, libnbkit (static, or shared
# with NBKIT_SHARED), the public headers (include/nbkit: plain C++, no CUDA or third-party
# headers), the CMake package (find_package(nbkit 0.2) -> nbkit::nbkit, with the dependencies a
# consumer links), a pkg-config file, the README and the changelog. The Python module installs
# itself (python/CMakeLists.txt).
include(CMakePackageConfigHelpers)
set(NBKIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/nbkit)

install(TARGETS nbkit EXPORT nbkitTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS nbkit_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The installed binaries find the shared libraries they were linked with outside the system's
# directories (a vendored Highway or FFTW, the CUDA toolkit, Debian's hdf5/serial) where the build
# found them, as the build tree's binaries do.
# CMake adds only directories outside the project that way; a vendored copy inside the checkout
# (the GPU machine's .deps/lib) is named explicitly.
set(_nbkit_vendored_dirs)
foreach(_nbkit_lib IN ITEMS "${HWY_LIBRARY}" "${FFTW_LIBRARY}" "${FFTW_OMP_LIBRARY}")
  if(_nbkit_lib)
    get_filename_component(_nbkit_dir ${_nbkit_lib} DIRECTORY)
    if(NOT _nbkit_dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
      list(APPEND _nbkit_vendored_dirs ${_nbkit_dir})
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES _nbkit_vendored_dirs)
foreach(_nbkit_target nbkit_cli nbkit _nbkit)
  if(TARGET ${_nbkit_target})
    set_target_properties(${_nbkit_target} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
    if(_nbkit_vendored_dirs)
      set_property(TARGET ${_nbkit_target} APPEND PROPERTY INSTALL_RPATH ${_nbkit_vendored_dirs})
    endif()
  endif()
endforeach()
if(NBKIT_SHARED)  # the installed command finds libnbkit.so beside it, wherever the prefix is
  set_property(TARGET nbkit_cli APPEND PROPERTY INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()
install(DIRECTORY include/nbkit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES README.md CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The licence, once the project has chosen one (none yet: note that the binaries link FFTW, GPL-2+).
foreach(licence LICENSE COPYING)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${licence})
    install(FILES ${licence} DESTINATION ${CMAKE_INSTALL_DOCDIR})
  endif()
endforeach()
install(EXPORT nbkitTargets NAMESPACE nbkit:: DESTINATION ${NBKIT_CMAKE_DIR})

# Where the build found Highway, as hints for the package config (a vendored Highway is off the
# default search paths).
set(NBKIT_HWY_CONFIG_HINT "${hwy_DIR}")
set(NBKIT_HWY_INCLUDE_HINT "${HWY_INCLUDE_DIR}")
set(NBKIT_HWY_LIBRARY_HINT "")
if(HWY_LIBRARY)
  get_filename_component(NBKIT_HWY_LIBRARY_HINT ${HWY_LIBRARY} DIRECTORY)
endif()
configure_package_config_file(cmake/nbkitConfig.cmake.in ${PROJECT_BINARY_DIR}/nbkitConfig.cmake
                              INSTALL_DESTINATION ${NBKIT_CMAKE_DIR})
# 0.x: a minor version may change the API, so 0.2 accepts 0.2.y only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nbkitConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nbkitConfig.cmake ${PROJECT_BINARY_DIR}/nbkitConfigVersion.cmake
        DESTINATION ${NBKIT_CMAKE_DIR})

# pkg-config: the static library's dependencies in Libs.private (pkg-config --static).
set(NBKIT_PC_PRIVATE "-lhwy -lpng16 -lz -lfftw3_omp -lfftw3 -fopenmp -lpthread")
if(NBKIT_HAVE_HDF5)  # Debian keeps libhdf5.so in hdf5/serial/, off the linker's path
  if(HDF5_C_LIBRARY_hdf5)
    get_filename_component(_nbkit_hdf5_dir ${HDF5_C_LIBRARY_hdf5} DIRECTORY)
    string(APPEND NBKIT_PC_PRIVATE " -L${_nbkit_hdf5_dir}")
  endif()
  string(APPEND NBKIT_PC_PRIVATE " -lhdf5")
endif()
if(NBKIT_HAVE_GROMACS)
  string(APPEND NBKIT_PC_PRIVATE " -lgromacs")
endif()
if(NBKIT_HAVE_MPI)  # the MPI C library's link line, as FindMPI found it (libmpi for Open MPI)
  foreach(_nbkit_mpi_lib IN LISTS MPI_CXX_LIBRARIES)
    get_filename_component(_nbkit_mpi_dir ${_nbkit_mpi_lib} DIRECTORY)
    get_filename_component(_nbkit_mpi_name ${_nbkit_mpi_lib} NAME_WE)
    string(REGEX REPLACE "^lib" "" _nbkit_mpi_name ${_nbkit_mpi_name})
    string(APPEND NBKIT_PC_PRIVATE " -L${_nbkit_mpi_dir} -l${_nbkit_mpi_name}")
  endforeach()
endif()
if(NBKIT_HAVE_CUDA)
  string(APPEND NBKIT_PC_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcufft -lcudart")
endif()
# Highway and FFTW from outside the linker's default directories (vendored copies): their -L.
foreach(_nbkit_lib IN ITEMS "${HWY_LIBRARY}" "${FFTW_LIBRARY}")
  if(_nbkit_lib)
    get_filename_component(_nbkit_dir ${_nbkit_lib} DIRECTORY)
    if(NOT _nbkit_dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES AND NOT NBKIT_PC_PRIVATE MATCHES "-L${_nbkit_dir} ")
      string(PREPEND NBKIT_PC_PRIVATE "-L${_nbkit_dir} -Wl,-rpath,${_nbkit_dir} ")
    endif()
  endif()
endforeach()
# The prefix relative to the .pc file, so that the tree works wherever --prefix puts it.
file(RELATIVE_PATH NBKIT_PC_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(cmake/nbkit.pc.in ${PROJECT_BINARY_DIR}/nbkit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/nbkit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
