// Each map method with its checks and backends (methods.hpp).
#include "maps/methods.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.hpp"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::maps {

CutoffMapLaw cutoff_law_for(Smoothing smoothing, double cutoff) {
  switch (smoothing) {
    case Smoothing::none: return CutoffLaw<Smoothing::none>{cutoff};
    case Smoothing::cutcp: return CutoffLaw<Smoothing::cutcp>{cutoff};
    case Smoothing::taylor1: return CutoffLaw<Smoothing::taylor1>{cutoff};
    case Smoothing::taylor2: return CutoffLaw<Smoothing::taylor2>{cutoff};
    case Smoothing::taylor3: return CutoffLaw<Smoothing::taylor3>{cutoff};
  }
  throw Error("unknown smoothing");
}

namespace {

// "NVIDIA H200 x2, float32"
std::string gpu_detail(const CudaRunInfo& info, bool double_precision) {
  return fmt::format("{}{}, {}", info.device_names.empty() ? "GPU" : info.device_names.front(),
                     info.devices.size() > 1 ? fmt::format(" x{}", info.devices.size()) : "",
                     double_precision ? "float64" : "float32");
}

// "AVX3 SIMD, bins, float32, 2 threads"
std::string cpu_detail(const char* what, bool double_precision, int threads) {
  return fmt::format("{} SIMD, {}{}, {} thread{}", direct_cpu_target(), what, double_precision ? "float64" : "float32",
                     threads, threads == 1 ? "" : "s");
}

// msm's parameters; with the GPU backend its grids go to the first GPU used.
msm::Parameters msm_parameters(const MapOptions& options, Backend backend) {
  msm::Parameters parameters;
  parameters.cutoff = options.cutoff;
  parameters.grid_spacing = options.msm_spacing > 0 ? options.msm_spacing : default_msm_spacing(options.msm_interpolation);
  parameters.interpolation = options.msm_interpolation;
  parameters.splitting = options.msm_splitting;
  if (backend == Backend::cuda) parameters.gpu = resolve_gpu(options.gpus).index;
  return parameters;
}

std::vector<std::pair<std::string, double>> msm_stage_seconds(const msm::Stages& stages) {
  return {{"anterpolation", stages.anterpolation}, {"restriction", stages.restriction},
          {"lattice cutoff", stages.lattice_cutoff}, {"top level", stages.top_level},
          {"prolongation", stages.prolongation},   {"interpolation", stages.interpolation}};
}

// msm with the GPU backend and no periodic box: every grid stage on the first GPU, on a thread
// of its own so that they overlap the short range's start (its atoms' upload and binning, its
// first slabs), and the short range on the GPUs with the long range's interpolation added to
// each slab there, so the map is copied to the host once (the grids and the interpolation on the
// host's cores took 0.2 of a 0.35 s map of a million atoms on an H100 machine).
MethodRun run_msm_on_gpu(const Atoms& atoms, const MapOptions& options, const CutoffMapLaw& cutoff_law,
                         bool double_precision, const RowRange& rows) {
  const msm::Parameters parameters = msm_parameters(options, Backend::cuda);
  msm::Stages stages;
  msm::LongRangeGrid* kept = rows.keep ? rows.keep->long_range : nullptr;
  const PreparedAtoms prepared = prepare_atoms(atoms, *rows.lattice, cutoff_law);
  const auto start = std::chrono::steady_clock::now();
  double grids_seconds = 0;  // the grid thread's wall time, overlapped with the short range
  // Declared after what it reads: its destructor waits for the thread (std::async's future).
  const std::shared_future<msm::InterpolationPlan> plan =
      std::async(std::launch::async, [&] {
        msm::InterpolationPlan made = msm::long_range_on_gpu(prepared, parameters, rows, &stages, kept);
        grids_seconds = seconds_since(start);
        return made;
      }).share();
  msm::GpuInterpolation interpolation(plan);
  RowRange with_long_range = rows;
  with_long_range.slab_term = &interpolation;
  CudaRunInfo info;
  cutoff_cuda(atoms, std::nullopt, cutoff_law, with_long_range, double_precision, options.gpus, &info);
  interpolation.wait();
  msm::remove_singular_long_range(prepared, parameters, rows);
  MethodRun run;
  run.kernel_seconds = info.kernel_seconds;
  run.stage_seconds.emplace_back("short range", seconds_since(start));
  stages.interpolation = interpolation.kernel_seconds();
  const auto long_range = msm_stage_seconds(stages);
  run.stage_seconds.insert(run.stage_seconds.end(), long_range.begin(), long_range.end());
  run.stage_seconds.emplace_back("grids (beside the short range)", grids_seconds);
  run.detail = gpu_detail(info, double_precision) +
               fmt::format("; long range: {} levels, {} {} A grid, {} splitting, float64, every stage on GPU {} (the "
                           "grids beside the short range's start, the interpolation added where it is summed)",
                           stages.levels, to_string(options.msm_interpolation), parameters.grid_spacing,
                           to_string(options.msm_splitting), parameters.gpu);
  return run;
}

// msm's long range on the multilevel grids, added to the short range's rows on the host.
void add_msm_long_range(const Atoms& atoms, const PreparedAtoms& prepared,
                        const CutoffMapLaw& cutoff_law, const MapOptions& options, Backend backend, int threads,
                        const RowRange& rows, MethodRun& run) {
  // With the GPU backend (periodic boxes) the lattice-cutoff sums, the long range's largest
  // stage, run on the first GPU used.
  const msm::Parameters parameters = msm_parameters(options, backend);
  msm::Stages stages;
  msm::LongRangeGrid* kept = rows.keep ? rows.keep->long_range : nullptr;
  if (options.periodic_box)
    msm::add_long_range_periodic(prepare_atoms(atoms, *rows.lattice, cutoff_law), prepared, options.periodic_box->edges(),
                                 parameters, rows, threads, &stages, kept);
  else
    msm::add_long_range(prepared, parameters, rows, threads, &stages, kept);
  const auto long_range = msm_stage_seconds(stages);
  run.stage_seconds.insert(run.stage_seconds.end(), long_range.begin(), long_range.end());
  run.detail += fmt::format("; long range: {} levels, {} {} A grid, {} splitting, float64, {} threads{}", stages.levels,
                            to_string(options.msm_interpolation), parameters.grid_spacing,
                            to_string(options.msm_splitting), threads,
                            parameters.gpu >= 0 ? fmt::format(", lattice cutoff on GPU {}", parameters.gpu) : "");
}

}  // namespace

void check_method_options(const MapOptions& options) {
  if (is_density_method(options.method)) {
    if (!(options.radius_scale > 0) || !std::isfinite(options.radius_scale))
      throw Error(fmt::format("the radius scale must be a positive number, got {}", options.radius_scale));
    if (!(options.density_sigma >= 0) || !std::isfinite(options.density_sigma))
      throw Error(fmt::format("the density's sigma must be zero (the radii) or a positive number of Angstrom, got {}",
                              options.density_sigma));
    if (options.method == MapMethod::occupancy && options.density_sigma > 0)
      throw Error("a sigma applies to the density method; occupancy's spheres are the radii x the radius scale");
  }
  if (options.periodic_box && !options.periodic_box->starts_at_origin())
    throw Error("the maps' periodic cell starts at the origin, as a CRYST1 record places it: give its edges "
                "(PeriodicBox::from_edges)");
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
  } else if (options.periodic_box && is_density_method(options.method)) {
    throw Error(fmt::format("the {} method takes no periodic box: map the atoms as they are (wrap them first for a "
                            "density of the cell)",
                            to_string(options.method)));
  } else if (options.periodic_box) {
    throw Error(fmt::format("a periodic box needs the cutoff method (--method cutoff): the {} sum over all periodic "
                            "images does not converge absolutely",
                            to_string(options.method)));
  }
}

MethodRun run_direct(const MapAtoms& input, const MapOptions& options, Backend backend, int threads,
                     const RowRange& rows) {
  const MapLaw law = options.method == MapMethod::direct ? MapLaw{CoulombLaw{}}
                                                         : MapLaw{DebyeHuckelLaw{screening_kappa(options)}};
  const bool double_precision = options.precision == Precision::double_;
  MethodRun run;
  if (backend == Backend::cuda) {  // host atoms or GPU arrays: prepared and split on the GPU
    CudaRunInfo info;
    direct_cuda(input, law, rows, double_precision, options.gpus, &info);
    run.kernel_seconds = info.kernel_seconds;
    run.detail = gpu_detail(info, double_precision) + (input.device ? ", atoms from GPU arrays" : "");
    return run;
  }
  const Atoms& atoms = *input.host;  // maps.cpp sends GPU arrays to the GPU backend only
  if (backend == Backend::reference) {
    direct_reference(atoms, law, rows);
    run.detail = "float64 reference, 1 thread";
  } else {
    direct_cpu(prepare_atoms(atoms, *rows.lattice, law), law, rows, double_precision, threads);
    run.detail = cpu_detail("", double_precision, threads);
  }
  return run;
}

MethodRun run_cutoff_or_msm(const MapAtoms& input, const MapOptions& options, Backend backend, int threads,
                            const RowRange& rows) {
  const auto start = std::chrono::steady_clock::now();
  const bool double_precision = options.precision == Precision::double_;
  // msm: the short-range part is the cutoff sum with the splitting's smoothing.
  const bool msm = options.method == MapMethod::msm;
  const CutoffMapLaw cutoff_law = cutoff_law_for(msm ? options.msm_splitting : options.smoothing, options.cutoff);
  if (backend == Backend::cuda && msm && !options.periodic_box)
    return run_msm_on_gpu(*input.host, options, cutoff_law, double_precision, rows);  // msm: host atoms only
  MethodRun run;
  if (backend == Backend::cuda) {  // host atoms or GPU arrays: imaged, prepared and binned on the GPU
    CudaRunInfo info;
    const std::optional<Vec3> box =
        options.periodic_box ? std::optional<Vec3>(options.periodic_box->edges()) : std::nullopt;
    cutoff_cuda(input, box, cutoff_law, rows, double_precision, options.gpus, &info);
    run.kernel_seconds = info.kernel_seconds;
    run.detail = gpu_detail(info, double_precision) + (input.device ? ", atoms from GPU arrays" : "");
    if (!msm) return run;
  }
  const Atoms& atoms = *input.host;  // maps.cpp sends GPU arrays to the GPU backend's cutoff sums only
  Atoms images;  // periodic box: the atoms' images within the cutoff of the lattice
  if (options.periodic_box) images = periodic_images(atoms, options.periodic_box->edges(), *rows.lattice, options.cutoff);
  const Atoms& sources = options.periodic_box ? images : atoms;
  // Prepared once: the CPU's short range and msm's grids (with a periodic box, msm
  // anterpolates the atoms themselves and takes the images for the points they sit on).
  const PreparedAtoms prepared = prepare_atoms(sources, *rows.lattice, cutoff_law);
  if (backend == Backend::reference) {
    direct_reference(sources, cutoff_law, rows);
    run.detail = "float64 reference, 1 thread";
  } else if (backend == Backend::cpu) {
    cutoff_cpu(prepared, cutoff_law, rows, double_precision, threads, options.bin_size);
    run.detail = cpu_detail("bins, ", double_precision, threads);
  }
  if (msm) {
    run.stage_seconds.emplace_back("short range", seconds_since(start));
    add_msm_long_range(atoms, prepared, cutoff_law, options, backend, threads, rows, run);
  }
  return run;
}

}  // namespace nbkit::maps
