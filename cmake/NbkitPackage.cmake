# The Debian package: `cpack -G DEB --config BUILD/CPackConfig.cmake` packs what `cmake --install`
# puts under /usr (the command, libnbkit, headers, CMake package, pkg-config file, README,
# changelog, the Python module) into nbkit_<version>_<arch>.deb.
#
# Dependencies: dpkg-shlibdeps names the Debian packages of the shared libraries the command and the
# Python module load (libhwy1, libhdf5-103-1, libpng16-16, libfftw3-*, libfmt9, ...). The CUDA
# runtime and cuFFT are not Debian's (the build links NVIDIA's toolkit from /usr/local/cuda), so
# dpkg-shlibdeps is told they are found, and the package names NVIDIA's repository packages of the
# toolkit it was built with instead (NBKIT_DEB_CUDA_DEPENDS; empty for a CPU-only build, whose .deb
# installs with `apt-get install ./nbkit_*.deb` on a bare Debian).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nbkit)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}: potential maps, N-body and MD on CPUs and GPUs")
set(CPACK_PACKAGE_CONTACT "nbkit developers <nbkit@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # nbkit_0.2.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "${CPACK_PACKAGE_DESCRIPTION_SUMMARY}\n"
  "Electrostatic potential maps (direct, Debye-Hueckel, cutoff, multilevel summation),\n"
  "ion placement and trajectory maps; all-pairs N-body gravity; molecular dynamics\n"
  "(Lennard-Jones, AMBER and CHARMM force fields with PME). The nbkit command, the\n"
  "libnbkit C++ library with its CMake package and pkg-config file, and the Python module.")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)

set(_nbkit_deb_depends "")
if(NBKIT_HAVE_CUDA)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
  set(_nbkit_cuda_suffix "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
  set(NBKIT_DEB_CUDA_DEPENDS "cuda-cudart-${_nbkit_cuda_suffix}, libcufft-${_nbkit_cuda_suffix}" CACHE STRING
      "The .deb's dependencies for the CUDA runtime and cuFFT (NVIDIA's repository names by default)")
  if(NBKIT_DEB_CUDA_DEPENDS)
    list(APPEND _nbkit_deb_depends ${NBKIT_DEB_CUDA_DEPENDS})
  endif()
endif()
if(NBKIT_HAVE_PYTHON AND Python3_EXECUTABLE STREQUAL "/usr/bin/python3")
  # The module is built for one Python ABI (cpython-3XY) and imports numpy.
  math(EXPR _nbkit_python_next "${Python3_VERSION_MINOR} + 1")
  list(APPEND _nbkit_deb_depends
       "python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR})"
       "python3 (<< ${Python3_VERSION_MAJOR}.${_nbkit_python_next})" python3-numpy)
endif()
list(JOIN _nbkit_deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-mdanalysis, python3-matplotlib")
include(CPack)
