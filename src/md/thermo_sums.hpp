#pragma once
// LAMMPS's thermodynamic definitions from the sums a backend has made (sum of m v^2, the
// potential energy and the pair virial), shared by the CPU and GPU paths. Internal.
#include <cstddef>
#include <cstdint>

#include "nbkit/md.hpp"

namespace nbkit::md {

Thermo thermo_from_sums(Units units, std::size_t atoms, double volume, double mass_velocity2, double potential,
                        double virial, std::int64_t step, std::int64_t constraints = 0);

}  // namespace nbkit::md
