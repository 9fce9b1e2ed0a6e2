// How late a CUDA graph's conditional node's body starts after the kernel that set its condition,
// beside what else the graph runs: the question behind the GPU MD step's rebuilds, whose first
// kernel starts ~50 us after the pair list's check (docs/performance.md, sessions 38-39).
//   - the peer, measured in the same run: a plain graph node's start after its predecessor's
//     end, in the same surroundings; the ratio is printed;
//   - times from %globaltimer, written by the kernels themselves (the setter's end, the body's
//     first and last kernels' starts); medians of 50 launches;
//   - the graphs instantiated with the nodes' priorities (as the MD step's: the branches beside
//     at the lowest, the decision and its body at the highest), and the conditional once more
//     without them (cudaGraphInstantiateFlagUseNodePriority left out).
// The surroundings are branches beside the decision, forked before the setter, each a chain of
// kernels: small ones (8 blocks) or ones that fill the GPU (16 blocks an SM, 256 threads), as
// PME's mesh and the bonded terms' chains fill it beside the MD step's check.
//   bench_graph_conditional_latency [--json FILE]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda/check.hpp"

namespace {

__device__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Sets the condition (where there is one) and notes the time: slot 0.
__global__ void setter(cudaGraphConditionalHandle handle, bool conditional, unsigned long long* t) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    if (conditional) cudaGraphSetConditional(handle, 1);
    t[0] = now();
  }
}

__global__ void stamp(unsigned long long* t, int slot) {
  if (threadIdx.x == 0 && blockIdx.x == 0) t[slot] = now();
}

__global__ void spin(unsigned long long ns) {
  const unsigned long long start = now();
  while (now() - start < ns) {
  }
}

struct Case {
  std::string name;
  int body = 16;           // kernels in the body (or after the setter, plain)
  int chains = 0;          // branches beside
  int chain_kernels = 10;  // kernels a chain
  int kernel_us = 5;       // each of them spinning this long
  bool fill = false;       // each filling the GPU (else 8 blocks)
};

struct Measured {
  double start_us, body_us;
};

class Bench {
 public:
  Bench() {
    int least, greatest;
    NBKIT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    NBKIT_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
    NBKIT_CUDA_CHECK(cudaStreamCreateWithPriority(&body_stream_, cudaStreamNonBlocking, greatest));
    sides_.resize(kMaxChains), joins_.resize(kMaxChains);
    for (int k = 0; k < kMaxChains; ++k) {
      NBKIT_CUDA_CHECK(cudaStreamCreateWithPriority(&sides_[k], cudaStreamNonBlocking, least));
      NBKIT_CUDA_CHECK(cudaEventCreateWithFlags(&joins_[k], cudaEventDisableTiming));
    }
    NBKIT_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
    NBKIT_CUDA_CHECK(cudaMallocManaged(&t_, 4 * sizeof(unsigned long long)));
    int sms = 0;
    NBKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    fill_blocks_ = 16 * sms;
  }
  static constexpr int kMaxChains = 8;

  Measured run(const Case& c, bool conditional, bool priorities = true) {
    cudaGraph_t graph = nullptr;
    NBKIT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    NBKIT_CUDA_CHECK(cudaEventRecord(fork_, stream_));
    const int chains = std::min(c.chains, kMaxChains);
    for (int k = 0; k < chains; ++k) {
      NBKIT_CUDA_CHECK(cudaStreamWaitEvent(sides_[k], fork_, 0));
      for (int j = 0; j < c.chain_kernels; ++j)
        spin<<<c.fill ? fill_blocks_ : 8, 256, 0, sides_[k]>>>(1000ull * c.kernel_us);
      NBKIT_CUDA_CHECK(cudaEventRecord(joins_[k], sides_[k]));
    }
    cudaStreamCaptureStatus status;
    cudaGraph_t capturing = nullptr;
    NBKIT_CUDA_CHECK(cudaStreamGetCaptureInfo(stream_, &status, nullptr, &capturing, nullptr, nullptr, nullptr));
    cudaGraphConditionalHandle handle{};
    if (conditional) NBKIT_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, capturing, 0, cudaGraphCondAssignDefault));
    setter<<<1, 32, 0, stream_>>>(handle, conditional, t_);
    NBKIT_CUDA_CHECK_LAUNCH();
    auto body = [&](cudaStream_t on) {
      for (int j = 0; j < c.body; ++j) stamp<<<1, 32, 0, on>>>(t_, j == 0 ? 1 : 2);
      NBKIT_CUDA_CHECK_LAUNCH();
    };
    if (conditional) {  // as MolecularPairListGpu's add_decision builds its rebuild
      const cudaGraphNode_t* dependencies = nullptr;
      std::size_t count = 0;
      NBKIT_CUDA_CHECK(
          cudaStreamGetCaptureInfo(stream_, &status, nullptr, &capturing, &dependencies, nullptr, &count));
      cudaGraphNodeParams parameters{};
      parameters.type = cudaGraphNodeTypeConditional;
      parameters.conditional.handle = handle;
      parameters.conditional.type = cudaGraphCondTypeIf;
      parameters.conditional.size = 1;
      cudaGraphNode_t node;
      NBKIT_CUDA_CHECK(cudaGraphAddNode(&node, capturing, dependencies, nullptr, count, &parameters));
      NBKIT_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(stream_, &node, nullptr, 1, cudaStreamSetCaptureDependencies));
      NBKIT_CUDA_CHECK(cudaStreamBeginCaptureToGraph(body_stream_, parameters.conditional.phGraph_out[0], nullptr,
                                                     nullptr, 0, cudaStreamCaptureModeThreadLocal));
      body(body_stream_);
      cudaGraph_t ended = nullptr;
      NBKIT_CUDA_CHECK(cudaStreamEndCapture(body_stream_, &ended));
    } else {
      body(stream_);
    }
    stamp<<<1, 32, 0, stream_>>>(t_, 3);
    for (int k = 0; k < chains; ++k) NBKIT_CUDA_CHECK(cudaStreamWaitEvent(stream_, joins_[k], 0));
    NBKIT_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    NBKIT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, priorities ? cudaGraphInstantiateFlagUseNodePriority : 0));
    std::vector<double> start, span;
    for (int launch = 0; launch < 60; ++launch) {
      t_[0] = t_[1] = t_[2] = t_[3] = 0;
      NBKIT_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
      NBKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
      if (launch < 10) continue;  // warm
      start.push_back(1e-3 * static_cast<double>(t_[1] - t_[0]));
      span.push_back(1e-3 * static_cast<double>((c.body > 1 ? t_[2] : t_[1]) - t_[1]));
    }
    NBKIT_CUDA_CHECK(cudaGraphExecDestroy(exec));
    NBKIT_CUDA_CHECK(cudaGraphDestroy(graph));
    return {median(start), median(span)};
  }

 private:
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
  cudaStream_t stream_ = nullptr, body_stream_ = nullptr;
  std::vector<cudaStream_t> sides_;
  std::vector<cudaEvent_t> joins_;
  cudaEvent_t fork_ = nullptr;
  unsigned long long* t_ = nullptr;
  int fill_blocks_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--json" && k + 1 < argc) json_path = argv[++k];
    else {
      std::fprintf(stderr, "usage: bench_graph_conditional_latency [--json FILE]\n");
      return 2;
    }
  }
  cudaDeviceProp properties{};
  NBKIT_CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  std::printf("%s: a conditional IF body's first kernel after the setter's end, against a plain node's\n",
              properties.name);
  const std::vector<Case> cases = {
      {"alone, body of 1", 1},
      {"alone, body of 16", 16},
      {"beside 2 chains of 10 small 5 us kernels", 16, 2, 10, 5, false},
      {"beside 8 chains of 10 small 5 us kernels", 16, 8, 10, 5, false},
      {"beside 1 GPU-filling 100 us kernel", 16, 1, 1, 100, true},
      {"beside 1 chain of 10 GPU-filling 5 us kernels", 16, 1, 10, 5, true},
      {"beside 2 chains of 10 GPU-filling 5 us kernels", 16, 2, 10, 5, true},
      {"beside 2 chains of 10 GPU-filling 20 us kernels", 16, 2, 10, 20, true},
  };
  Bench bench;
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-50s %10s %10s %10s %12s %12s %16s\n", "surroundings", "if (us)", "plain (us)", "ratio",
              "if body (us)", "plain (us)", "if, no prio (us)");
  for (const Case& c : cases) {
    const Measured conditional = bench.run(c, true);
    const Measured plain = bench.run(c, false);
    const Measured unordered = bench.run(c, true, false);
    std::printf("%-50s %10.2f %10.2f %10.1f %12.2f %12.2f %16.2f\n", c.name.c_str(), conditional.start_us,
                plain.start_us, conditional.start_us / plain.start_us, conditional.body_us, plain.body_us,
                unordered.start_us);
    rows.push_back({{"case", c.name},
                    {"conditional_start_us", conditional.start_us},
                    {"plain_start_us", plain.start_us},
                    {"conditional_body_us", conditional.body_us},
                    {"plain_body_us", plain.body_us},
                    {"conditional_start_us_without_node_priorities", unordered.start_us},
                    {"body_kernels", c.body}});
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << nlohmann::json{{"gpu", properties.name}, {"rows", rows}}.dump(2) << "\n";
  }
}
