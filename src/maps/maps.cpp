// compute_map: checks the request, picks the backend and the law, runs it, times it.
#include "nbkit/maps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <vector>

#include "maps/kernels.hpp"
#include "maps/frame_combiner.hpp"
#include "maps/ion_map.hpp"
#include "maps/methods.hpp"
#include "maps/msm/msm.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"

namespace nbkit {

MapMethod parse_map_method(const std::string& name) {
  if (name == "direct" || name == "coulomb") return MapMethod::direct;
  if (name == "mdh" || name == "debye-huckel") return MapMethod::mdh;
  if (name == "cutoff") return MapMethod::cutoff;
  if (name == "msm" || name == "multilevel") return MapMethod::msm;
  if (name == "density") return MapMethod::density;
  if (name == "occupancy") return MapMethod::occupancy;
  throw Error("unknown method '" + name + "': expected direct, mdh, cutoff or msm");
}

std::string to_string(MapMethod method) {
  switch (method) {
    case MapMethod::direct: return "direct";
    case MapMethod::mdh: return "mdh";
    case MapMethod::cutoff: return "cutoff";
    case MapMethod::msm: return "msm";
    case MapMethod::density: return "density";
    case MapMethod::occupancy: return "occupancy";
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

bool is_density_method(MapMethod method) { return method == MapMethod::density || method == MapMethod::occupancy; }

bool map_stays_on_device(MapMethod method) {
  return method == MapMethod::direct || method == MapMethod::mdh || method == MapMethod::cutoff;
}

units::PotentialUnit map_unit(const MapOptions& options) {
  if (options.method == MapMethod::occupancy) return units::PotentialUnit::occupancy;
  if (options.method == MapMethod::density)
    return options.density_weight == DensityWeight::charge ? units::PotentialUnit::charge_density
                                                           : units::PotentialUnit::number_density;
  return options.unit;
}

std::uint64_t map_memory_bytes(const Lattice& lattice) {
  return static_cast<std::uint64_t>(lattice.size()) * sizeof(double);
}


namespace maps {

AnyLaw map_law(const MapOptions& options) {
  switch (options.method) {
    case MapMethod::direct: return CoulombLaw{};
    case MapMethod::mdh: return DebyeHuckelLaw{screening_kappa(options)};
    case MapMethod::cutoff:
      return std::visit([](const auto& law) -> AnyLaw { return law; }, maps::cutoff_law_for(options.smoothing, options.cutoff));
    default: throw Error("msm sums no single law: its long range is a grid");
  }
}

double map_prefactor(const MapOptions& options) {
  return units::potential_prefactor(options.unit, options.dielectric, options.temperature);
}

}  // namespace maps

namespace maps {

void check_finite_map(const Lattice& lattice, std::int64_t row_begin, const double* values, std::size_t count,
                      const std::string& what, std::pair<double, double>* span) {
  // One parallel pass over the map (a 494^3 lattice is 1 GB: ~0.1 s on one core); the serial
  // search below runs only when something is wrong.
  std::int64_t bad_values = 0;
  double low = HUGE_VAL, high = -HUGE_VAL;
  const std::int64_t n = static_cast<std::int64_t>(count);
#pragma omp parallel for reduction(+ : bad_values) reduction(min : low) reduction(max : high) schedule(static) \
    if (n > (1 << 20))
  for (std::int64_t p = 0; p < n; ++p) {
    bad_values += !std::isfinite(values[p]);
    low = std::min(low, values[p]), high = std::max(high, values[p]);
  }
  if (span) *span = {low, high};
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

std::pair<double, double> check_finite_rows(const Lattice& lattice, std::int64_t row_begin, std::int64_t row_end,
                                            const double* out, const MapOptions& options) {
  std::pair<double, double> span;
  maps::check_finite_map(lattice, row_begin, out, static_cast<std::size_t>((row_end - row_begin) * lattice.dims[2]),
                         fmt::format("{} map ({})", to_string(options.method), to_string(options.precision)), &span);
  return span;
}

// compute_map_rows, or with a device sink the GPU slabs going there (frame_combiner.hpp).
// Atoms in a GPU's memory are checked where they are read, on that GPU (device_input_cuda.cu).
void map_rows(const maps::MapAtoms& atoms, const Lattice& lattice, const MapOptions& options, std::int64_t row_begin,
              std::int64_t row_end, double* out, maps::DeviceSlabSink* device_sink, MapStats* stats,
              maps::SlabKeep* keep = nullptr) {
  validate(lattice);
  if (atoms.size() == 0) throw Error("no atoms to compute a map from");
  if (atoms.host) validate_atoms(*atoms.host);
  if (row_begin < 0 || row_end > lattice.rows() || row_begin > row_end)
    throw Error(fmt::format("rows [{}, {}) are outside the lattice's {} rows", row_begin, row_end, lattice.rows()));
  std::string notice, threads_notice;
  const int threads = resolve_threads(options.threads, &threads_notice);
  Backend backend = resolve_backend(options.backend, &notice);
  if (!threads_notice.empty()) notice += (notice.empty() ? "" : "; ") + threads_notice;
  maps::check_method_options(options);
  screening_kappa(options);  // validates the dielectric, temperature and ionic strength
  maps::RowRange rows;
  rows.lattice = &lattice;
  rows.row_begin = row_begin;
  rows.row_end = row_end;
  rows.out = out;
  rows.prefactor = units::potential_prefactor(map_unit(options), options.dielectric, options.temperature);
  rows.progress = &options.progress;
  rows.device_sink = device_sink;
  rows.keep = keep;
  if (device_sink && (backend != Backend::cuda || !map_stays_on_device(options.method)))
    throw Error("internal: only GPU maps of the direct, mdh and cutoff methods stay on the device");
  if (atoms.device && (!device_sink || backend != Backend::cuda || !map_stays_on_device(options.method)))
    throw Error("internal: atoms in GPU memory make GPU maps of the direct, mdh and cutoff methods only");

  const auto start = std::chrono::steady_clock::now();
  const maps::MethodRun run = is_density_method(options.method) ? maps::run_density(*atoms.host, options, backend, threads, rows)
                              : options.method == MapMethod::cutoff || options.method == MapMethod::msm
                                  ? maps::run_cutoff_or_msm(atoms, options, backend, threads, rows)
                                  : maps::run_direct(atoms, options, backend, threads, rows);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::pair<double, double> span{0, 0};
  if (out) span = check_finite_rows(lattice, row_begin, row_end, out, options);
  if (options.progress) options.progress(1.0);
  if (stats) {
    stats->backend = backend;
    stats->detail = run.detail;
    stats->notice = notice;
    stats->seconds = seconds;
    stats->kernel_seconds = run.kernel_seconds;
    stats->stage_seconds = run.stage_seconds;
    stats->lattice_points = static_cast<double>(row_end - row_begin) * static_cast<double>(lattice.dims[2]);
    stats->min_value = span.first, stats->max_value = span.second;
    // Direct summation evaluates every atom at every point; cutoff and density sums far fewer.
    stats->evaluations =
        options.method != MapMethod::direct && options.method != MapMethod::mdh
            ? 0.0
            : stats->lattice_points * static_cast<double>(atoms.size());
  }
}

// Zeroes values on every core (a 3 GiB slab takes 0.3 s on one).
void zero_values(double* values, std::int64_t count) {
#pragma omp parallel for schedule(static) if (count > (1 << 22))
  for (std::int64_t p = 0; p < count; ++p) values[p] = 0.0;
}

// Adds one slab's figures to the run's.
void add_slab_stats(const MapStats& slab, bool first, MapStats& total) {
  if (first) {
    total = slab;
    return;
  }
  total.seconds += slab.seconds;
  total.kernel_seconds += slab.kernel_seconds;
  total.lattice_points += slab.lattice_points;
  total.evaluations += slab.evaluations;
  total.min_value = std::min(total.min_value, slab.min_value);
  total.max_value = std::max(total.max_value, slab.max_value);
  for (const auto& [stage, seconds] : slab.stage_seconds)
    for (auto& [name, sum] : total.stage_seconds)
      if (name == stage) sum += seconds;
}

}  // namespace

void stream_map(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, std::int64_t slab_rows,
                const std::function<void(const MapSlab&)>& consume, MapStats* stats, bool overlap) {
  validate(lattice);
  stream_map_rows(atoms, lattice, options, 0, lattice.rows(), slab_rows, consume, stats, overlap);
}

void stream_map_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, std::int64_t row_begin,
                     std::int64_t row_end, std::int64_t slab_rows, const std::function<void(const MapSlab&)>& consume,
                     MapStats* stats, bool overlap) {
  validate(lattice);
  if (slab_rows < 1) throw Error(fmt::format("a slab needs at least one row, got {}", slab_rows));
  if (row_begin < 0 || row_end > lattice.rows() || row_begin > row_end)
    throw Error(fmt::format("rows [{}, {}) are outside the lattice's {} rows", row_begin, row_end, lattice.rows()));
  const std::int64_t rows = row_end - row_begin, nz = lattice.dims[2];
  if (rows == 0) {  // a rank with no rows of its own (more ranks than rows)
    if (stats) *stats = MapStats{}, stats->backend = resolve_backend(options.backend);
    return;
  }
  slab_rows = std::min(slab_rows, rows);
  const std::int64_t slabs = (rows + slab_rows - 1) / slab_rows;
  const int buffers = overlap && slabs > 1 ? 2 : 1;
  const std::uint64_t slab_values = static_cast<std::uint64_t>(slab_rows) * static_cast<std::uint64_t>(nz);
  check_memory(buffers * slab_values * sizeof(double),
               fmt::format("{} slab{} of {} lattice rows", buffers, buffers == 1 ? "" : "s", slab_rows));
  // GPU runs copy each slab into these: page-locked for the run (sized once, never reallocated).
  const bool gpu = resolve_backend(options.backend) == Backend::cuda;
  struct SlabBuffer {
    std::unique_ptr<double[]> values;
    std::unique_ptr<maps::PinnedHostRange> pinned;
    bool zero = true;  // as made: the first slab needs no zeroing
  };
  // Made untouched, zeroed on every core (the pages' first touch: one core took 1.5 s for 6 GB),
  // then locked.
  auto make_buffer = [slab_values, gpu] {
    SlabBuffer buffer;
    buffer.values.reset(new double[static_cast<std::size_t>(slab_values)]);
    zero_values(buffer.values.get(), static_cast<std::int64_t>(slab_values));
    if (gpu) buffer.pinned = std::make_unique<maps::PinnedHostRange>(buffer.values.get(), slab_values * sizeof(double));
    return buffer;
  };
  std::vector<SlabBuffer> slab(static_cast<std::size_t>(buffers));
  slab[0] = make_buffer();
  maps::msm::LongRangeGrid long_range;
  maps::SlabKeep kept;
  kept.long_range = &long_range;
  MapStats total;
  MapOptions per_slab = options;
  std::int64_t current = 0;
  if (options.progress)
    per_slab.progress = [&](double fraction) {
      options.progress((static_cast<double>(current) + fraction) / static_cast<double>(slabs));
    };
  // Declared after the buffers: destroyed (joined) first, so neither thread outlives them. The
  // second buffer is made while the first slab is computed.
  std::future<SlabBuffer> second;
  if (buffers == 2) second = std::async(std::launch::async, make_buffer);
  std::future<void> consuming;
  for (current = 0; current < slabs; ++current) {
    const std::int64_t begin = row_begin + current * slab_rows, end = std::min(row_end, begin + slab_rows);
    if (current == 1 && second.valid()) slab[1] = second.get();
    SlabBuffer& buffer = slab[static_cast<std::size_t>(current % buffers)];
    // The buffer last held slab current - 2, whose consumer finished before slab current - 1's began.
    // Never reallocated (the pinned range): the last slab uses its front.
    const std::int64_t count = (end - begin) * nz;
    if (!buffer.zero) zero_values(buffer.values.get(), count);
    buffer.zero = false;
    MapStats slab_stats;
    map_rows(atoms, lattice, per_slab, begin, end, buffer.values.get(), nullptr, &slab_stats, &kept);
    add_slab_stats(slab_stats, current == 0, total);
    if (consuming.valid()) consuming.get();  // the previous slab written (its exception, if any, thrown here)
    const MapSlab done{begin, end, buffer.values.get()};
    if (buffers == 2)
      consuming = std::async(std::launch::async, [&consume, done] { consume(done); });
    else
      consume(done);
  }
  if (consuming.valid()) consuming.get();
  if (stats) *stats = total;
}

double measure_map_rows_per_second(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                                   std::int64_t sample_rows, std::int64_t max_rows, double min_seconds) {
  validate(lattice);
  const std::int64_t rows = lattice.rows(), nz = lattice.dims[2];
  max_rows = std::clamp<std::int64_t>(max_rows, 1, rows);
  sample_rows = std::clamp<std::int64_t>(sample_rows, 1, max_rows);
  // A row first, in the middle, which pays what a run pays once (binning the atoms, msm's grids,
  // a GPU's start), kept for the sample that follows it: the sample is then timed alone.
  const std::int64_t middle = rows / 2;
  MapOptions quiet = options;
  quiet.progress = nullptr;
  maps::msm::LongRangeGrid long_range;
  maps::SlabKeep kept;
  kept.long_range = &long_range;
  std::vector<double> values(static_cast<std::size_t>(nz));
  map_rows(atoms, lattice, quiet, middle, middle + 1, values.data(), nullptr, nullptr, &kept);
  // The time of [begin, end), twice, the faster kept: the first pass at a new size pays for it
  // once (a GPU's buffers grown: an H100 rank measured 7x slower than its twin on a first pass).
  const auto time_rows = [&](std::int64_t begin, std::int64_t end) {
    values.resize(static_cast<std::size_t>((end - begin) * nz));
    double seconds = HUGE_VAL;
    for (int pass = 0; pass < 2; ++pass) {
      const auto start = std::chrono::steady_clock::now();
      map_rows(atoms, lattice, quiet, begin, end, values.data(), nullptr, nullptr, &kept);
      seconds = std::min(seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return seconds;
  };
  // One row: the call's fixed cost and a row.
  const double one_row = time_rows(middle, middle + 1);
  // A sample too short to time (a small map: microseconds, where a descheduled process reads as
  // a hundred times slower) grows fourfold until its rows beyond the one take `min_seconds`.
  for (;;) {
    const std::int64_t begin = std::max<std::int64_t>(0, middle - sample_rows / 2), end = std::min(rows, begin + sample_rows);
    const double seconds = time_rows(begin, end);
    const bool last = end - begin >= max_rows || end - begin == rows;
    if (seconds - one_row >= min_seconds || last) {
      // The margin when it is measurable (the sample clearly longer than the one row), else the
      // plain rate (a sample no longer than one row: noise).
      if (end - begin > 1 && seconds > 1.25 * one_row)
        return static_cast<double>(end - begin - 1) / (seconds - one_row);
      return static_cast<double>(end - begin) / std::max(seconds, 1e-9);
    }
    sample_rows = std::min(4 * sample_rows, max_rows);
  }
}

std::vector<std::int64_t> split_rows_by_rate(std::int64_t rows, const std::vector<double>& rates) {
  if (rates.empty()) throw Error("internal: no ranks to split rows among");
  double total = 0;
  for (double rate : rates) {
    if (!(rate > 0) || !std::isfinite(rate)) throw Error(fmt::format("internal: a rank's measured rate is {}", rate));
    total += rate;
  }
  std::vector<std::int64_t> bounds(rates.size() + 1, 0);
  double sum = 0;
  for (std::size_t r = 0; r < rates.size(); ++r) {
    sum += rates[r];
    bounds[r + 1] = r + 1 == rates.size() ? rows : std::llround(static_cast<double>(rows) * (sum / total));
    bounds[r + 1] = std::clamp(bounds[r + 1], bounds[r], rows);
  }
  return bounds;
}

std::uint64_t map_method_memory_bytes(const Atoms& atoms, const Lattice& lattice, const MapOptions& options) {
  // Prepared atoms (four doubles), a periodic run's images (as many again, typically), bins.
  std::uint64_t bytes = 96 * static_cast<std::uint64_t>(atoms.size());
  if (options.method != MapMethod::msm) return bytes;
  const double h = options.msm_spacing > 0 ? options.msm_spacing : default_msm_spacing(options.msm_interpolation);
  const int support = maps::msm::basis_support(options.msm_interpolation);
  double points = 1;
  if (options.periodic_box) {
    maps::msm::Parameters parameters;
    parameters.cutoff = options.cutoff, parameters.grid_spacing = h;
    const auto levels = maps::msm::periodic_levels(options.periodic_box->edges(), parameters);
    for (auto n : levels.finest) points *= static_cast<double>(n);
  } else {
    // The finest grid spans the atoms and the lattice (msm.cpp), with a stencil's margin.
    const BoundingBox box = atoms.empty() ? BoundingBox{} : bounding_box(atoms);
    for (int a = 0; a < 3; ++a) {
      const double lo = std::min(lattice.origin[a], atoms.empty() ? lattice.origin[a] : box.lower[a]);
      const double hi = std::max(lattice.origin[a] + lattice.extent()[a], atoms.empty() ? lo : box.upper[a]);
      points *= std::floor((hi - lo) / h) + 2 * support + 1;
    }
  }
  // Every level together is at most 8/7 of the finest grid; charges, potentials and the
  // transfer temporaries hold about 4.6 arrays of it while they are summed (msm.cpp).
  return bytes + static_cast<std::uint64_t>(points * 4.6 * sizeof(double));
}

void compute_map_rows(const Atoms& atoms, const Lattice& lattice, const MapOptions& options,
                      std::int64_t row_begin, std::int64_t row_end, double* out, MapStats* stats) {
  map_rows(atoms, lattice, options, row_begin, row_end, out, nullptr, stats);
}

namespace maps {

void compute_map_on_devices(const MapAtoms& atoms, const Lattice& lattice, const MapOptions& options,
                            DeviceSlabSink* sink, MapStats* stats) {
  map_rows(atoms, lattice, options, 0, lattice.rows(), nullptr, sink, stats);
}

}  // namespace maps

Map compute_map(const Atoms& atoms, const Lattice& lattice, const MapOptions& options, MapStats* stats) {
  validate(lattice);
  check_memory(map_memory_bytes(lattice),
               fmt::format("a {}x{}x{} lattice ({} points)", lattice.dims[0], lattice.dims[1], lattice.dims[2],
                           lattice.size()));
  // The whole call is timed: allocating and zeroing the values is a tenth of a fast GPU map's time.
  const auto start = std::chrono::steady_clock::now();
  Map map;
  map.lattice = lattice;
  map.unit = map_unit(options);
  map.values.resize(static_cast<std::size_t>(lattice.size()));
  compute_map_rows(atoms, lattice, options, 0, lattice.rows(), map.values.data(), stats);
  if (stats) stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return map;
}

}  // namespace nbkit
