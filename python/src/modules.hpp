#pragma once
// The parts of nbkit._nbkit, one file each.
#include <pybind11/pybind11.h>

namespace nbkit::python {
void add_maps(pybind11::module_& m);   // maps_module.cpp: map, trajectory maps, ionize, structures
void add_nbody(pybind11::module_& m);  // nbody_module.cpp
void add_md(pybind11::module_& m);     // md_module.cpp
void add_analysis(pybind11::module_& m);  // analysis_module.cpp: g(r)
}  // namespace nbkit::python
