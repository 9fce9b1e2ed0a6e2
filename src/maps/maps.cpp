// compute_map: checks the request, picks the backend and the law, runs it, times it.
#include "nbkit/maps.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "maps/direct/direct.hpp"
#include "maps/frame_combiner.hpp"
#include "maps/ion_map.hpp"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit {

MapMethod parse_map_method(const std::string& name) {
  if (name == "direct" || name == "coulomb") return MapMethod::direct;
  if (name == "mdh" || name == "debye-huckel") return MapMethod::mdh;
  if (name == "cutoff") return MapMethod::cutoff;
  if (name == "msm" || name == "multilevel") return MapMethod::msm;
  throw Error("unknown method '" + name + "': expected direct, mdh, cutoff or msm");
}

std::string to_string(MapMethod method) {
  switch (method) {
    case MapMethod::direct: return "direct";
    case MapMethod::mdh: return "mdh";
    case MapMethod::cutoff: return "cutoff";
    case MapMethod::msm: return "msm";
  }
  return "?";
}

MsmInterpolation parse_msm_interpolation(const std::string& name) {
  if (name == "cubic") return MsmInterpolation::cubic;
  if (name == "quintic") return MsmInterpolation::quintic;
  throw Error("unknown MSM interpolation '" + name + "': expected cubic or quintic");
}

std::string to_string(MsmInterpolation interpolation) {
  return interpolation == MsmInterpolation::cubic ? "cubic" : "quintic";
}

double default_msm_spacing(MsmInterpolation interpolation) {
  // The accuracy table in docs/methods.md: these keep the relative RMS error of a protein's
  // map near 1e-3 with the default 12 A cutoff.
  return interpolation == MsmInterpolation::cubic ? 2.0 : 2.0;
}

Smoothing parse_smoothing(const std::string& name) {
  if (name == "none") return Smoothing::none;
  if (name == "cutcp") return Smoothing::cutcp;
  if (name == "taylor1" || name == "c1") return Smoothing::taylor1;
  if (name == "taylor2" || name == "c2") return Smoothing::taylor2;
  if (name == "taylor3" || name == "c3") return Smoothing::taylor3;
  throw Error("unknown smoothing '" + name + "': expected none, cutcp, taylor1, taylor2 or taylor3");
}

std::string to_string(Smoothing smoothing) {
  switch (smoothing) {
    case Smoothing::none: return "none";
    case Smoothing::cutcp: return "cutcp";
    case Smoothing::taylor1: return "taylor1";
    case Smoothing::taylor2: return "taylor2";
    case Smoothing::taylor3: return "taylor3";
  }
  return "?";
}

double screening_kappa(const MapOptions& options) {
  if (options.method != MapMethod::mdh) return 0;
  return units::debye_kappa(options.ionic_strength, options.dielectric, options.temperature);
}

std::uint64_t map_memory_bytes(const Lattice& lattice) {
  return static_cast<std::uint64_t>(lattice.size()) * sizeof(double);
}

namespace {

maps::CutoffMapLaw cutoff_law_for(Smoothing smoothing, double cutoff) {
  switch (smoothing) {
    case Smoothing::none: return maps::CutoffLaw<Smoothing::none>{cutoff};
    case Smoothing::cutcp: return maps::CutoffLaw<Smoothing::cutcp>{cutoff};
    case Smoothing::taylor1: return maps::CutoffLaw<Smoothing::taylor1>{cutoff};
    case Smoothing::taylor2: return maps::CutoffLaw<Smoothing::taylor2>{cutoff};
    case Smoothing::taylor3: return maps::CutoffLaw<Smoothing::taylor3>{cutoff};
  }
  throw Error("unknown smoothing");
}

}  // namespace

namespace maps {

AnyLaw map_law(const MapOptions& options) {
  switch (options.method) {
    case MapMethod::direct: return CoulombLaw{};
    case MapMethod::mdh: return DebyeHuckelLaw{screening_kappa(options)};
    case MapMethod::cutoff:
      return std::visit([](const auto& law) -> AnyLaw { return law; }, cutoff_law_for(options.smoothing, options.cutoff));
    default: throw Error("msm sums no single law: its long range is a grid");
  }
}

double map_prefactor(const MapOptions& options) {
  return units::potential_prefactor(options.unit, options.dielectric, options.temperature);
}

}  // namespace maps

namespace {

// "NVIDIA H200 x2, float32"
std::string gpu_detail(const maps::CudaRunInfo& info, bool double_precision) {
  return fmt::format("{}{}, {}", info.device_names.empty() ? "GPU" : info.device_names.front(),
                     info.devices.size() > 1 ? fmt::format(" x{}", info.devices.size()) : "",
                     double_precision ? "float64" : "float32");
}

// "AVX3 SIMD, bins, float32, 2 threads"
std::string cpu_detail(const char* what, bool double_precision, int threads) {
  return fmt::format("{} SIMD, {}{}, {} thread{}", maps::direct_cpu_target(), what,
                     double_precision ? "float64" : "float32", threads, threads == 1 ? "" : "s");
}

}  // namespace

namespace maps {

void check_finite_map(const Lattice& lattice, std::int64_t row_begin, const double* values, std::size_t count,
                      const std::string& what) {
  // One parallel pass over the map (a 494^3 lattice is 1 GB: ~0.1 s on one core); the serial
  // search below runs only when something is wrong.
  std::int64_t bad_values = 0;
  const std::int64_t n = static_cast<std::int64_t>(count);
#pragma omp parallel for reduction(+ : bad_values) schedule(static) if (n > (1 << 20))
  for (std::int64_t p = 0; p < n; ++p) bad_values += !std::isfinite(values[p]);
  if (bad_values == 0) return;
  for (std::size_t p = 0; p < count; ++p) {
    if (std::isfinite(values[p])) continue;
    const std::int64_t row = row_begin + static_cast<std::int64_t>(p) / lattice.dims[2];
    const std::int64_t i = row / lattice.dims[1], j = row % lattice.dims[1],
                       k = static_cast<std::int64_t>(p) % lattice.dims[2];
    std::size_t bad = 0;
    for (std::size_t q = p; q < count; ++q) bad += !std::isfinite(values[q]);
    throw Error(fmt::format("the {} is {} at lattice point ({}, {}, {}) ({:.4g}, {:.4g}, {:.4g} A){}: the sums "
                            "overflowed; nothing was written",
                            what, values[p], i, j, k, lattice.origin.x + lattice.spacing * static_cast<double>(i),
                            lattice.origin.y + lattice.spacing * static_cast<double>(j),
                            lattice.origin.z + lattice.spacing * static_cast<double>(k),
                            bad > 1 ? fmt::format(" and {} more points", bad - 1) : ""));
  }
}

}  // namespace maps

namespace {

void check_finite_rows(const Lattice& lattice, std::int64_t row_begin, std::int64_t row_end, const double* out,
                       const MapOptions& options) {
  maps::check_finite_map(lattice, row_begin, out,
                         static_cast<std::size_t>((row_end - row_begin) * lattice.dims[2]),
                         fmt::format("{} map ({})", to_string(options.method), to_string(options.precision)));
}

// compute_map_rows, or with a device sink the GPU slabs going there (frame_combiner.hpp).
void map_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, std::int64_t row_begin,
              std::int64_t row_end, double* out, maps::DeviceSlabSink* device_sink, MapStats* stats) {
  validate(lattice);
  if (atoms.empty()) throw Error("no atoms to compute a map from");
  validate_atoms(atoms);
  if (row_begin < 0 || row_end > lattice.rows() || row_begin > row_end)
    throw Error(fmt::format("rows [{}, {}) are outside the lattice's {} rows", row_begin, row_end, lattice.rows()));
  std::string notice, threads_notice;
  const int threads = resolve_threads(options.threads, &threads_notice);
  Backend backend = resolve_backend(options.backend, &notice);
  if (!threads_notice.empty()) notice += (notice.empty() ? "" : "; ") + threads_notice;
  if (options.method == MapMethod::cutoff || options.method == MapMethod::msm) {
    if (!(options.cutoff > 0) || !std::isfinite(options.cutoff))
      throw Error(fmt::format("cutoff must be a positive number of Angstrom, got {}", options.cutoff));
    if (!(options.bin_size >= 0) || !std::isfinite(options.bin_size))
      throw Error(fmt::format("bin size must be zero (automatic) or a positive number of Angstrom, got {}",
                              options.bin_size));
    if (options.method == MapMethod::msm) {
      if (options.msm_splitting != Smoothing::taylor1 && options.msm_splitting != Smoothing::taylor2 &&
          options.msm_splitting != Smoothing::taylor3)
        throw Error("the multilevel splitting must be taylor1, taylor2 or taylor3, got " + to_string(options.msm_splitting));
      if (!(options.msm_spacing >= 0) || !std::isfinite(options.msm_spacing))
        throw Error(fmt::format("MSM grid spacing must be zero (the default) or positive, got {}", options.msm_spacing));
    }
  } else if (options.periodic_box) {
    throw Error(fmt::format("a periodic box needs the cutoff method (--method cutoff): the {} sum over all periodic "
                            "images does not converge absolutely",
                            to_string(options.method)));
  }
  const double kappa = screening_kappa(options);
  const maps::MapLaw law = options.method == MapMethod::direct ? maps::MapLaw{maps::CoulombLaw{}}
                                                               : maps::MapLaw{maps::DebyeHuckelLaw{kappa}};
  maps::RowRange rows;
  rows.lattice = &lattice;
  rows.row_begin = row_begin;
  rows.row_end = row_end;
  rows.out = out;
  rows.prefactor = units::potential_prefactor(options.unit, options.dielectric, options.temperature);
  rows.progress = &options.progress;
  rows.device_sink = device_sink;
  if (device_sink && (backend != Backend::cuda || options.method == MapMethod::msm))
    throw Error("internal: only GPU maps of the direct, mdh and cutoff methods stay on the device");

  const auto start = std::chrono::steady_clock::now();
  std::string detail;
  double kernel_seconds = 0;
  const bool double_precision = options.precision == Precision::double_;
  std::vector<std::pair<std::string, double>> stage_seconds;
  if (options.method == MapMethod::cutoff || options.method == MapMethod::msm) {
    // msm: the short-range part is the cutoff sum with the splitting's smoothing.
    const bool msm = options.method == MapMethod::msm;
    const maps::CutoffMapLaw cutoff_law = cutoff_law_for(msm ? options.msm_splitting : options.smoothing, options.cutoff);
    Atoms images;  // periodic box: the atoms' images within the cutoff of the lattice
    if (options.periodic_box) images = periodic_images(atoms, *options.periodic_box, lattice, options.cutoff);
    const Atoms& sources = options.periodic_box ? images : atoms;
    // Prepared once: the fast paths' short range and msm's grids (with a periodic box, msm
    // anterpolates the atoms themselves and takes the images for the points they sit on).
    const maps::PreparedAtoms prepared = maps::prepare_atoms(sources, lattice, cutoff_law);
    if (backend == Backend::reference) {
      maps::direct_reference(sources, cutoff_law, rows);
      detail = "float64 reference, 1 thread";
    } else if (backend == Backend::cuda) {
      maps::CudaRunInfo info;
      maps::cutoff_cuda(prepared, cutoff_law, rows, double_precision, options.gpus, &info);
      kernel_seconds = info.kernel_seconds;
      detail = gpu_detail(info, double_precision);
    } else {
      maps::cutoff_cpu(prepared, cutoff_law, rows, double_precision, threads, options.bin_size);
      detail = cpu_detail("bins, ", double_precision, threads);
    }
    if (msm) {
      const auto long_start = std::chrono::steady_clock::now();
      stage_seconds.emplace_back("short range", std::chrono::duration<double>(long_start - start).count());
      maps::msm::Parameters parameters;
      parameters.cutoff = options.cutoff;
      parameters.grid_spacing = options.msm_spacing > 0 ? options.msm_spacing : default_msm_spacing(options.msm_interpolation);
      parameters.interpolation = options.msm_interpolation;
      parameters.splitting = options.msm_splitting;
      // With the GPU backend the lattice-cutoff sums (the long range's largest stage) run on the
      // first GPU used.
      if (backend == Backend::cuda) parameters.gpu = resolve_gpu(options.gpus).index;
      maps::msm::Stages stages;
      if (options.periodic_box)
        maps::msm::add_long_range_periodic(maps::prepare_atoms(atoms, lattice, cutoff_law), prepared, *options.periodic_box,
                                           parameters, rows, threads, &stages);
      else
        maps::msm::add_long_range(prepared, parameters, rows, threads, &stages);
      stage_seconds.insert(stage_seconds.end(), {{"anterpolation", stages.anterpolation},
                                                 {"restriction", stages.restriction},
                                                 {"lattice cutoff", stages.lattice_cutoff},
                                                 {"top level", stages.top_level},
                                                 {"prolongation", stages.prolongation},
                                                 {"interpolation", stages.interpolation}});
      detail += fmt::format("; long range: {} levels, {} {} A grid, {} splitting, float64, {} threads{}",
                            stages.levels, to_string(options.msm_interpolation), parameters.grid_spacing,
                            to_string(options.msm_splitting), threads,
                            parameters.gpu >= 0 ? fmt::format(", lattice cutoff on GPU {}", parameters.gpu) : "");
    }
  } else if (backend == Backend::reference) {
    maps::direct_reference(atoms, law, rows);
    detail = "float64 reference, 1 thread";
  } else if (backend == Backend::cuda) {
    const maps::PreparedAtoms prepared = maps::prepare_atoms(atoms, lattice, law);
    maps::CudaRunInfo info;
    maps::direct_cuda(prepared, law, rows, double_precision, options.gpus, &info);
    kernel_seconds = info.kernel_seconds;
    detail = gpu_detail(info, double_precision);
  } else {
    const maps::PreparedAtoms prepared = maps::prepare_atoms(atoms, lattice, law);
    maps::direct_cpu(prepared, law, rows, double_precision, threads);
    detail = cpu_detail("", double_precision, threads);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (out) check_finite_rows(lattice, row_begin, row_end, out, options);
  if (options.progress) options.progress(1.0);
  if (stats) {
    stats->backend = backend;
    stats->detail = detail;
    stats->notice = notice;
    stats->seconds = seconds;
    stats->kernel_seconds = kernel_seconds;
    stats->stage_seconds = stage_seconds;
    stats->lattice_points = static_cast<double>(row_end - row_begin) * static_cast<double>(lattice.dims[2]);
    // Direct summation evaluates every atom at every point; cutoff summation far fewer.
    stats->evaluations =
        options.method == MapMethod::cutoff || options.method == MapMethod::msm
            ? 0.0
            : stats->lattice_points * static_cast<double>(atoms.size());
  }
}

}  // namespace

void compute_map_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                      std::int64_t row_begin, std::int64_t row_end, double* out, MapStats* stats) {
  map_rows(atoms, lattice, options, row_begin, row_end, out, nullptr, stats);
}

namespace maps {

void compute_map_on_devices(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                            DeviceSlabSink* sink, MapStats* stats) {
  map_rows(atoms, lattice, options, 0, lattice.rows(), nullptr, sink, stats);
}

}  // namespace maps

Map compute_map(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, MapStats* stats) {
  validate(lattice);
  check_memory(map_memory_bytes(lattice),
               fmt::format("a {}x{}x{} lattice ({} points)", lattice.dims[0], lattice.dims[1], lattice.dims[2],
                           lattice.size()));
  Map map;
  map.lattice = lattice;
  map.unit = options.unit;
  map.values.resize(static_cast<std::size_t>(lattice.size()));
  compute_map_rows(atoms, lattice, options, 0, lattice.rows(), map.values.data(), stats);
  return map;
}

}  // namespace nbkit
