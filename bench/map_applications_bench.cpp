// Benchmark of what users do with maps: ions placed per second around a real protein
// (nbkit ionize), and frames per second of trajectory-averaged maps (nbkit map
// --trajectory) for a 10k-atom and a 100k-atom system, with the frames read from a DCD.
//   bench_map_applications [--json FILE] [--quick]
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "bench_args.hpp"
#include "maps/frame_combiner.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/io/dcd.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/ionize.hpp"
#include "nbkit/trajectory.hpp"
#include "test_support.hpp"

namespace {

nbkit::Atoms copies(const nbkit::Atoms& protein, int nx, int ny, int nz) {
  const nbkit::BoundingBox box = nbkit::bounding_box(protein);
  const nbkit::Vec3 pitch = box.upper - box.lower + nbkit::Vec3{5, 5, 5};
  nbkit::Atoms out;
  for (int a = 0; a < nx; ++a)
    for (int b = 0; b < ny; ++b)
      for (int c = 0; c < nz; ++c)
        for (std::size_t n = 0; n < protein.size(); ++n)
          out.push_back(protein.position(n) + nbkit::Vec3{a * pitch.x, b * pitch.y, c * pitch.z}, protein.charge[n],
                        protein.radius[n]);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = nbkit::bench::parse_bench_args(argc, argv, "bench_map_applications");
  if (!parsed) return 2;
  std::string why;
  const bool gpu = !nbkit::list_gpus(&why).empty();
  // The GPU where there is one; the full run adds the CPU (all cores) beside it.
  std::vector<nbkit::Backend> backends{gpu ? nbkit::Backend::cuda : nbkit::Backend::cpu};
  if (gpu && !parsed->quick) backends.push_back(nbkit::Backend::cpu);
  nlohmann::json results;
  results["ionize"] = nlohmann::json::array();
  results["trajectory"] = nlohmann::json::array();
  const nbkit::Atoms protein = nbkit::io::read_pqr(nbkit::test::data_file("1a63.pqr"));

  // Ions: 100 around 1a63 on a 1 A lattice, 12 A padding.
  for (const nbkit::Backend backend : backends) {
    nbkit::IonizeOptions o;
    o.map.backend = backend;
    o.map.dielectric = 78.54;
    o.cations = 50;
    o.anions = 50;
    const nbkit::Lattice lattice = nbkit::lattice_around(protein, 1.0, 14.0);
    const nbkit::IonizeResult r = nbkit::place_ions(protein, lattice, o);
    const double placing = r.seconds - r.initial_map_stats.seconds;
    fmt::print("ionize: 100 ions around 1a63 ({} atoms), {}x{}x{} lattice at 1 A, {}: initial map {:.3f} s, "
               "{:.1f} ions/s after it, {:.3f} s in all\n",
               protein.size(), lattice.dims[0], lattice.dims[1], lattice.dims[2], r.initial_map_stats.detail,
               r.initial_map_stats.seconds, 100 / placing, r.seconds);
    results["ionize"].push_back({{"ions", 100},
                         {"lattice", lattice.dims},
                         {"backend", nbkit::to_string(backend)},
                         {"initial_map_seconds", r.initial_map_stats.seconds},
                         {"ions_per_second", 100 / placing},
                         {"seconds", r.seconds}});
  }

  // Trajectories: copies of 1a63 jiggled by 0.3 A per frame, written to a DCD and averaged.
  struct System {
    const char* name;
    int nx, ny, nz;
    nbkit::MapMethod method;
    int frames;
  };
  const std::vector<System> systems = {
      {"10k atoms", 5, 1, 1, nbkit::MapMethod::direct, parsed->quick ? 5 : 100},
      {"100k atoms", 4, 4, 3, nbkit::MapMethod::msm, parsed->quick ? 3 : 100},
      {"100k atoms", 4, 4, 3, nbkit::MapMethod::cutoff, parsed->quick ? 3 : 100}};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "nbkit-bench-trajectory";
  std::filesystem::create_directories(dir);
  for (const System& s : systems) {
    const nbkit::Atoms atoms = copies(protein, s.nx, s.ny, s.nz);
    std::mt19937 rng(7);
    std::normal_distribution<float> jiggle(0.0f, 0.3f);
    std::vector<nbkit::io::DcdFrame> frames(static_cast<std::size_t>(s.frames));
    for (auto& f : frames)
      for (std::size_t n = 0; n < atoms.size(); ++n) {
        f.x.push_back(static_cast<float>(atoms.x[n]) + jiggle(rng));
        f.y.push_back(static_cast<float>(atoms.y[n]) + jiggle(rng));
        f.z.push_back(static_cast<float>(atoms.z[n]) + jiggle(rng));
      }
    const std::string path = (dir / "t.dcd").string();
    nbkit::io::write_dcd(path, frames);
    frames.clear();
    const nbkit::Lattice lattice = nbkit::lattice_around(atoms, 1.0, 5.0);
    for (const nbkit::Backend backend : backends) {
      // On a GPU, direct/mdh/cutoff maps are combined on the device; the same run with every
      // frame's map copied to the host and combined there shows what that saves.
      const bool gpu_resident = backend == nbkit::Backend::cuda && s.method != nbkit::MapMethod::msm;
      for (const bool on_device : gpu_resident ? std::vector<bool>{true, false} : std::vector<bool>{false}) {
        nbkit::MapOptions o;
        o.method = s.method;
        o.backend = backend;
        nbkit::io::DcdReader reader(path);
        nbkit::io::DcdFrame frame;
        nbkit::TrajectoryMapStats stats;
        nbkit::maps::combine_frame_maps(
            atoms, lattice, o, nbkit::Combine::avg,
            [&](nbkit::Atoms& a) {
              if (!reader.next(frame)) return false;
              for (std::size_t n = 0; n < a.size(); ++n) a.x[n] = frame.x[n], a.y[n] = frame.y[n], a.z[n] = frame.z[n];
              return true;
            },
            {}, &stats, on_device);
        const char* combined = stats.combined_on_device ? "combined on the GPU" : "combined on the host";
        fmt::print("trajectory: {} ({}), {} frames, {}x{}x{} lattice at 1 A, {} maps, {}, {}: {:.2f} frames/s ({:.2f} s)\n",
                   s.name, atoms.size(), stats.frames, lattice.dims[0], lattice.dims[1], lattice.dims[2],
                   nbkit::to_string(s.method), stats.last_frame.detail, combined, stats.frames / stats.seconds,
                   stats.seconds);
        results["trajectory"].push_back({{"system", s.name},
                                         {"atoms", atoms.size()},
                                         {"frames", stats.frames},
                                         {"lattice", lattice.dims},
                                         {"method", nbkit::to_string(s.method)},
                                         {"backend", nbkit::to_string(backend)},
                                         {"combined_on_device", stats.combined_on_device},
                                         {"frames_per_second", stats.frames / stats.seconds}});
      }
    }
  }
  std::filesystem::remove_all(dir);
  if (!parsed->json_path.empty()) {
    std::ofstream(parsed->json_path) << nlohmann::json{{"benchmark", "map_applications"}, {"results", results}}.dump(2) << "\n";
    fmt::print("wrote {}\n", parsed->json_path);
  }
  return 0;
}
