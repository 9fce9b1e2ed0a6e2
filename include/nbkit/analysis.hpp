#pragma once
// Trajectory analysis on the engines' pair loops: the atoms of a topology with a small selection
// language, periodic cells as DCD files store them (orthorhombic or triclinic), and radial
// distribution functions g(r) between two atom groups over the frames of a trajectory,
// normalised as MDAnalysis's InterRDF (Levine, Stone and Kohlmeyer, J. Comp. Phys. 230, 3556
// (2011): g(r) on GPUs; MDAnalysis.analysis.rdf for the normalisation users compare with).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <memory>

#include "nbkit/core/backend.hpp"
#include "nbkit/core/vec3.hpp"

namespace nbkit::analysis {

// What selections read of each atom; atom i is entry i of every vector.
struct AtomTable {
  std::vector<std::string> name, residue_name, element;  // element: "O", "NA"; "" unknown
  std::vector<std::int32_t> residue_number;              // as the file numbers them
  // 0-based: a new residue where the residue number, name, chain or segment changes.
  std::vector<std::int32_t> residue;
  // 0-based, atoms joined by bonds (psf, prmtop); empty where the file has no bonds (PDB, PQR).
  std::vector<std::int32_t> molecule;
  std::string source;  // "CHARMM psf water.psf", for messages
  std::size_t size() const { return name.size(); }
};

// The atoms of a CHARMM/X-PLOR psf, an AMBER prmtop, a PQR, PDB or mmCIF file (by extension;
// .gz allowed). Elements: the file's element column (PDB, mmCIF); guessed from the mass (psf,
// prmtop: the nearest standard atomic weight, any atom under 4.5 g/mol a hydrogen, so
// repartitioned hydrogens stay hydrogens) or from the name's first letter (PQR).
// Throws nbkit::Error naming the file.
AtomTable read_atom_table(const std::string& path);

// The atoms an expression selects, in increasing order. The language (MDAnalysis's and VMD's
// common core):
//   all | none
//   name N...      resname N...    element E...   (words; * and ? are wildcards; case matters)
//   resid R...     index I...      (numbers or inclusive ranges "1:10" or "1-10"; index is 0-based)
//   X and Y | X or Y | not X | ( X )   (not binds tightest, then and, then or)
// Throws nbkit::Error with the expression and the position of what it could not read.
std::vector<std::int32_t> select_atoms(const AtomTable& atoms, std::string_view expression);

// 0-based atom indices from a text file (whitespace-separated integers; '#' starts a comment),
// each below `atoms` and given once. Throws nbkit::InputError (file:line: problem).
std::vector<std::int32_t> read_index_file(const std::string& path, std::size_t atoms);

// A periodic cell spanned by three edge vectors (a along x, b in the xy plane, as DCD and PDB
// files define it), Angstrom.
struct Cell {
  Vec3 a, b, c;
  double volume() const;
  // The distance between opposite faces along each edge's reciprocal direction: a sphere of
  // radius r has one image within r of any point while 2 r <= the smallest of them.
  std::array<double, 3> widths() const;
};
// From edge lengths and the angles alpha (b, c), beta (a, c), gamma (a, b) in degrees.
Cell cell_from_lengths_angles(double a, double b, double c, double alpha, double beta, double gamma);
// From a DCD frame's unit-cell record (A, gamma, B, beta, alpha, C): angles in degrees, or
// their cosines as CHARMM writes them (all three within [-1, 1]); empty for the all-zero cell
// some writers store for non-periodic runs. Throws nbkit::Error for a cell that is not one.
std::optional<Cell> cell_from_dcd(const std::array<double, 6>& record);

enum class RdfExclusion { none, residue, molecule };
// InterRDF's norm= choices, and VMD's `measure gofr`: each frame's histogram normalised by that
// frame's own volume (V / pairs per shell volume), then averaged over the frames, where InterRDF
// divides the summed counts by the frames' mean volume (the two differ only when the volume
// changes, as in NPT); frames without a cell take --volume, or VMD's 30 A^3 for each group-A
// atom (VMD's Measure.C, measure_gofr).
enum class RdfNorm { rdf, density, none, vmd };
// "none", "residue", "molecule"; "rdf", "density", "none", "vmd". Throw nbkit::Error naming the choices.
RdfExclusion parse_rdf_exclusion(const std::string& name);
RdfNorm parse_rdf_norm(const std::string& name);

struct RdfOptions {
  double rmin = 0, rmax = 15;  // the histogram's range, Angstrom (InterRDF's range=)
  int bins = 75;               // InterRDF's nbins=
  // Pairs of an atom with itself are never counted; `residue` or `molecule` leaves out every
  // pair within one (InterRDF's exclusion_block for blocks that are residues or molecules).
  RdfExclusion exclude = RdfExclusion::none;
  RdfNorm norm = RdfNorm::rdf;
  // The volume for g(r) of frames without a cell (Angstrom^3); 0: such frames are refused.
  double volume = 0;
  int threads = 0;  // 0: every core
  // Where the pairs are counted: cpu (threads), cuda (the GPUs share group A), automatic (the
  // GPUs when usable). Both count in float64 the same way: the same histogram either way.
  Backend backend = Backend::automatic;
  std::vector<int> gpus;  // CUDA device indices; empty: every usable GPU
};

struct RdfResult {
  std::vector<double> edges;          // bins + 1, Angstrom
  std::vector<std::uint64_t> counts;  // pairs in each bin, summed over the frames (exact)
  std::vector<double> g;              // counts normalised as RdfOptions::norm says
  // The mean number of group-B atoms within edges[k + 1] (and beyond rmin) of a group-A atom.
  std::vector<double> coordination;
  std::int64_t frames = 0;
  double mean_volume = 0;     // Angstrom^3; 0 for frames without a cell and no volume given
  double pairs = 0;           // the pairs g(r) normalises by: nA nB less self and excluded pairs
  std::uint64_t distances = 0;  // distances computed (the cell lists' candidates), all frames
  Backend backend = Backend::cpu;  // what counted them (never automatic)
  std::string detail;              // "2 threads", "NVIDIA H100 80GB HBM3 x1"
  std::string notice;              // why --backend auto did not use a GPU, if it did not
  // Host seconds preparing frames (checking them, laying out the cells; on the CPU, sorting the
  // atoms into them: the GPUs sort their own), and seconds the host waited for the GPUs' counts
  // (each frame is sorted and counted there while the caller reads the next).
  double prepare_seconds = 0, wait_seconds = 0;
};

// g(r) accumulated frame by frame. Counts are integers summed per thread and then in a fixed
// order, so the result does not depend on the thread count. Distances are float64 from the
// frames' float32 coordinates; a distance d falls in bin k when edges[k] <= d < edges[k + 1]
// (d == rmax in the last bin), numpy.histogram's rule, so a pair lands where InterRDF puts it
// unless its distance is within rounding of an edge.
class Rdf {
 public:
  // a, b: 0-based atom indices (each sorted, no repeats) of `table`'s atoms. Throws nbkit::Error
  // for an empty group, an index out of range, a bad range or bin count, `molecule` exclusion
  // where the table has no molecules.
  Rdf(const AtomTable& table, std::vector<std::int32_t> a, std::vector<std::int32_t> b, const RdfOptions& options);
  ~Rdf();
  Rdf(Rdf&&) noexcept;
  Rdf& operator=(Rdf&&) noexcept;
  // One frame: the coordinates of every atom of the table (Angstrom); `cell` empty: not
  // periodic. Throws nbkit::Error for a non-finite coordinate, or for rmax over half the cell's
  // smallest width (minimum images would not be unique).
  // On the GPUs a frame is counted while the caller reads and sorts the next; result() waits
  // for it (so result() is not safe to call from two threads at once).
  void add_frame(const float* x, const float* y, const float* z, const std::optional<Cell>& cell);
  RdfResult result() const;
  std::int64_t frames() const { return frames_; }

 private:
  std::vector<std::int32_t> a_, b_, group_;  // group_: per atom (residue or molecule), or empty
  RdfOptions options_;
  std::vector<double> edges_;
  struct Scratch;  // one frame's cell lists (rdf.cpp), kept from frame to frame
  void add_counts(const std::vector<std::uint64_t>& frame_counts, double volume) const;
  void collect_in_flight() const;
  // The totals: mutable because result() first adds the frame the GPUs may still be counting.
  mutable std::vector<std::uint64_t> counts_;
  mutable std::vector<double> volume_weighted_;  // VMD's norm: the sum over frames of V_frame x the frame's counts
  mutable std::uint64_t distances_ = 0;
  mutable double in_flight_volume_ = 0, wait_seconds_ = 0;
  double prepare_seconds_ = 0;
  bool a_is_b_ = false;  // the same atoms in both groups
  std::int64_t frames_ = 0;
  double volume_sum_ = 0;
  double pairs_ = 0;
  std::size_t atoms_ = 0;
  Backend backend_ = Backend::cpu;
  std::string detail_, notice_;
  struct Gpus;  // the CUDA engine (rdf_cuda.cu), when backend_ is cuda
  std::unique_ptr<Gpus> gpus_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace nbkit::analysis
