# Every third-party library nbkit uses, found once, as imported targets.
# Debian packages are listed in scripts/setup. Machines without Highway or gemmi
# (the GPU machine) use a prefix made by scripts/vendor-deps in .deps/.
list(APPEND CMAKE_PREFIX_PATH ${PROJECT_SOURCE_DIR}/.deps)

find_package(fmt REQUIRED)
find_package(CLI11 QUIET CONFIG)
if(NOT TARGET CLI11::CLI11)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
find_package(nlohmann_json REQUIRED)
find_package(PNG REQUIRED)
# N-body snapshots (GADGET/SWIFT HDF5 layout): the HDF5 C library (scripts/setup installs
# libhdf5-dev). Optional so that a machine without it still builds everything else; there
# snapshot reads and writes fail with a message saying so.
enable_language(C)  # FindHDF5 test-compiles a C program
find_package(HDF5 COMPONENTS C)
set(NBKIT_HAVE_HDF5 ${HDF5_FOUND})
if(HDF5_FOUND AND NOT TARGET HDF5::HDF5)
  add_library(HDF5::HDF5 INTERFACE IMPORTED)
  target_include_directories(HDF5::HDF5 INTERFACE ${HDF5_INCLUDE_DIRS})
  target_link_libraries(HDF5::HDF5 INTERFACE ${HDF5_LIBRARIES})
endif()
if(NOT HDF5_FOUND)
  message(WARNING "nbkit: HDF5 not found (apt-get install libhdf5-dev): N-body snapshots are disabled in this build")
endif()
# MPI (Debian's libopenmpi-dev): `mpirun -np R nbkit ...` splits the work among processes and
# machines (issue 22). Optional: without it every command still builds and runs in one process.
set(NBKIT_HAVE_MPI OFF)
if(NBKIT_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(NBKIT_HAVE_MPI ON)
  else()
    message(STATUS "nbkit: no MPI library found (apt-get install libopenmpi-dev openmpi-bin): one process per run")
  endif()
endif()
find_package(ZLIB REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)

# Google Highway: SIMD through one template over the vector type, dispatched at run time.
find_package(hwy CONFIG QUIET)
if(NOT TARGET hwy::hwy)
  find_path(HWY_INCLUDE_DIR hwy/highway.h REQUIRED)
  find_library(HWY_LIBRARY hwy REQUIRED)
  add_library(hwy::hwy UNKNOWN IMPORTED)
  set_target_properties(hwy::hwy PROPERTIES IMPORTED_LOCATION ${HWY_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${HWY_INCLUDE_DIR}
    INTERFACE_COMPILE_DEFINITIONS HWY_SHARED_DEFINE)
endif()

# FFTW (double precision, with its OpenMP threads): particle-mesh Ewald's 3-D FFTs on the CPU
# (Debian's libfftw3-dev; .deps/ on the GPU machine). Debian ships no usable CMake package.
find_path(FFTW_INCLUDE_DIR fftw3.h REQUIRED)
find_library(FFTW_LIBRARY fftw3 REQUIRED)
find_library(FFTW_OMP_LIBRARY fftw3_omp REQUIRED)
add_library(nbkit_fftw INTERFACE)
target_include_directories(nbkit_fftw SYSTEM INTERFACE ${FFTW_INCLUDE_DIR})
target_link_libraries(nbkit_fftw INTERFACE ${FFTW_OMP_LIBRARY} ${FFTW_LIBRARY})

# GROMACS's library (Debian's libgromacs-dev): XTC and TRR trajectories through its installed
# trajectory API (gromacs/fileio/trxio.h). Optional: without it those files are refused with the
# reason (the GPU machine has none).
option(NBKIT_GROMACS "Read XTC and TRR trajectories through libgromacs where it is found" ON)
set(NBKIT_HAVE_GROMACS OFF)
if(NBKIT_GROMACS)
  find_path(GROMACS_INCLUDE_DIR gromacs/fileio/trxio.h)
  find_library(GROMACS_LIBRARY NAMES gromacs)
  if(GROMACS_INCLUDE_DIR AND GROMACS_LIBRARY)
    set(NBKIT_HAVE_GROMACS ON)
  endif()
endif()
message(STATUS "nbkit: XTC/TRR through libgromacs ${NBKIT_HAVE_GROMACS}")

# gemmi: PDB/mmCIF reading and CCP4/MRC writing; the parts used are header-only.
find_path(GEMMI_INCLUDE_DIR gemmi/mmread.hpp REQUIRED)
add_library(nbkit_gemmi INTERFACE)
target_include_directories(nbkit_gemmi SYSTEM INTERFACE ${GEMMI_INCLUDE_DIR})
target_link_libraries(nbkit_gemmi INTERFACE ZLIB::ZLIB)

# toml++: the MD command's input files; used header-only (the default of toml++ 3), so
# only its headers are needed (Debian's libtomlplusplus-dev; .deps/ on the GPU machine).
find_path(TOMLPP_INCLUDE_DIR toml++/toml.h REQUIRED)
add_library(nbkit_tomlpp INTERFACE)
target_include_directories(nbkit_tomlpp SYSTEM INTERFACE ${TOMLPP_INCLUDE_DIR})
target_compile_definitions(nbkit_tomlpp INTERFACE TOML_HEADER_ONLY=1 TOML_EXCEPTIONS=1)

if(NBKIT_TESTS)
  find_package(GTest REQUIRED)
endif()
