#pragma once
// Smooth particle-mesh Ewald's reciprocal sum on one GPU (cuda/pme.cu), in float64: the CPU's
// method (md/pme.hpp) with cuFFT's real-to-complex transforms. Deterministic: charges are spread
// into a mesh of 64-bit fixed-point integers by atomic adds (integer addition is associative,
// so the order the atoms arrive in changes no bit; OpenMM's CUDA platform does the same), the
// energy and virial are reduced by fixed trees, and each atom gathers its own force; cuFFT's
// plans are fixed for the mesh, and the tests check that two evaluations give the same bits.
// Internal to the CUDA build (the molecular GPU forces own one).
#include <cufft.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "nbkit/core/box.hpp"
#include "md/bonded_law.hpp"  // Vector3

namespace nbkit::md {

class PmeGpu {
 public:
  // A mesh of `grid` points, splines of `order` (4..6), Ewald's alpha (1/A), for the charges `q`
  // (e; their sum of magnitudes sets the fixed-point scale). The setup's work goes to `stream`.
  PmeGpu(std::array<int, 3> grid, int order, double alpha, const std::vector<double>& q, cudaStream_t stream);
  ~PmeGpu();
  PmeGpu(const PmeGpu&) = delete;
  PmeGpu& operator=(const PmeGpu&) = delete;

  // The reciprocal sum of the n charges `q` (device) at `x` (device, A, any image) in the
  // orthorhombic `box`, Coulomb's constant k: each atom's force into `force` (device, n,
  // overwritten), the energy and virial into `energy_virial` (device, 2; null: not summed, the
  // forces the same bits). Asynchronous on `stream` (the molecular forces' side stream, beside
  // the pairs; their own stream when timed).
  // `ahead`, where not null, is recorded on `stream` at the end of phase `ahead_phase` (1 the
  // spread, 2 the forward FFT, 3 the convolution, 4 the inverse FFT: phase_seconds' phases), so
  // that other work may wait for part of the chain (NBKIT_PAIRS_AFTER_MESH).
  void evaluate(const Vector3<double>* x, const double* q, int n, const PeriodicBox& box, double coulomb_k,
                Vector3<double>* force, double* energy_virial, cudaStream_t stream, cudaEvent_t ahead = nullptr,
                int ahead_phase = 0);
  std::array<int, 3> grid() const { return grid_; }
  // Benchmarks: events between the phases of each evaluation from now on, and the last
  // evaluation's phase times (s; waits for it): spread (with the conversion from fixed point),
  // forward FFT, convolution (with its energy and virial sums), inverse FFT, gather.
  void time_phases() { events_ = std::make_unique<std::array<cuda::Event, 6>>(); }
  std::array<double, 5> phase_seconds() const;

 private:
  std::array<int, 3> grid_;
  int order_;
  double alpha_;
  double scale_;  // fixed point: a mesh value v is stored as round(v scale)
  cudaStream_t stream_;
  cufftHandle forward_ = 0, backward_ = 0;
  bool planned_forward_ = false, planned_backward_ = false;
  cuda::DeviceBuffer<unsigned long long> fixed_;
  cuda::DeviceBuffer<double> mesh_, moduli_, partial_;
  // G(m) times the moduli for each element of the half spectrum, for the box edges and Coulomb
  // constant in tabulated_for_ (made again when they change: NPT's moves).
  cuda::DeviceBuffer<double> table_;
  std::array<double, 4> tabulated_for_{-1, -1, -1, -1};
  bool cleared_ = false;  // the fixed-point mesh zeroed (then kept zero by each conversion)
  cuda::DeviceBuffer<cufftDoubleComplex> spectrum_;
  int convolution_blocks_ = 0;
  std::unique_ptr<std::array<cuda::Event, 6>> events_;
  cudaEvent_t ahead_ = nullptr;  // this evaluation's (evaluate)
  int ahead_phase_ = 0;
  void mark(int phase);
};

}  // namespace nbkit::md
