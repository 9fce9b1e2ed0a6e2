// The float64 reference of direct summation: the formula as written, plain loops, one
// thread. Slow on purpose; every fast path is tested against it (OpenMM's Reference
// platform habit).
#include <cmath>

#include "maps/kernels.hpp"
#include "nbkit/maps.hpp"

namespace nbkit::maps {

namespace {
template <class LawVariant>
void reference_sum(const Atoms& atoms, const LawVariant& law, const RowRange& rows) {
  const Lattice& lattice = *rows.lattice;
  const std::int64_t nz = lattice.dims[2];
  const std::int64_t total = rows.row_end - rows.row_begin;
  std::visit(
      [&](const auto& the_law) {
        for (std::int64_t row = rows.row_begin; row < rows.row_end; ++row) {
          const std::int64_t i = row / lattice.dims[1], j = row % lattice.dims[1];
          for (std::int64_t k = 0; k < nz; ++k) {
            const Vec3 point = lattice.point(i, j, k);
            double sum = 0;
            for (std::size_t n = 0; n < atoms.size(); ++n) {
              const double distance = norm(point - atoms.position(n));
              if (distance <= singular_distance) continue;  // see singular_distance
              sum += the_law.potential(atoms.charge[n], atoms.radius[n], distance);
            }
            rows.out[(row - rows.row_begin) * nz + k] = rows.prefactor * sum;
          }
          if (rows.progress && *rows.progress && (row % 64 == 0))
            (*rows.progress)(static_cast<double>(row - rows.row_begin + 1) / total);
        }
      },
      law);
}

}  // namespace

void direct_reference(const Atoms& atoms, const MapLaw& law, const RowRange& rows) { reference_sum(atoms, law, rows); }
void direct_reference(const Atoms& atoms, const CutoffMapLaw& law, const RowRange& rows) {
  reference_sum(atoms, law, rows);
}

template <class LawVariant>
PreparedAtoms prepare_atoms(const Atoms& atoms, const Lattice& lattice, const LawVariant& law) {
  PreparedAtoms prepared;
  const std::size_t n = atoms.size();
  prepared.x.resize(n);
  prepared.y.resize(n);
  prepared.z.resize(n);
  prepared.coefficient.resize(n);
  std::visit(
      [&](const auto& the_law) {
        for (std::size_t a = 0; a < n; ++a) {
          prepared.x[a] = atoms.x[a] - lattice.origin.x;
          prepared.y[a] = atoms.y[a] - lattice.origin.y;
          prepared.z[a] = atoms.z[a] - lattice.origin.z;
          prepared.coefficient[a] = the_law.coefficient(atoms.charge[a], atoms.radius[a]);
        }
      },
      law);
  return prepared;
}
template PreparedAtoms prepare_atoms(const Atoms&, const Lattice&, const MapLaw&);
template PreparedAtoms prepare_atoms(const Atoms&, const Lattice&, const CutoffMapLaw&);

}  // namespace nbkit::maps
