#pragma once
// The TOML file that describes an `nbkit md` run (README.md, "Molecular dynamics";
// examples/in.lj.toml, examples/peptide.toml): units, the system (a LAMMPS data file, an fcc
// lattice, or an AMBER prmtop with its coordinates), the pair style and its coefficients (or
// the biomolecular [nonbonded] settings), the neighbour skin, the run and the outputs. Every key is read
// or refused: an unknown key is an error naming its line, as is a value of the wrong kind.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nbkit/io/lammps_data.hpp"
#include "nbkit/md.hpp"
#include "nbkit/md/constraints.hpp"
#include "nbkit/md/molecular_forces.hpp"
#include "nbkit/md/simulation.hpp"

namespace nbkit::io {

struct MdConfig {
  md::System system;
  md::ForceField field;
  std::string pair_style = "lj/cut";           // lj/cut or lj/cut/coul/dsf
  std::vector<double> type_epsilon, type_sigma;  // each type's own coefficients
  std::vector<PairCoefficient> pair_ij;        // every pair when some differ from geometric mixing (data file)
  double skin = 0.3, timestep = 0.005;
  std::int64_t steps = 0, thermo_every = 100;
  struct Langevin {
    double temperature, damping;
    std::uint64_t seed;
  };
  std::optional<Langevin> langevin;            // ensemble "langevin": LAMMPS's fix langevin
  // ensemble "nvt" or "npt": the Langevin-middle integrator (friction given in 1/ps, held in 1/fs)
  std::optional<md::Integrator::LangevinMiddleSettings> langevin_middle;
  std::optional<md::BarostatSettings> barostat;  // ensemble "npt": [barostat]
  md::ConstraintOptions constraints;             // [constraints]
  std::optional<double> hydrogen_mass;           // [system] hydrogen_mass (g/mol)
  // [minimize]: energy minimisation before the run (md::MinimizeOptions; biomolecular systems):
  // the largest force's tolerance (kcal/mol/A; OpenMM's 10 kJ/mol/nm) and an iteration limit (0: none).
  struct Minimize {
    double tolerance = 0.2390057;
    std::int64_t max_iterations = 0;
  };
  std::optional<Minimize> minimize;
  std::string directory = "md-out";            // [output] directory
  std::int64_t dcd_every = 0;                  // 0: no trajectory
  std::int64_t checkpoint_every = 0;           // [output] checkpoint_every: checkpoint.chk (0: none)
  std::string final_data = "final.data";
  std::string data_file;                       // [system] data, resolved against the TOML's folder; empty: a lattice
  // A biomolecular system: [system] prmtop (AMBER) or psf with parameters (CHARMM), with
  // coordinates and optionally a box, or a data file with bonded terms (LAMMPS), summed as
  // [nonbonded] says; `system` holds its atoms (md::molecular_system). Empty: a Lennard-Jones
  // system ([pair]).
  std::optional<md::MolecularForceField> molecular;
  std::string topology_file, coordinates_file;  // [system] prmtop or psf, and coordinates, resolved
  std::vector<std::string> parameter_files;     // [system] parameters (CHARMM), resolved
  bool molecular_box = false;                   // the files (or [system] box) gave a periodic box
};

MdConfig read_md_config(const std::string& path);
// How the config steps: its timestep, thermostat (LAMMPS's Langevin or Langevin middle),
// barostat and constraints (the command line and the Python module build their runs with it).
md::Integrator integrator_of(const MdConfig& config);
// The same for a text; `source` names it in messages, `base` is the folder relative paths
// (the data file) start from.
MdConfig parse_md_config(std::string_view text, const std::string& source, const std::string& base);

}  // namespace nbkit::io
