// nbkit md's TOML run description (md_config.hpp), read through toml++.
#include "nbkit/io/md_config.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <initializer_list>

#include "io/text.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/units.hpp"
#include "nbkit/io/amber.hpp"
#include "nbkit/io/molecular_files.hpp"

namespace nbkit::io {

namespace {

// Debian's toml++ 3.3 reaches __builtin_unreachable() (undefined behaviour) when it tests one
// of U+00A1..U+0499 for whitespace, which it does between tokens, after a line-ending
// backslash and elsewhere (toml++ issues #190 and #295, fixed upstream in 2026; found here by
// fuzz/md_config_fuzz.cpp). So characters beyond ASCII are taken only where toml++ never
// tests them: on a line that is a comment, or a line `key = "text"` (or 'text') with an
// optional comment after it; any other line with one is refused, with its number, before
// toml++ sees the text. (Paths and names with accents go in such one-line strings.)
bool ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool comment_or_string_line(std::string_view line) {
  std::size_t i = 0;
  auto spaces = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  };
  spaces();
  if (i < line.size() && line[i] == '#') return true;
  const std::size_t key = i;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '-' ||
                             line[i] == '.'))
    ++i;
  if (i == key) return false;
  spaces();
  if (i >= line.size() || line[i] != '=') return false;
  ++i;
  spaces();
  if (i >= line.size() || (line[i] != '"' && line[i] != '\'')) return false;
  const char quote = line[i++];
  if (line.substr(i, 2) == std::string(2, quote)) return false;  // no multi-line strings
  while (i < line.size() && line[i] != quote) {
    if (quote == '"' && line[i] == '\\') {
      if (i + 1 >= line.size() || !ascii(line.substr(i + 1, 1))) return false;
      ++i;
    }
    ++i;
  }
  if (i >= line.size()) return false;
  ++i;
  spaces();
  return i == line.size() || line[i] == '#';
}

void check_non_ascii_placement(std::string_view text, const std::string& source) {
  // Lines inside a multi-line string look like anything: with one in the file, ASCII only.
  const bool multi_line_strings =
      text.find("\"\"\"") != std::string_view::npos || text.find("\'\'\'") != std::string_view::npos;
  Lines lines(text);
  std::string_view line;
  while (lines.next(line))
    if (!ascii(line) && (multi_line_strings || !comment_or_string_line(line)))
      throw Error(fmt::format("{}:{}: a character beyond ASCII outside a one-line string value or a comment line "
                              "(nbkit reads them only in `key = \"...\"` lines and comments)",
                              source, lines.number()));
}

// Typed access to the TOML tables with errors that name the file, the key and its line.
class Config {
 public:
  Config(std::string_view text, const std::string& source) : path_(source) {
    check_non_ascii_placement(text, source);
    try {
      root_ = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
      throw Error(fmt::format("{}:{}:{}: {}", source, e.source().begin.line, e.source().begin.column, e.description()));
    }
  }
  [[noreturn]] void fail(const toml::node* node, const std::string& key, const std::string& what) const {
    if (node && node->source().begin.line > 0)
      throw Error(fmt::format("{}:{}: {}: {}", path_, node->source().begin.line, key, what));
    throw Error(fmt::format("{}: {}: {}", path_, key, what));
  }
  const toml::node* find(const std::string& key) const { return root_.at_path(key).node(); }
  double number(const std::string& key, std::optional<double> fallback, bool positive = false) const {
    const toml::node* node = find(key);
    if (!node) {
      if (!fallback) fail(nullptr, key, "missing (a number)");
      return *fallback;
    }
    const auto value = node->value<double>();
    if (!value || !std::isfinite(*value)) fail(node, key, "expected a number");
    if (positive && !(*value > 0)) fail(node, key, "expected a positive number");
    return *value;
  }
  std::int64_t integer(const std::string& key, std::optional<std::int64_t> fallback, std::int64_t least = 0) const {
    const toml::node* node = find(key);
    if (!node) {
      if (!fallback) fail(nullptr, key, "missing (an integer)");
      return *fallback;
    }
    const auto value = node->value<std::int64_t>();
    if (!value || !node->is_integer()) fail(node, key, "expected an integer");
    if (*value < least) fail(node, key, fmt::format("expected at least {}", least));
    return *value;
  }
  std::string text(const std::string& key, std::optional<std::string> fallback) const {
    const toml::node* node = find(key);
    if (!node) {
      if (!fallback) fail(nullptr, key, "missing (a string)");
      return *fallback;
    }
    const auto value = node->value<std::string>();
    if (!value || !node->is_string()) fail(node, key, "expected a string");
    return *value;
  }
  bool flag(const std::string& key, bool fallback) const {
    const toml::node* node = find(key);
    if (!node) return fallback;
    if (!node->is_boolean()) fail(node, key, "expected true or false");
    return *node->value<bool>();
  }
  // Refuses keys this version does not know (a typo would otherwise be ignored silently).
  void check_keys(const std::string& table, std::initializer_list<const char*> known) const {
    const toml::node* node = table.empty() ? &root_ : find(table);
    if (!node) return;
    const toml::table* t = node->as_table();
    if (!t) fail(node, table, "expected a table");
    for (const auto& [key, value] : *t) {
      bool ok = false;
      for (const char* k : known) ok = ok || key.str() == k;
      if (!ok) fail(&value, (table.empty() ? "" : table + ".") + std::string(key.str()), "unknown key");
    }
  }

 private:
  std::string path_;
  toml::table root_;
};

// [system]: a LAMMPS data file, an AMBER prmtop with its coordinates, or an fcc lattice as
// in.lj builds it; velocities.
// [system] hydrogen_mass: hydrogen mass repartitioning before the system's masses are taken
// (water left alone when it is rigid, as OpenMM).
void repartition(const Config& c, const MdConfig& run, md::Topology& topology) {
  if (!run.hydrogen_mass) return;
  try {
    md::repartition_hydrogen_mass(topology, *run.hydrogen_mass, run.constraints.rigid_water);
  } catch (const Error& e) {
    c.fail(c.find("system.hydrogen_mass"), "system.hydrogen_mass", e.what());
  }
}

void read_system(const Config& c, md::Units units, const std::string& base, MdConfig& run, LammpsData& file) {
  const char* topology_key = c.find("system.prmtop") ? "system.prmtop" : c.find("system.psf") ? "system.psf" : nullptr;
  if (c.find("system.prmtop") && c.find("system.psf")) c.fail(c.find("system.psf"), "system.psf", "give a prmtop or a psf, not both");
  if (c.find("system.parameters") && !c.find("system.psf"))
    c.fail(c.find("system.parameters"), "system.parameters", "CHARMM parameter files go with system.psf");
  if (c.find("system.box") && !topology_key) c.fail(c.find("system.box"), "system.box", "a box goes with a prmtop or psf");
  if (c.find("system.replicate") && !topology_key)
    c.fail(c.find("system.replicate"), "system.replicate", "replicate goes with a prmtop or psf");
  if (c.find("system.special_bonds") && !c.find("system.data"))
    c.fail(c.find("system.special_bonds"), "system.special_bonds", "LAMMPS's special_bonds go with a data file");
  if (topology_key) {
    for (const char* key : {"system.data", "system.lattice"})
      if (c.find(key)) c.fail(c.find(key), key, "give one system: prmtop or psf (with coordinates), data or lattice");
    if (!c.find("system.coordinates"))
      c.fail(c.find(topology_key), topology_key,
             "needs system.coordinates (an AMBER inpcrd or rst7, or a CHARMM crd)");
    const std::filesystem::path folder(base);
    run.topology_file = (folder / c.text(topology_key, std::nullopt)).string();
    run.coordinates_file = (folder / c.text("system.coordinates", std::nullopt)).string();
    if (const toml::node* list = c.find("system.parameters")) {
      const toml::array* files = list->as_array();
      if (!files || files->empty()) c.fail(list, "system.parameters", "expected a list of file names, e.g. [\"par_all36m_prot.prm\"]");
      for (const toml::node& file : *files) {
        const auto name = file.value<std::string>();
        if (!name || !file.is_string()) c.fail(&file, "system.parameters", "expected file names (strings)");
        run.parameter_files.push_back((folder / *name).string());
      }
    }
    md::Topology topology = read_molecular_topology(run.topology_file, run.parameter_files);
    md::Coordinates coordinates = read_molecular_coordinates(run.coordinates_file, topology.size());
    if (const toml::node* box = c.find("system.box")) {
      const toml::array* edges = box->as_array();
      if (coordinates.box || topology.box) c.fail(box, "system.box", "the files give a box already");
      Vec3 length{};
      for (int a = 0; a < 3; ++a) {
        const auto v = edges && edges->size() == 3 ? (*edges)[static_cast<std::size_t>(a)].value<double>() : std::nullopt;
        if (!v || !(*v > 0) || !std::isfinite(*v)) c.fail(box, "system.box", "expected three positive lengths (Angstrom)");
        length[a] = *v;
      }
      coordinates.box = PeriodicBox::from_edges(length);
    }
    if (const toml::node* copies = c.find("system.replicate")) {  // LAMMPS's replicate
      const toml::array* counts = copies->as_array();
      std::array<int, 3> n{};
      for (int a = 0; a < 3; ++a) {
        const auto v = counts && counts->size() == 3 ? (*counts)[static_cast<std::size_t>(a)].value<std::int64_t>()
                                                     : std::nullopt;
        if (!v || *v < 1 || *v > 1000) c.fail(copies, "system.replicate", "expected three whole counts, e.g. [2, 2, 1]");
        n[static_cast<std::size_t>(a)] = static_cast<int>(*v);
      }
      if (!coordinates.box && !topology.box) c.fail(copies, "system.replicate", "replicating needs a periodic box");
      try {
        md::Replicated r = md::replicate(topology, coordinates, n);
        topology = std::move(r.topology), coordinates = std::move(r.coordinates);
      } catch (const Error& e) {
        c.fail(copies, "system.replicate", e.what());
      }
    }
    run.molecular_box = coordinates.box || topology.box;
    repartition(c, run, topology);
    run.system = md::molecular_system(topology, coordinates);
    run.molecular = md::MolecularForceField{std::move(topology), {}};
    // The tail correction as the format's program has it (md::NonbondedSettings): AMBER on, CHARMM off.
    run.molecular->nonbonded.dispersion_correction = !c.find("system.psf");
  } else if (c.find("system.coordinates")) {
    c.fail(c.find("system.coordinates"), "system.coordinates", "coordinates go with system.prmtop or system.psf");
  } else if (c.find("system.data")) {
    if (c.find("system.lattice")) c.fail(c.find("system.lattice"), "system.lattice", "give data or lattice, not both");
    run.data_file = (std::filesystem::path(base) / c.text("system.data", std::nullopt)).string();
    file = read_lammps_data(run.data_file, units);
    if (!file.molecular.atom_style.empty()) {  // full or molecular: a biomolecular system
      if (units != md::Units::real) c.fail(c.find("units"), "units", "a molecular data file runs in real units");
      SpecialBonds special;
      if (c.find("system.special_bonds")) {
        try {
          special = parse_special_bonds(c.text("system.special_bonds", std::nullopt));
        } catch (const Error& e) {
          c.fail(c.find("system.special_bonds"), "system.special_bonds", e.what());
        }
      }
      md::Topology topology = molecular_topology(file, run.data_file, special);
      md::Coordinates coordinates;
      const md::System& s = file.system;
      for (std::size_t i = 0; i < s.size(); ++i) {
        coordinates.positions.push_back({s.x[i], s.y[i], s.z[i]});
        coordinates.velocities.push_back({s.vx[i], s.vy[i], s.vz[i]});
      }
      coordinates.box = s.box;
      run.molecular_box = true;  // a data file always has one
      repartition(c, run, topology);
      run.system = md::molecular_system(topology, coordinates);
      run.molecular = md::MolecularForceField{std::move(topology), {}};
      run.molecular->nonbonded.coulomb_constant = units::lammps_real::qqr2e;  // the program the file is from
      run.molecular->nonbonded.dispersion_correction = false;                // LAMMPS's pair_modify tail no
    } else {
      if (c.find("system.special_bonds"))
        c.fail(c.find("system.special_bonds"), "system.special_bonds",
               "special_bonds need bonds: a data file of atom style full or molecular");
      run.system = std::move(file.system);
    }
  } else {
    const std::string lattice = c.text("system.lattice", "fcc");
    if (lattice != "fcc") c.fail(c.find("system.lattice"), "system.lattice", "only fcc in this version");
    const toml::node* cells = c.find("system.cells");
    const toml::array* list = cells ? cells->as_array() : nullptr;
    if (!list || list->size() != 3) c.fail(cells, "system.cells", "expected three integers, e.g. [20, 20, 20]");
    int n[3];
    for (int a = 0; a < 3; ++a) {
      const auto v = (*list)[static_cast<std::size_t>(a)].value<std::int64_t>();
      if (!v || *v < 1 || *v > 100000) c.fail(cells, "system.cells", "expected three integers from 1 to 100000");
      n[a] = static_cast<int>(*v);
    }
    run.system = md::fcc_lattice(c.number("system.density", std::nullopt, true), n[0], n[1], n[2]);
    run.system.units = units;
  }
  if (c.find("system.temperature"))
    md::assign_velocities(run.system, c.number("system.temperature", std::nullopt),
                          static_cast<std::uint64_t>(c.integer("system.seed", 87287, 0)));
  else if (c.find("system.seed"))
    c.fail(c.find("system.seed"), "system.seed", "the seed of new velocities: give system.temperature too");
}

// [pair] coeffs: {type, epsilon, sigma} per type, {types = [i, j], epsilon, sigma} per pair.
void read_coefficients(const Config& c, const md::System& system, std::vector<double>& epsilon,
                       std::vector<double>& sigma, std::vector<PairCoefficient>& pairs) {
  const toml::node* coeffs = c.find("pair.coeffs");
  const toml::array* list = coeffs->as_array();
  if (!list) c.fail(coeffs, "pair.coeffs", "expected an array of {type, epsilon, sigma} tables");
  epsilon.assign(static_cast<std::size_t>(system.types()), 0.0), sigma.assign(static_cast<std::size_t>(system.types()), 0.0);
  for (const toml::node& entry : *list) {
    const toml::table* t = entry.as_table();
    if (!t) c.fail(&entry, "pair.coeffs", "each entry is a table {type, epsilon, sigma} or {types = [i, j], epsilon, sigma}");
    for (const auto& [key, value] : *t)
      if (key.str() != "type" && key.str() != "types" && key.str() != "epsilon" && key.str() != "sigma")
        c.fail(&value, "pair.coeffs." + std::string(key.str()), "unknown key (type, types, epsilon, sigma)");
    const auto eps = (*t)["epsilon"].value<double>();
    const auto sig = (*t)["sigma"].value<double>();
    if (!eps || !sig || !std::isfinite(*eps) || !std::isfinite(*sig))
      c.fail(&entry, "pair.coeffs", "each entry needs epsilon and sigma (numbers)");
    if (!(*eps >= 0) || !(*sig > 0)) c.fail(&entry, "pair.coeffs", "epsilon must not be negative, sigma must be positive");
    auto type_number = [&](std::optional<std::int64_t> type) {
      if (!type) c.fail(&entry, "pair.coeffs", "a type is an integer");
      if (*type < 1 || *type > system.types())
        c.fail(&entry, "pair.coeffs", fmt::format("type {} outside 1..{}", *type, system.types()));
      return static_cast<int>(*type);
    };
    const bool one = t->contains("type"), two = t->contains("types");
    if (one == two) c.fail(&entry, "pair.coeffs", "each entry names one type (type = T) or a pair (types = [i, j])");
    if (one) {
      const int type = type_number((*t)["type"].value<std::int64_t>());
      epsilon[static_cast<std::size_t>(type - 1)] = *eps, sigma[static_cast<std::size_t>(type - 1)] = *sig;
    } else {
      const toml::array* ij = (*t)["types"].as_array();
      if (!ij || ij->size() != 2) c.fail(&entry, "pair.coeffs", "types = [i, j]: two type numbers");
      int i = type_number((*ij)[0].value<std::int64_t>()), j = type_number((*ij)[1].value<std::int64_t>());
      if (i > j) std::swap(i, j);
      for (const PairCoefficient& p : pairs)
        if (p.i == i && p.j == j) c.fail(&entry, "pair.coeffs", fmt::format("pair {} {} given twice", i, j));
      pairs.push_back({i, j, *eps, *sig});
    }
  }
}

void read_pair(const Config& c, MdConfig& run, const LammpsData& file) {
  const double cutoff = c.number("pair.cutoff", 2.5, true);
  run.pair_style = c.text("pair.style", "lj/cut");
  const std::string& style = run.pair_style;
  if (style != "lj/cut" && style != "lj/cut/coul/dsf")
    c.fail(c.find("pair.style"), "pair.style", "expected lj/cut or lj/cut/coul/dsf (shifted-force Coulomb, alpha 0)");
  if (style == "lj/cut" && (c.find("pair.coulomb_cutoff") || c.find("pair.dielectric")))
    c.fail(c.find("pair.coulomb_cutoff") ? c.find("pair.coulomb_cutoff") : c.find("pair.dielectric"), "pair.style",
           "Coulomb settings need style lj/cut/coul/dsf");
  if (style == "lj/cut/coul/dsf" && !run.system.has_charges)
    c.fail(c.find("pair.style"), "pair.style", "lj/cut/coul/dsf needs charges (a data file in the charge style)");
  const std::string mixing = c.text("pair.mixing", "geometric");
  if (mixing != "geometric" && mixing != "arithmetic")
    c.fail(c.find("pair.mixing"), "pair.mixing", "expected geometric or arithmetic");
  // Per type from [pair] coeffs, else the data file's Pair Coeffs (or PairIJ's diagonal), mixed;
  // then the pairs set apart (the TOML's types = [i, j], else the data file's PairIJ Coeffs).
  std::vector<double>& epsilon = run.type_epsilon;
  std::vector<double>& sigma = run.type_sigma;
  epsilon = file.pair_epsilon, sigma = file.pair_sigma;
  std::vector<PairCoefficient> pairs = file.pair_ij;
  if (c.find("pair.coeffs")) {
    pairs.clear();
    read_coefficients(c, run.system, epsilon, sigma, pairs);
  }
  if (epsilon.empty()) {
    if (run.system.types() != 1)
      c.fail(nullptr, "pair.coeffs", "missing: give epsilon and sigma for every type (or Pair Coeffs in the data file)");
    epsilon = {1.0}, sigma = {1.0};  // reduced units' one type
  }
  for (int t = 0; t < run.system.types(); ++t)
    if (!(sigma[static_cast<std::size_t>(t)] > 0))
      c.fail(c.find("pair.coeffs"), "pair.coeffs", fmt::format("no coefficients for type {}", t + 1));
  run.field = md::ForceField::mixed(epsilon, sigma, cutoff, mixing == "arithmetic");
  for (const PairCoefficient& p : pairs) {
    // One cutoff for every pair here: a data file's per-pair cutoff must be that one.
    if (p.cutoff != 0 && std::fabs(p.cutoff - cutoff) > 1e-12 * cutoff)
      c.fail(c.find("pair.cutoff"), "pair.cutoff",
             fmt::format("{} gives pair {} {} its own cutoff {}; nbkit uses one cutoff for all pairs ({})", run.data_file,
                         p.i, p.j, p.cutoff, cutoff));
    run.field.set_pair(p.i - 1, p.j - 1, p.epsilon, p.sigma);
  }
  // The data file's per-type coefficients are the field's diagonal (a pair i i may set it).
  const int types = run.field.types();
  for (int t = 0; t < types; ++t) {
    epsilon[static_cast<std::size_t>(t)] = run.field.epsilon[static_cast<std::size_t>(t * types + t)];
    sigma[static_cast<std::size_t>(t)] = run.field.sigma[static_cast<std::size_t>(t * types + t)];
  }
  run.pair_ij = pairs_beyond_geometric_mixing(run.field);
  run.field.shift = c.flag("pair.shift", false);
  if (style == "lj/cut/coul/dsf") {
    run.field.coulomb_cutoff = c.number("pair.coulomb_cutoff", cutoff, true);
    run.field.dielectric = c.number("pair.dielectric", 1.0, true);
  }
  if (const toml::node* ex = c.find("pair.exclusions")) {
    const toml::array* list = ex->as_array();
    if (!list) c.fail(ex, "pair.exclusions", "expected an array of [id, id] pairs");
    for (const toml::node& entry : *list) {
      const toml::array* pair = entry.as_array();
      const auto a = pair && pair->size() == 2 ? (*pair)[0].value<std::int64_t>() : std::nullopt;
      const auto b = pair && pair->size() == 2 ? (*pair)[1].value<std::int64_t>() : std::nullopt;
      if (!a || !b) c.fail(&entry, "pair.exclusions", "expected [id, id]");
      auto index_of = [&](std::int64_t id) {
        const auto it = std::lower_bound(run.system.id.begin(), run.system.id.end(), id);
        if (it == run.system.id.end() || *it != id) c.fail(&entry, "pair.exclusions", fmt::format("no atom with ID {}", id));
        return static_cast<std::int64_t>(it - run.system.id.begin());
      };
      run.field.exclusions.push_back({index_of(*a), index_of(*b)});
    }
  }
}

}  // namespace

// [nonbonded] of a biomolecular system (md::NonbondedSettings; `nbkit energy`'s options).
void read_nonbonded(const Config& c, MdConfig& run) {
  md::NonbondedSettings& s = run.molecular->nonbonded;
  if (c.find("pair")) c.fail(c.find("pair"), "pair", "a biomolecular system takes [nonbonded], not [pair]");
  const bool box = run.molecular_box;
  if (c.find("nonbonded.electrostatics"))
    for (const char* key : {"nonbonded.method", "nonbonded.cutoff_style"})
      if (c.find(key))
        c.fail(c.find(key), key, "electrostatics sets the method and the cutoff style: give it or this, not both");
  try {
    if (c.find("nonbonded.electrostatics")) {
      md::set_electrostatics(c.text("nonbonded.electrostatics", std::nullopt), box, s);
    } else {
      s.method = md::parse_nonbonded_method(c.text("nonbonded.method", box ? "cutoff-periodic" : "no-cutoff"));
      s.style = md::parse_cutoff_style(c.text("nonbonded.cutoff_style", "openmm"));
    }
  } catch (const Error& e) {
    c.fail(c.find("nonbonded.electrostatics") ? c.find("nonbonded.electrostatics") : c.find("nonbonded"), "nonbonded",
           e.what());
  }
  const bool cut = s.method != md::NonbondedSettings::Method::no_cutoff;
  for (const char* key : {"nonbonded.cutoff", "nonbonded.switch_distance", "nonbonded.cutoff_style",
                          "nonbonded.reaction_field_dielectric"})
    if (!cut && c.find(key)) c.fail(c.find(key), key, "no-cutoff sums every pair: no cutoff settings");
  s.cutoff = c.number("nonbonded.cutoff", 10.0, true);
  s.reaction_field_dielectric = c.number("nonbonded.reaction_field_dielectric", 78.3, true);
  if (c.find("nonbonded.switch_distance")) s.switch_distance = c.number("nonbonded.switch_distance", std::nullopt, true);
  const bool pme = s.method == md::NonbondedSettings::Method::pme;
  for (const char* key : {"nonbonded.ewald_tolerance", "nonbonded.pme_order", "nonbonded.ewald_alpha", "nonbonded.pme_mesh",
                          "nonbonded.pme_mesh_sizes"})
    if (!pme && c.find(key)) c.fail(c.find(key), key, "only method = \"pme\" takes it");
  if (pme && c.find("nonbonded.reaction_field_dielectric"))
    c.fail(c.find("nonbonded.reaction_field_dielectric"), "nonbonded.reaction_field_dielectric", "pme has no reaction field");
  const bool msm = s.method == md::NonbondedSettings::Method::msm;
  for (const char* key : {"nonbonded.msm_spacing", "nonbonded.msm_interpolation"})
    if (!msm && c.find(key)) c.fail(c.find(key), key, "only msm (electrostatics = \"msm\") takes it");
  if (msm && c.find("nonbonded.reaction_field_dielectric"))
    c.fail(c.find("nonbonded.reaction_field_dielectric"), "nonbonded.reaction_field_dielectric", "msm has no reaction field");
  s.msm_spacing = c.number("nonbonded.msm_spacing", 1.5, true);
  const std::string interpolation = c.text("nonbonded.msm_interpolation", "cubic");
  if (interpolation != "cubic" && interpolation != "quintic")
    c.fail(c.find("nonbonded.msm_interpolation"), "nonbonded.msm_interpolation", "expected cubic or quintic");
  s.msm_quintic = interpolation == "quintic";
  s.ewald_tolerance = c.number("nonbonded.ewald_tolerance", 5e-4, true);
  s.pme_order = static_cast<int>(c.integer("nonbonded.pme_order", 5, 4));
  if (s.pme_order > 6) c.fail(c.find("nonbonded.pme_order"), "nonbonded.pme_order", "expected 4, 5 or 6");
  if (c.find("nonbonded.ewald_alpha")) s.ewald_alpha = c.number("nonbonded.ewald_alpha", std::nullopt, true);
  if (const toml::node* mesh = c.find("nonbonded.pme_mesh")) {
    const toml::array* points = mesh->as_array();
    std::array<int, 3> m{};
    for (std::size_t a = 0; a < 3; ++a) {
      const auto v = points && points->size() == 3 ? (*points)[a].value<std::int64_t>() : std::nullopt;
      if (!v || *v < s.pme_order || *v > 4096)
        c.fail(mesh, "nonbonded.pme_mesh", "expected three whole numbers of mesh points (order..4096), e.g. [64, 64, 64]");
      m[a] = static_cast<int>(*v);
    }
    s.pme_mesh = m;
  }
  const std::string sizes = c.text("nonbonded.pme_mesh_sizes", "reference");
  if (sizes != "reference" && sizes != "fft")
    c.fail(c.find("nonbonded.pme_mesh_sizes"), "nonbonded.pme_mesh_sizes",
           "expected reference (OpenMM's Reference platform's mesh) or fft (rounded up to products of 2, 3, 5, 7)");
  if (sizes == "fft" && s.pme_mesh)
    c.fail(c.find("nonbonded.pme_mesh_sizes"), "nonbonded.pme_mesh_sizes", "pme_mesh gives the mesh outright");
  s.pme_fft_sizes = sizes == "fft";
  if (const toml::node* tail = c.find("nonbonded.dispersion_correction")) {
    s.dispersion_correction = c.flag("nonbonded.dispersion_correction", true);
    if (s.dispersion_correction && !s.periodic())
      c.fail(tail, "nonbonded.dispersion_correction", "the correction needs a periodic box (a periodic method)");
  }
  if (!s.periodic()) s.dispersion_correction = false;
}

MdConfig parse_md_config(std::string_view text, const std::string& source, const std::string& base) {
  const Config c(text, source);
  c.check_keys("", {"units", "system", "pair", "nonbonded", "neighbor", "minimize", "run", "output", "constraints",
                    "barostat"});
  c.check_keys("system", {"data", "lattice", "density", "cells", "temperature", "seed", "prmtop", "psf", "parameters",
                          "coordinates", "box", "special_bonds", "replicate", "hydrogen_mass"});
  c.check_keys("constraints", {"bonds", "rigid_water", "tolerance"});
  c.check_keys("barostat", {"pressure", "frequency", "scaling", "axes", "seed"});
  c.check_keys("nonbonded", {"method", "electrostatics", "cutoff", "switch_distance", "cutoff_style",
                             "reaction_field_dielectric", "ewald_tolerance", "pme_order", "dispersion_correction",
                             "msm_spacing", "msm_interpolation", "ewald_alpha", "pme_mesh", "pme_mesh_sizes"});
  c.check_keys("pair", {"style", "cutoff", "shift", "mixing", "coeffs", "exclusions", "coulomb_cutoff", "dielectric"});
  c.check_keys("neighbor", {"skin"});
  c.check_keys("minimize", {"tolerance", "max_iterations"});
  c.check_keys("run", {"timestep", "steps", "thermo", "ensemble", "temperature", "damping", "friction", "seed"});
  c.check_keys("output", {"directory", "dcd_every", "data", "checkpoint_every"});
  // AMBER and CHARMM systems run in real units (the default with a prmtop or psf).
  const bool biomolecular = c.find("system.prmtop") || c.find("system.psf");
  const md::Units units = md::parse_units(c.text("units", biomolecular ? "real" : "lj"));
  if (biomolecular && units != md::Units::real) c.fail(c.find("units"), "units", "a prmtop or psf runs in real units");
  MdConfig run;
  if (c.find("constraints")) {  // [constraints]: h-bonds and rigid water unless told otherwise (OpenMM's usual)
    if (!biomolecular && !c.find("system.data"))
      c.fail(c.find("constraints"), "constraints", "constraints are for biomolecular systems");
    try {
      run.constraints.bonds = md::parse_constraint_bonds(c.text("constraints.bonds", "h-bonds"));
    } catch (const Error& e) {
      c.fail(c.find("constraints.bonds"), "constraints.bonds", e.what());
    }
    run.constraints.rigid_water = c.flag("constraints.rigid_water", true);
    run.constraints.tolerance = c.number("constraints.tolerance", 1e-5, true);
    if (run.constraints.tolerance >= 0.1)
      c.fail(c.find("constraints.tolerance"), "constraints.tolerance", "a relative tolerance below 0.1, e.g. 1e-5");
  }
  if (c.find("system.hydrogen_mass")) {
    if (!biomolecular && !c.find("system.data"))
      c.fail(c.find("system.hydrogen_mass"), "system.hydrogen_mass", "hydrogen masses are for biomolecular systems");
    run.hydrogen_mass = c.number("system.hydrogen_mass", std::nullopt, true);
  }
  LammpsData file;
  read_system(c, units, base, run, file);
  if (!run.molecular)
    for (const char* key : {"constraints", "system.hydrogen_mass", "barostat"})
      if (c.find(key)) c.fail(c.find(key), key, "for biomolecular systems (a prmtop, psf or molecular data file)");
  if (run.molecular) {
    read_nonbonded(c, run);
  } else {
    if (c.find("nonbonded")) c.fail(c.find("nonbonded"), "nonbonded", "[nonbonded] is for biomolecular systems: use [pair]");
    read_pair(c, run, file);
  }
  if (c.find("minimize")) {  // energy minimisation before the run (biomolecular systems)
    if (!run.molecular) c.fail(c.find("minimize"), "minimize", "minimisation is for biomolecular systems");
    run.minimize = MdConfig::Minimize{c.number("minimize.tolerance", 0.2390057, true),
                                      c.integer("minimize.max_iterations", 0, 0)};
  }
  run.timestep = c.number("run.timestep", units == md::Units::lj ? 0.005 : 1.0, true);
  run.steps = c.integer("run.steps", std::nullopt, 0);
  run.thermo_every = c.integer("run.thermo", 100, 1);
  const std::string ensemble = c.text("run.ensemble", "nve");
  const auto seed = static_cast<std::uint64_t>(c.integer("run.seed", 48279, 0));
  if (ensemble == "langevin") {
    run.langevin = MdConfig::Langevin{c.number("run.temperature", std::nullopt), c.number("run.damping", std::nullopt, true),
                                      seed};
    if (c.find("run.friction")) c.fail(c.find("run.friction"), "run.friction", "langevin takes damping (a time); nvt and npt take friction");
  } else if (ensemble == "nvt" || ensemble == "npt") {  // the Langevin-middle integrator, friction in 1/ps
    if (!run.molecular) c.fail(c.find("run.ensemble"), "run.ensemble", "nvt and npt are for biomolecular systems; use langevin");
    if (c.find("run.damping")) c.fail(c.find("run.damping"), "run.damping", "nvt and npt take friction (1/ps), not damping");
    run.langevin_middle = md::Integrator::LangevinMiddleSettings{
        c.number("run.temperature", std::nullopt), 1e-3 * c.number("run.friction", 1.0, true), seed};
  } else if (ensemble != "nve") {
    c.fail(c.find("run.ensemble"), "run.ensemble", "expected nve, nvt, npt or langevin");
  } else {
    for (const char* key : {"run.temperature", "run.damping", "run.friction", "run.seed"})
      if (c.find(key)) c.fail(c.find(key), key, "a thermostat setting: add ensemble = \"nvt\" or \"langevin\" (the run is NVE)");
  }
  if (ensemble == "npt") {  // [barostat]: pressure in bar, a move every `frequency` steps
    md::BarostatSettings b;
    b.pressure = c.number("barostat.pressure", 1.01325, false);
    b.frequency = static_cast<int>(c.integer("barostat.frequency", 25, 1));
    b.temperature = run.langevin_middle->temperature;
    b.seed = static_cast<std::uint64_t>(c.integer("barostat.seed", static_cast<std::int64_t>(seed ^ 0x5bd1e995u), 0));
    const std::string scaling = c.text("barostat.scaling", "isotropic");
    if (scaling != "isotropic" && scaling != "anisotropic")
      c.fail(c.find("barostat.scaling"), "barostat.scaling", "expected isotropic or anisotropic");
    b.anisotropic = scaling == "anisotropic";
    if (const toml::node* axes = c.find("barostat.axes")) {
      if (!b.anisotropic) c.fail(axes, "barostat.axes", "axes are for scaling = \"anisotropic\"");
      const toml::array* list = axes->as_array();
      b.axes = {false, false, false};
      if (!list || list->empty()) c.fail(axes, "barostat.axes", "expected a list of axes, e.g. [\"x\", \"y\"]");
      for (const toml::node& axis : *list) {
        const auto name = axis.value<std::string>();
        if (!name || (*name != "x" && *name != "y" && *name != "z"))
          c.fail(axes, "barostat.axes", "expected a list of axes, e.g. [\"x\", \"y\"]");
        b.axes[static_cast<std::size_t>((*name)[0] - 'x')] = true;
      }
    }
    if (!run.molecular_box) c.fail(c.find("run.ensemble"), "run.ensemble", "npt needs a periodic box");
    run.barostat = b;
  } else if (c.find("barostat")) {
    c.fail(c.find("barostat"), "barostat", "a barostat runs with ensemble = \"npt\"");
  }
  run.skin = c.number("neighbor.skin", units == md::Units::lj ? 0.3 : 2.0, false);
  if (!(run.skin >= 0)) c.fail(c.find("neighbor.skin"), "neighbor.skin", "expected zero or a positive length");
  run.directory = c.text("output.directory", "md-out");
  run.dcd_every = c.integer("output.dcd_every", 0, 0);
  run.checkpoint_every = c.integer("output.checkpoint_every", 0, 0);
  if (run.checkpoint_every > 0 && !run.molecular)
    c.fail(c.find("output.checkpoint_every"), "output.checkpoint_every",
           "checkpoints are for biomolecular runs (a Lennard-Jones run restarts from its final data file)");
  run.final_data = c.text("output.data", run.molecular ? "final.rst7" : "final.data");
  if (run.final_data.empty() || run.final_data.find('/') != std::string::npos)
    c.fail(c.find("output.data"), "output.data", "a file name in the output directory (no '/')");
  return run;
}

MdConfig read_md_config(const std::string& path) {
  return parse_md_config(read_file_text(path, "a TOML file"), path, std::filesystem::path(path).parent_path().string());
}

md::Integrator integrator_of(const MdConfig& config) {
  md::Integrator integrator;
  integrator.timestep = config.timestep;
  if (config.langevin)
    integrator.langevin = md::Integrator::LangevinSettings{config.langevin->temperature, config.langevin->damping,
                                                           config.langevin->seed};
  integrator.langevin_middle = config.langevin_middle;
  integrator.barostat = config.barostat;
  integrator.constraints = config.constraints;
  return integrator;
}

}  // namespace nbkit::io
