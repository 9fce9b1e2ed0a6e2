#pragma once
// The processes of one job across machines (MPI ranks; issue 22). Plain C++: no MPI in this
// header, and a build without MPI has the same interface with one rank. A process started
// without an MPI launcher is one rank and behaves exactly as before: MPI is initialised only
// when mpirun, mpiexec or srun started the process (their environment says so).
//
// Collectives (all but rank(), size(), send, receive and abort) must be called by every rank in
// the same order, as MPI's are.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nbkit/core/backend.hpp"

namespace nbkit {

class Ranks {
 public:
  // The job's ranks (MPI_COMM_WORLD when MPI was started, else one rank).
  static const Ranks& world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  bool root() const { return rank_ == 0; }
  // The ranks on this rank's machine (MPI's shared-memory split) and this one's place among
  // them: how the machine's GPUs, cores and memory are shared.
  int node_rank() const { return node_rank_; }
  int node_size() const { return node_size_; }

  void barrier() const;
  // Every rank's value, in rank order.
  std::vector<double> all_gather(double value) const;
  double all_max(double value) const;
  double all_min(double value) const;
  // Sums in rank order (the same bits on every rank and for every run of this rank count).
  double all_sum(double value) const;
  // True on every rank when any rank passes true.
  bool any(bool value) const;
  // `text` (`values`) as `root` has it, on every rank (resized there).
  void broadcast(std::string& text, int root = 0) const;
  void broadcast(std::vector<double>& values, int root = 0) const;
  void broadcast(std::vector<std::int32_t>& values, int root = 0) const;
  // In place: rank r's entries data[bounds[r], bounds[r+1]) sent to every rank, so that every
  // rank holds all bounds.back() values.
  void all_gather_ranges(double* data, const std::vector<std::int64_t>& bounds) const;
  // Every rank's `values` concatenated in rank order, on `root` only (empty elsewhere).
  std::vector<double> gather(const std::vector<double>& values, int root = 0) const;
  // In place, record by record over every rank's `data` (records of `record_bytes` bytes):
  // combine(in, inout, n) folds n records of `in` into those of `inout`, and rank r is left with
  // the job's results for records [bounds[r], bounds[r+1]) (its other records are then
  // unspecified). MPI chooses the order in which ranks are combined, so `combine` must be exact
  // (integer sums, min, max): then the results have the same bits for every rank count.
  using RecordCombine = void (*)(const void* in, void* inout, std::size_t records);
  void reduce_pieces(void* data, std::size_t record_bytes, const std::vector<std::int64_t>& bounds,
                     RecordCombine combine) const;

  // Point to point: `bytes` bytes to or from one rank, in order per pair and tag.
  void send(const void* data, std::size_t bytes, int to, int tag) const;
  void receive(void* data, std::size_t bytes, int from, int tag) const;

  // Ends the whole job: "nbkit: error (rank R of N): message" on stderr, then every rank is
  // stopped (MPI_Abort) with `status`. A job of one rank just prints and exits.
  [[noreturn]] void abort(const std::string& message, int status) const;

  // Started by main(): MPI initialised when a launcher started the process (and the build has
  // MPI), with MPI_THREAD_SERIALIZED (a GPU map's writer thread calls MPI while the main thread
  // waits), finalised when the object goes.
  class Session {
   public:
    Session(int& argc, char**& argv);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
  };

  // Whether this build can run across processes (compiled with MPI).
  static bool mpi_compiled();
  // The MPI library's name and version ("Open MPI v4.1.4"), empty without MPI.
  static std::string mpi_library();

 private:
  Ranks() = default;
  void broadcast_bytes(void* data, std::size_t bytes, int root) const;  // collective, in 1 GiB pieces
  std::size_t broadcast_size(std::size_t size, int root) const;
  int rank_ = 0, size_ = 1, node_rank_ = 0, node_size_ = 1;
  friend class RanksAccess;
};

// A rank's part of its machine when several ranks of a job run there (Ranks::node_size() > 1):
// the machine's GPUs (`gpus` as --gpus gives them, empty: every usable one) dealt out by node
// rank, round robin, so that no GPU has two ranks; the cores divided among the ranks when
// `threads` is 0 (every core). A rank left without a GPU runs on the CPU under --backend auto
// (the notice says so) and is refused under --backend cuda. One rank a machine: unchanged.
struct NodeShare {
  Backend backend;
  std::vector<int> gpus;
  int threads = 0;
  std::string notice;
};
NodeShare share_node(const Ranks& ranks, Backend backend, const std::vector<int>& gpus, int threads);

// A file written by every rank at its own offsets (MPI-IO: MPI_File_open on every rank,
// MPI_File_write_at), for formats whose layout puts each rank's values at a known place (MRC,
// binary OpenDX). Opening and closing are collective. Jobs of several ranks only.
class RankFile {
 public:
  RankFile(const Ranks& ranks, const std::string& path, const std::string& name_for_errors);
  ~RankFile();
  RankFile(const RankFile&) = delete;
  RankFile& operator=(const RankFile&) = delete;
  void write_at(std::uint64_t offset, const void* data, std::size_t bytes);
  void close();  // collective; throws when any write failed on this rank

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbkit
