# The Python module's toolchain: Python 3 (below) and pybind11 (Debian's pybind11-dev, else the pip package's
# CMake files). Sets NBKIT_HAVE_PYTHON; without either, the module is left out with a note.
set(NBKIT_HAVE_PYTHON OFF)
if(NOT NBKIT_PYTHON)
  return()
endif()
# The first interpreter that has numpy, its own C headers and a pybind11: Debian's /usr/bin/python3 (the one
# with the Debian Python packages), else the python3 on PATH (the GPU machine's virtual
# environment with numpy, CuPy and PyTorch).
if(NOT Python3_EXECUTABLE)
  find_program(_nbkit_path_python python3)
  foreach(candidate /usr/bin/python3 ${_nbkit_path_python})
    if(EXISTS ${candidate})
      execute_process(COMMAND ${candidate} -c
                      "import numpy, os, sysconfig, importlib.util as u; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')); assert u.find_spec('pybind11') or any(os.path.exists(d + '/pybind11/pybind11Config.cmake') for d in ('/usr/lib/cmake', '/usr/share/cmake', '/usr/local/lib/cmake'))"
                      RESULT_VARIABLE _nbkit_python_ok OUTPUT_QUIET ERROR_QUIET)
      if(_nbkit_python_ok EQUAL 0)
        set(Python3_EXECUTABLE ${candidate})
        break()
      endif()
    endif()
  endforeach()
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
if(NOT Python3_FOUND)
  message(STATUS "nbkit: Python module OFF (no Python 3 with its headers: apt-get install python3-dev)")
  return()
endif()
find_package(pybind11 2.10 CONFIG QUIET)
if(NOT pybind11_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -m pybind11 --cmakedir OUTPUT_VARIABLE _nbkit_pybind11_dir
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _nbkit_pybind11_result)
  if(_nbkit_pybind11_result EQUAL 0)
    find_package(pybind11 2.10 CONFIG QUIET PATHS ${_nbkit_pybind11_dir} NO_DEFAULT_PATH)
  endif()
endif()
if(NOT pybind11_FOUND)
  message(STATUS "nbkit: Python module OFF (no pybind11: apt-get install pybind11-dev)")
  return()
endif()
set(NBKIT_HAVE_PYTHON ON)
# The static library goes into a shared extension module.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
message(STATUS "nbkit: Python module ON (${Python3_EXECUTABLE}, Python ${Python3_VERSION}, pybind11 ${pybind11_VERSION})")
