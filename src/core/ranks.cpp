// The job's ranks: MPI when a launcher started the process (issue 22), else one rank.
#include "nbkit/core/ranks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "nbkit/core/error.hpp"

#ifdef NBKIT_HAVE_MPI
#include <mpi.h>
#endif

namespace nbkit {

class RanksAccess {
 public:
  static Ranks& mutable_world() {
    static Ranks ranks;
    return ranks;
  }
  static void set(Ranks& ranks, int rank, int size, int node_rank, int node_size) {
    ranks.rank_ = rank, ranks.size_ = size, ranks.node_rank_ = node_rank, ranks.node_size_ = node_size;
  }
};

const Ranks& Ranks::world() { return RanksAccess::mutable_world(); }

// Large messages go in pieces of at most 1 GiB (MPI counts are ints).
constexpr std::size_t kMessagePiece = std::size_t{1} << 30;

namespace {

#ifdef NBKIT_HAVE_MPI
// Launchers say who they are in the environment: Open MPI's mpirun, MPICH's and Intel's hydra,
// Slurm's srun (PMI or PMIx), MVAPICH. A process started otherwise never touches MPI, so a
// plain run stays exactly what it was (no MPI start-up, no singleton daemon).
bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_SIZE"})
    if (std::getenv(name)) return true;
  return false;
}

bool mpi_active = false;

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(fmt::format("MPI: {} failed: {}", what, std::string(text, static_cast<std::size_t>(length))));
}
#endif

}  // namespace

Ranks::Session::Session(int& argc, char**& argv) {
#ifdef NBKIT_HAVE_MPI
  if (!started_by_launcher()) return;
  int provided = 0;
  // A run's writer thread (a GPU map's slab written while the next is computed) calls MPI while
  // the main thread waits: one thread at a time.
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  mpi_active = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    std::fprintf(stderr, "nbkit: error: this MPI library gives no MPI_THREAD_SERIALIZED (a map's writer thread "
                         "calls MPI): build nbkit with another MPI\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank = 0, size = 1, node_rank = 0, node_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  RanksAccess::set(RanksAccess::mutable_world(), rank, size, node_rank, node_size);
#else
  (void)argc, (void)argv;
  // Every process of the job would compute the whole map and write the same file: refused.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"})
    if (const char* size = std::getenv(name); size && std::atoi(size) > 1) {
      std::fprintf(stderr, "nbkit: error: started as one of %s MPI processes, but this nbkit was built without MPI "
                           "(install libopenmpi-dev and build again, or run it without mpirun)\n", size);
      std::exit(2);
    }
#endif
}

Ranks::Session::~Session() {
#ifdef NBKIT_HAVE_MPI
  if (mpi_active) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
    mpi_active = false;
  }
#endif
}

bool Ranks::mpi_compiled() {
#ifdef NBKIT_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::string Ranks::mpi_library() {
#ifdef NBKIT_HAVE_MPI
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<std::size_t>(length));
  // Open MPI's is "Open MPI v4.1.4, package: ..., repo rev: ...": the first clause names it.
  if (const auto comma = version.find(','); comma != std::string::npos) version.resize(comma);
  while (!version.empty() && (version.back() == '\n' || version.back() == ' ')) version.pop_back();
  return version;
#else
  return "";
#endif
}

void Ranks::barrier() const {
#ifdef NBKIT_HAVE_MPI
  if (distributed()) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

std::vector<double> Ranks::all_gather(double value) const {
  std::vector<double> values(static_cast<std::size_t>(size_), value);
#ifdef NBKIT_HAVE_MPI
  if (distributed()) check(MPI_Allgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD), "MPI_Allgather");
#endif
  return values;
}

double Ranks::all_max(double value) const {
  double result = value;
  for (double v : all_gather(value)) result = std::max(result, v);
  return result;
}

double Ranks::all_min(double value) const {
  double result = value;
  for (double v : all_gather(value)) result = std::min(result, v);
  return result;
}

double Ranks::all_sum(double value) const {
  // Gathered and added in rank order, not MPI_Allreduce (whose order is the library's).
  const std::vector<double> values = all_gather(value);
  return std::accumulate(values.begin(), values.end(), 0.0);
}

bool Ranks::any(bool value) const { return all_max(value ? 1.0 : 0.0) > 0; }

void Ranks::broadcast(std::string& text, int root) const {
#ifdef NBKIT_HAVE_MPI
  if (!distributed()) return;
  unsigned long long length = text.size();
  check(MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD), "MPI_Bcast");
  text.resize(static_cast<std::size_t>(length));
  check(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, MPI_COMM_WORLD), "MPI_Bcast");
#else
  (void)text, (void)root;
#endif
}

void Ranks::broadcast(std::vector<double>& values, int root) const {
  if (!distributed()) return;
  values.resize(broadcast_size(values.size(), root));
  broadcast_bytes(values.data(), values.size() * sizeof(double), root);
}

void Ranks::broadcast(std::vector<std::int32_t>& values, int root) const {
  if (!distributed()) return;
  values.resize(broadcast_size(values.size(), root));
  broadcast_bytes(values.data(), values.size() * sizeof(std::int32_t), root);
}

std::size_t Ranks::broadcast_size(std::size_t size, int root) const {
  unsigned long long n = size;
  broadcast_bytes(&n, sizeof n, root);
  return static_cast<std::size_t>(n);
}

void Ranks::broadcast_bytes(void* data, std::size_t bytes, int root) const {
#ifdef NBKIT_HAVE_MPI
  char* p = static_cast<char*>(data);
  do {
    const std::size_t n = std::min(bytes, kMessagePiece);
    check(MPI_Bcast(p, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
    p += n, bytes -= n;
  } while (bytes > 0);
#else
  (void)data, (void)bytes, (void)root;
#endif
}

void Ranks::all_gather_ranges(double* data, const std::vector<std::int64_t>& bounds) const {
  if (!distributed()) return;
  if (bounds.size() != static_cast<std::size_t>(size_) + 1) throw Error("internal: a range for every rank is needed");
#ifdef NBKIT_HAVE_MPI
  std::vector<int> counts(static_cast<std::size_t>(size_)), displacements(static_cast<std::size_t>(size_));
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (bounds[r + 1] - bounds[r] > 0x7fffffff || bounds[r] > 0x7fffffff)
      throw Error("MPI: more than 2^31 values a rank to gather");
    counts[r] = static_cast<int>(bounds[r + 1] - bounds[r]), displacements[r] = static_cast<int>(bounds[r]);
  }
  check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), displacements.data(), MPI_DOUBLE,
                       MPI_COMM_WORLD),
        "MPI_Allgatherv");
#else
  (void)data;
#endif
}

std::vector<double> Ranks::gather(const std::vector<double>& values, int root) const {
  if (!distributed()) return values;
#ifdef NBKIT_HAVE_MPI
  const std::vector<double> counts = all_gather(static_cast<double>(values.size()));
  std::vector<double> all;
  if (rank_ == root) {
    all.resize(static_cast<std::size_t>(std::accumulate(counts.begin(), counts.end(), 0.0)));
    std::size_t at = 0;
    for (int r = 0; r < size_; ++r) {
      const std::size_t n = static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
      if (r == root)
        std::copy(values.begin(), values.end(), all.begin() + static_cast<std::ptrdiff_t>(at));
      else
        receive(all.data() + at, n * sizeof(double), r, 7);
      at += n;
    }
  } else {
    send(values.data(), values.size() * sizeof(double), root, 7);
  }
  return all;
#else
  return values;
#endif
}


#ifdef NBKIT_HAVE_MPI
namespace {
// MPI's user operations take no context: the record combine of the reduce_pieces under way
// (collectives run one at a time on a rank).
Ranks::RecordCombine current_combine = nullptr;
void combine_records(void* in, void* inout, int* count, MPI_Datatype*) {
  current_combine(in, inout, static_cast<std::size_t>(*count));
}
}  // namespace
#endif

void Ranks::reduce_pieces(void* data, std::size_t record_bytes, const std::vector<std::int64_t>& bounds,
                          RecordCombine combine) const {
  if (!distributed()) return;
  if (bounds.size() != static_cast<std::size_t>(size_) + 1) throw Error("internal: a range for every rank is needed");
#ifdef NBKIT_HAVE_MPI
  MPI_Datatype record;
  check(MPI_Type_contiguous(static_cast<int>(record_bytes), MPI_BYTE, &record), "MPI_Type_contiguous");
  check(MPI_Type_commit(&record), "MPI_Type_commit");
  MPI_Op op;
  current_combine = combine;
  check(MPI_Op_create(combine_records, 1, &op), "MPI_Op_create");
  // One reduction to each rank's piece, in pieces of at most 1 GiB: the volume of a
  // reduce-scatter, with counts that fit MPI's ints.
  const std::int64_t per_message = std::max<std::int64_t>(1, static_cast<std::int64_t>(kMessagePiece / record_bytes));
  char* bytes = static_cast<char*>(data);
  try {
    for (int r = 0; r < size_; ++r) {
      for (std::int64_t at = bounds[static_cast<std::size_t>(r)]; at < bounds[static_cast<std::size_t>(r) + 1];
           at += per_message) {
        const int n = static_cast<int>(std::min(per_message, bounds[static_cast<std::size_t>(r) + 1] - at));
        char* where = bytes + static_cast<std::size_t>(at) * record_bytes;
        check(MPI_Reduce(rank_ == r ? MPI_IN_PLACE : where, where, n, record, op, r, MPI_COMM_WORLD), "MPI_Reduce");
      }
    }
  } catch (...) {
    MPI_Op_free(&op);
    MPI_Type_free(&record);
    throw;
  }
  MPI_Op_free(&op);
  MPI_Type_free(&record);
#else
  (void)data, (void)record_bytes, (void)combine;
#endif
}

void Ranks::send(const void* data, std::size_t bytes, int to, int tag) const {
#ifdef NBKIT_HAVE_MPI
  const char* p = static_cast<const char*>(data);
  do {
    const std::size_t n = std::min(bytes, kMessagePiece);
    check(MPI_Send(p, static_cast<int>(n), MPI_BYTE, to, tag, MPI_COMM_WORLD), "MPI_Send");
    p += n, bytes -= n;
  } while (bytes > 0);
#else
  (void)data, (void)bytes, (void)to, (void)tag;
  throw Error("internal: a message between ranks in a build without MPI");
#endif
}

void Ranks::receive(void* data, std::size_t bytes, int from, int tag) const {
#ifdef NBKIT_HAVE_MPI
  char* p = static_cast<char*>(data);
  do {
    const std::size_t n = std::min(bytes, kMessagePiece);
    check(MPI_Recv(p, static_cast<int>(n), MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    p += n, bytes -= n;
  } while (bytes > 0);
#else
  (void)data, (void)bytes, (void)from, (void)tag;
  throw Error("internal: a message between ranks in a build without MPI");
#endif
}

void Ranks::abort(const std::string& message, int status) const {
  if (distributed())
    std::fprintf(stderr, "nbkit: error (rank %d of %d): %s\n", rank_, size_, message.c_str());
  else
    std::fprintf(stderr, "nbkit: error: %s\n", message.c_str());
  std::fflush(stderr);
#ifdef NBKIT_HAVE_MPI
  if (distributed()) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  std::exit(status);
}

// ---- RankFile -------------------------------------------------------------------------------

// Only a job of several ranks opens one (write_map_file's placed formats); one process writes
// through io's own File.
struct RankFile::State {
  std::string name;
  bool open = false;
#ifdef NBKIT_HAVE_MPI
  MPI_File file = MPI_FILE_NULL;
#endif
};

RankFile::RankFile(const Ranks& ranks, const std::string& path, const std::string& name_for_errors)
    : state_(std::make_unique<State>()) {
  state_->name = name_for_errors;
  if (!ranks.distributed()) throw Error("internal: a file shared by ranks in a job of one");
#ifdef NBKIT_HAVE_MPI
  // Rank 0 made the file (write_atomically's temporary); the others open it as it is.
  const int code = MPI_File_open(MPI_COMM_WORLD, path.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &state_->file);
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw Error(fmt::format("{}: cannot open for writing on every rank (MPI-IO): {}", name_for_errors,
                            std::string(text, static_cast<std::size_t>(length))));
  }
  state_->open = true;
#else
  (void)path;
#endif
}

// Left open only after an exception, which ends the job (Ranks::abort): no collective here.
RankFile::~RankFile() = default;

void RankFile::write_at(std::uint64_t offset, const void* data, std::size_t bytes) {
#ifdef NBKIT_HAVE_MPI
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const std::size_t n = std::min(bytes, kMessagePiece);
    MPI_Status status;
    const int code =
        MPI_File_write_at(state_->file, static_cast<MPI_Offset>(offset), p, static_cast<int>(n), MPI_BYTE, &status);
    int written = 0;
    MPI_Get_count(&status, MPI_BYTE, &written);
    if (code != MPI_SUCCESS || written != static_cast<int>(n))
      throw Error(fmt::format("{}: write failed at byte {} (MPI-IO; the disk full?)", state_->name, offset));
    p += n, bytes -= n, offset += n;
  }
#else
  (void)offset, (void)data, (void)bytes;
#endif
}

void RankFile::close() {
  if (!state_->open) return;
  state_->open = false;
#ifdef NBKIT_HAVE_MPI
  if (MPI_File_close(&state_->file) != MPI_SUCCESS) throw Error(state_->name + ": write failed (closing, MPI-IO)");
#endif
}

}  // namespace nbkit
