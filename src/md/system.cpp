// MD systems: units, an fcc lattice, Maxwell-Boltzmann velocities, thermodynamic output.
#include <fmt/format.h>

#include <cmath>
#include <random>

#include "md/periodic.hpp"
#include "md/thermo_sums.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/md.hpp"

namespace nbkit::md {

Units parse_units(const std::string& name) {
  if (name == "lj") return Units::lj;
  if (name == "real") return Units::real;
  throw Error("units must be lj or real (as LAMMPS names them), got '" + name + "'");
}

std::string to_string(Units units) { return units == Units::lj ? "lj" : "real"; }

UnitConstants unit_constants(Units units) {
  if (units == Units::lj) return {1.0, 1.0, 1.0, 1.0, 1.0};
  // LAMMPS's `real`: kcal/mol, Angstrom, fs, g/mol, K, atm, with LAMMPS's own constants (the
  // tests compare with LAMMPS to 12 digits; units.hpp says why they are not CODATA's).
  namespace real = units::lammps_real;
  return {real::boltzmann, real::ftm2v, real::mvv2e, real::nktv2p, real::qqr2e};
}

void System::resize(std::size_t n) {
  for (auto* v : {&x, &y, &z, &vx, &vy, &vz, &charge}) v->resize(n);
  type.resize(n);
  id.resize(n);
}

namespace {
constexpr std::uint64_t kBytesPerAtom = 10 * sizeof(double) + sizeof(int) + sizeof(std::int64_t);  // System
}

std::uint64_t run_memory_bytes(const System& s, const ForceField& f, double skin, int threads) {
  const double n = static_cast<double>(s.size());
  const double density = s.box.volume() > 0 ? n / s.box.volume() : 0;
  const double reach = f.reach() + skin;
  // Half-list neighbours per atom (4 bytes each), twice: the list and the threads' parts.
  const double neighbours = 0.5 * density * 4.0 / 3.0 * M_PI * reach * reach * reach;
  const double per_atom = static_cast<double>(kBytesPerAtom) + 3 * 8 /* forces */ + 2 * 4 * neighbours +
                          5 * 8 /* list bookkeeping */ + 3 * 8.0 * std::max(threads, 1) /* threads' forces */;
  return static_cast<std::uint64_t>(n * per_atom);
}

System fcc_lattice(double density, int cells_x, int cells_y, int cells_z) {
  if (!(density > 0) || !std::isfinite(density)) throw Error("fcc lattice: the density must be positive");
  if (cells_x < 1 || cells_y < 1 || cells_z < 1) throw Error("fcc lattice: at least one unit cell along each axis");
  const double atoms = 4.0 * cells_x * cells_y * cells_z;
  if (atoms > 2e9) throw Error(fmt::format("fcc lattice: {:.3g} atoms, more than the 2e9 a run may hold", atoms));
  check_memory(static_cast<std::uint64_t>(atoms) * kBytesPerAtom,
               fmt::format("an fcc lattice of {}x{}x{} cells ({:.0f} atoms)", cells_x, cells_y, cells_z, atoms));
  const double a = std::cbrt(4.0 / density);  // 4 atoms per cubic cell
  const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  System s;
  s.resize(static_cast<std::size_t>(4) * cells_x * cells_y * cells_z);
  std::size_t n = 0;
  for (int k = 0; k < cells_z; ++k)
    for (int j = 0; j < cells_y; ++j)
      for (int i = 0; i < cells_x; ++i)
        for (const auto& b : basis) {
          s.x[n] = (i + b[0]) * a, s.y[n] = (j + b[1]) * a, s.z[n] = (k + b[2]) * a;
          s.type[n] = 0;
          s.id[n] = static_cast<std::int64_t>(n) + 1;
          ++n;
        }
  s.box.hi = {cells_x * a, cells_y * a, cells_z * a};
  s.type_mass = {1.0};
  return s;
}

void assign_velocities(System& s, double temperature, std::uint64_t seed) {
  if (!(temperature >= 0) || !std::isfinite(temperature)) throw Error("the temperature must not be negative");
  const std::size_t n = s.size();
  if (n < 2) throw Error("velocities at a temperature need at least two atoms");
  const UnitConstants u = unit_constants(s.units);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gaussian(0.0, 1.0);
  double momentum[3] = {0, 0, 0}, mass = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double m = s.mass(i);
    const double scale = std::sqrt(u.boltzmann * temperature / (m * u.mv2_to_energy));
    s.vx[i] = scale * gaussian(rng), s.vy[i] = scale * gaussian(rng), s.vz[i] = scale * gaussian(rng);
    momentum[0] += m * s.vx[i], momentum[1] += m * s.vy[i], momentum[2] += m * s.vz[i];
    mass += m;
  }
  for (std::size_t i = 0; i < n; ++i)
    s.vx[i] -= momentum[0] / mass, s.vy[i] -= momentum[1] / mass, s.vz[i] -= momentum[2] / mass;
  Forces none;
  const double now = thermo(s, none, 0).temperature;
  const double factor = now > 0 ? std::sqrt(temperature / now) : 0.0;
  for (std::size_t i = 0; i < n; ++i) s.vx[i] *= factor, s.vy[i] *= factor, s.vz[i] *= factor;
}

void wrap_into_box(System& s) {
  std::vector<double>* coordinate[3] = {&s.x, &s.y, &s.z};
  for (int a = 0; a < 3; ++a) {
    const double lo = s.box.lo[a], length = s.box.length(a);
    for (double& v : *coordinate[a]) v = wrap_coordinate(v, lo, length);
  }
}

Thermo thermo_from_sums(Units units, std::size_t n, double volume, double mv2, double potential, double virial,
                        std::int64_t step, std::int64_t constraints) {
  const UnitConstants u = unit_constants(units);
  Thermo t;
  t.step = step;
  const double degrees_of_freedom = 3.0 * static_cast<double>(n) - 3.0 - static_cast<double>(constraints);
  t.kinetic = 0.5 * u.mv2_to_energy * mv2;
  t.temperature = degrees_of_freedom > 0 ? u.mv2_to_energy * mv2 / (degrees_of_freedom * u.boltzmann) : 0.0;
  t.potential = potential;
  // LAMMPS's compute pressure: (dof k T + virial) / (3 V), times nktv2p.
  t.pressure = (degrees_of_freedom * u.boltzmann * t.temperature + virial) / (3.0 * volume) * u.pressure;
  if (units == Units::lj && n > 0) t.kinetic /= static_cast<double>(n), t.potential /= static_cast<double>(n);
  t.total = t.kinetic + t.potential;
  return t;
}

Thermo thermo(const System& s, const Forces& forces, std::int64_t step, std::int64_t constraints) {
  double mv2 = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    mv2 += s.mass(i) * (s.vx[i] * s.vx[i] + s.vy[i] * s.vy[i] + s.vz[i] * s.vz[i]);
  return thermo_from_sums(s.units, s.size(), s.box.volume(), mv2, forces.potential, forces.virial, step,
                          constraints);
}

}  // namespace nbkit::md
