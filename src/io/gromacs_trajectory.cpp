// XTC and TRR trajectories through libgromacs (nbkit/io/gromacs_trajectory.hpp). GROMACS 2022's
// read_next_frame writes one empty line to stderr when it reaches the end of a file, whatever
// its verbosity: a harmless blank line after an XTC or TRR run.
#include "nbkit/io/gromacs_trajectory.hpp"

#include <fmt/format.h>
#include <gromacs/fileio/oenv.h>
#include <gromacs/fileio/trxio.h>
#include <gromacs/trajectory/trajectoryframe.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numbers>

#include "nbkit/core/error.hpp"

// GROMACS 2022 exports its fatal-error hook from libgromacs but does not install
// gromacs/utility/fatalerror.h; declared here as the library defines it. Without a hook, a
// corrupt frame ends the process from inside GROMACS (gmx_fatal prints a banner and exits).
void gmx_set_error_handler(void (*handler)(const char* title, const std::string& message, const char* file, int line));

namespace nbkit::io {

namespace {

[[noreturn]] void throw_gromacs_error(const char*, const std::string& message, const char*, int) {
  throw Error("GROMACS: " + message);
}

std::once_flag hook_once;

double angle_between(const double* u, const double* v) {
  const double dot = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
  const double nu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  const double nv = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (dot == 0) return 90.0;  // right angles stay exact
  return std::acos(std::clamp(dot / (nu * nv), -1.0, 1.0)) * 180 / std::numbers::pi;
}

}  // namespace

bool gromacs_trajectories_available() { return true; }

struct GromacsTrajectoryReader::State {
  std::string path;
  gmx_output_env_t* oenv = nullptr;
  t_trxstatus* status = nullptr;
  t_trxframe frame{};
  bool pending = false;  // the first frame, read by the constructor, not yet handed out
  std::int64_t atoms = 0, read = 0;
};

GromacsTrajectoryReader::GromacsTrajectoryReader(const std::string& path) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.path = path;
  if (!std::filesystem::is_regular_file(path)) throw Error(path + ": no such file");
  {
    std::ifstream in(path, std::ios::binary);
    unsigned char b[4] = {};
    in.read(reinterpret_cast<char*>(b), 4);
    const std::uint32_t magic = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
    if (!in || (magic != 1995 && magic != 1993))
      throw Error(path + ": not an XTC or TRR trajectory (its first four bytes are not GROMACS's magic number 1995 or 1993)");
  }
  std::call_once(hook_once, [] { gmx_set_error_handler(throw_gromacs_error); });
  output_env_init_default(&s.oenv);
  clear_trxframe(&s.frame, true);
  try {
    if (!read_first_frame(s.oenv, &s.status, path.c_str(), &s.frame, TRX_NEED_X))
      throw Error(path + ": no complete frame with coordinates");
  } catch (const Error& e) {
    if (s.status) close_trx(s.status);
    output_env_done(s.oenv);
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  s.atoms = s.frame.natoms;
  s.pending = true;
}

GromacsTrajectoryReader::~GromacsTrajectoryReader() {
  if (!state_) return;
  if (state_->status) close_trx(state_->status);  // frees the frame's arrays too
  if (state_->oenv) output_env_done(state_->oenv);
}

std::int64_t GromacsTrajectoryReader::atoms() const { return state_->atoms; }

bool GromacsTrajectoryReader::next(DcdFrame& out) {
  State& s = *state_;
  if (!s.pending) {
    try {
      if (!read_next_frame(s.oenv, s.status, &s.frame)) return false;
    } catch (const Error& e) {
      throw Error(fmt::format("{}: frame {}: {}", s.path, s.read + 1, e.what()));
    }
  }
  s.pending = false;
  if (s.frame.natoms != s.atoms || !s.frame.bX)
    throw Error(fmt::format("{}: frame {} has {} atoms{}, the first {}", s.path, s.read + 1, s.frame.natoms,
                            s.frame.bX ? "" : " and no coordinates", s.atoms));
  const auto n = static_cast<std::size_t>(s.atoms);
  out.x.resize(n), out.y.resize(n), out.z.resize(n);
  for (std::size_t i = 0; i < n; ++i) {  // nm to Angstrom in float32, as MDAnalysis converts
    out.x[i] = static_cast<float>(s.frame.x[i][0]) * 10.0f;
    out.y[i] = static_cast<float>(s.frame.x[i][1]) * 10.0f;
    out.z[i] = static_cast<float>(s.frame.x[i][2]) * 10.0f;
  }
  out.cell.reset();
  if (s.frame.bBox) {
    double v[3][3];
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) v[a][b] = 10.0 * static_cast<double>(s.frame.box[a][b]);
    const double length[3] = {std::sqrt(v[0][0] * v[0][0] + v[0][1] * v[0][1] + v[0][2] * v[0][2]),
                              std::sqrt(v[1][0] * v[1][0] + v[1][1] * v[1][1] + v[1][2] * v[1][2]),
                              std::sqrt(v[2][0] * v[2][0] + v[2][1] * v[2][1] + v[2][2] * v[2][2])};
    if (length[0] > 0 && length[1] > 0 && length[2] > 0)  // an all-zero box: no periodic cell
      out.cell = std::array<double, 6>{length[0], angle_between(v[0], v[1]), length[1], angle_between(v[0], v[2]),
                                       angle_between(v[1], v[2]), length[2]};
  }
  ++s.read;
  return true;
}

}  // namespace nbkit::io
