// A kernel and copy timeline for machines without Nsight Systems (the GPU machine has none):
// loaded by the CUDA driver into any program through CUDA_INJECTION64_PATH, it records CUPTI's
// activity records (each kernel's, copy's and memset's start, end and stream, the GPU's own
// timestamps; kernels of concurrent streams overlap as they ran) and writes them, one per line,
// to $NBKIT_TRACE ("kernel|memcpy|memset <TAB> start ns <TAB> end ns <TAB> stream <TAB> name
// <TAB> correlation"), and the host's runtime calls ("api <TAB> start <TAB> end <TAB> thread <TAB>
// call <TAB> correlation": a kernel's launch call has its correlation, so the two lines say how
// far ahead of the GPU the host queued it).
// scripts/cupti-trace-lib builds it (g++ against the toolkit's CUPTI); scripts/timeline-md and
// scripts/trace-map use it:
//   scripts/cupti-trace-lib libtrace.so
//   CUDA_INJECTION64_PATH=libtrace.so NBKIT_TRACE=trace.tsv nbkit md ...
#include <cupti.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

std::FILE* out = nullptr;
std::mutex out_mutex;

// The function's name without its namespace, template arguments or parameters
// ("nbkit::md::(anonymous namespace)::listed_pairs<float, ...>(...)" -> "listed_pairs").
std::string short_name(const char* mangled) {
  if (!mangled) return "?";
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  // Cut at the first '(' or '<' outside of "(anonymous namespace)", then keep what follows "::".
  std::string cut;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, 21, "(anonymous namespace)") == 0) {
      cut += "anon";
      i += 20;
      continue;
    }
    if (name[i] == '(' || name[i] == '<') break;
    cut += name[i];
  }
  const std::size_t colon = cut.rfind("::");
  return colon == std::string::npos ? cut : cut.substr(colon + 2);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = std::size_t{16} << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  const std::lock_guard<std::mutex> lock(out_mutex);
  CUpti_Activity* record = nullptr;
  while (out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        std::fprintf(out, "kernel\t%llu\t%llu\t%u\t%s\t%u\n", static_cast<unsigned long long>(k->start),
                     static_cast<unsigned long long>(k->end), k->streamId, short_name(k->name).c_str(),
                     k->correlationId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        std::fprintf(out, "memcpy\t%llu\t%llu\t%u\tcopy kind %u, %llu bytes\n", static_cast<unsigned long long>(c->start),
                     static_cast<unsigned long long>(c->end), c->streamId, static_cast<unsigned>(c->copyKind),
                     static_cast<unsigned long long>(c->bytes));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        std::fprintf(out, "memset\t%llu\t%llu\t%u\t%llu bytes\n", static_cast<unsigned long long>(m->start),
                     static_cast<unsigned long long>(m->end), m->streamId, static_cast<unsigned long long>(m->bytes));
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const char* call = nullptr;
        if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &call) != CUPTI_SUCCESS || !call) call = "?";
        std::fprintf(out, "api\t%llu\t%llu\t%u\t%s\t%u\n", static_cast<unsigned long long>(a->start),
                     static_cast<unsigned long long>(a->end), a->threadId, call, a->correlationId);
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

void flush_at_exit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const std::lock_guard<std::mutex> lock(out_mutex);
  if (out) std::fclose(out), out = nullptr;
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library.
extern "C" int InitializeInjection(void) {
  const char* path = std::getenv("NBKIT_TRACE");
  out = std::fopen(path && *path ? path : "cupti_trace.tsv", "w");
  if (!out) return 0;
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) return 0;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  std::atexit(flush_at_exit);
  return 1;
}
