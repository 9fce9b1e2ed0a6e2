// Map files written a slab at a time (issue 21): OpenDX text as APBS writes it (Vgrid_writeDX),
// gzip-compressed OpenDX, APBS's binary OpenDX (Vgrid_writeDXBIN) and CCP4/MRC, each holding
// no more than the slab it is given, formatting on every core and writing large blocks.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <gemmi/ccp4.hpp>
#include <gemmi/symmetry.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "io/scientific.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/ranks.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/map_files.hpp"

namespace nbkit::io {

namespace {

// Values a chunk of formatted text holds (whole lines of three), and the most chunks formatted
// at once: 64 x 196,608 x 15 bytes = 190 MB of buffers at most, as map_write_memory_bytes counts.
constexpr std::int64_t kChunkValues = 3 << 16;
constexpr int kMaxTeam = 64;
// Values MRC converts to float32 at once (4 MiB of them, a quarter of a staging block).
constexpr std::int64_t kCcp4PieceValues = std::int64_t{1} << 20;

int writer_team(int threads) { return std::max(1, std::min(threads > 0 ? threads : hardware_threads(), kMaxTeam)); }

// A map file's descriptor. A regular file is written with O_DIRECT, past the page cache, in
// 16 MiB blocks from two aligned staging buffers: one filled while the other is written by a
// second thread (so copying into them costs no disk time). On the CI machine (a VM) buffered
// writes of a multi-GB map went at 0.35-0.6 GB/s, spent in the kernel copying into fresh
// page-cache pages, against the disk's 1.0 GB/s with O_DIRECT (dd oflag=direct); with one
// staging buffer, copy then write, the H100 machine's writes reached 0.69 of its disk's rate. A
// map larger than memory also leaves the page cache to other work. The unaligned tail, a header
// rewritten at the end, and file systems that refuse O_DIRECT (tmpfs) go through the page cache
// as usual. Failures name the file the user gave.
// Where a map file's bytes go: the file itself (File), or, in a job of several ranks, rank 0
// (RootSink: it writes them in rank order) or the rank's own place in the shared file
// (PlacedSink, MPI-IO).
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const void* data, std::size_t bytes) = 0;
  void write(const std::string& text) { write(text.data(), text.size()); }
  // Rewrites (or writes) bytes at an offset of the file: false where the file cannot seek (a pipe).
  virtual bool rewrite_at(std::uint64_t offset, const void* data, std::size_t bytes) = 0;
  virtual void close() = 0;
  virtual std::uint64_t written() const = 0;
};

class File final : public Sink {
 public:
  // must_exist: open a temporary made earlier, never make it again (a job's failing rank may
  // have removed it: making it again would leave it behind, write_rank_part).
  File(const std::string& temporary, const std::string& path, bool must_exist = false) : path_(path) {
    fd_ = ::open(temporary.c_str(), O_WRONLY | (must_exist ? 0 : O_CREAT) | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(fmt::format("{}: cannot open for writing: {}", path, std::strerror(errno)));
    struct stat info {};
    seekable_ = ::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode);
    if (seekable_ && ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_DIRECT) == 0) {
      for (auto& buffer : staging_) buffer.reset(static_cast<char*>(std::aligned_alloc(kAlignment, kStaging)));
      if (!staging_[0] || !staging_[1]) staging_[0].reset(), staging_[1].reset(), set_direct(false);
    }
  }
  ~File() {
    if (writing_.valid()) writing_.wait();
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  using Sink::write;
  void write(const void* data, std::size_t bytes) override {
    const char* p = static_cast<const char*>(data);
    written_ += bytes;
    if (!staging_[0]) return write_all(p, bytes);
    while (bytes > 0) {
      const std::size_t n = std::min(bytes, kStaging - staged_);
      std::memcpy(staging_[current_].get() + staged_, p, n);
      staged_ += n, p += n, bytes -= n;
      if (staged_ == kStaging) hand_over();
    }
  }
  // Rewrites bytes already written (a header whose statistics are known only at the end).
  bool rewrite_at(std::uint64_t offset, const void* data, std::size_t bytes) override {
    if (!seekable_) return false;
    finish_direct();
    const ssize_t n = ::pwrite(fd_, data, bytes, static_cast<off_t>(offset));
    if (n != static_cast<ssize_t>(bytes)) throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
    return true;
  }
  void close() override {
    finish_direct();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
  }
  std::uint64_t written() const override { return written_; }

 private:
  static constexpr std::size_t kAlignment = 4096, kStaging = std::size_t{16} << 20;
  struct FreeAligned {
    void operator()(char* p) const { std::free(p); }
  };

  void set_direct(bool on) {
    const int flags = ::fcntl(fd_, F_GETFL);
    ::fcntl(fd_, F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT);
  }
  // The full staging buffer goes to the writing thread (after the previous one is written: its
  // error, if any, is thrown here); filling continues in the other.
  void hand_over() {
    if (writing_.valid()) writing_.get();
    const char* block = staging_[current_].get();
    writing_ = std::async(std::launch::async, [this, block] { write_direct(block, kStaging); });
    current_ ^= 1;
    staged_ = 0;
  }
  // Whole aligned blocks directly; a file system that turns O_DIRECT down at the first write,
  // or a short write, gets the rest buffered.
  void write_direct(const char* block, std::size_t bytes) {
    if (bytes == 0) return;
    const ssize_t n = ::write(fd_, block, bytes);
    if (n == static_cast<ssize_t>(bytes)) return;
    if (n < 0 && errno != EINTR && errno != EINVAL)
      throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
    const std::size_t done = n > 0 ? static_cast<std::size_t>(n) : 0;
    set_direct(false);
    write_all(block + done, bytes - done);
  }
  void finish_direct() {
    if (!staging_[0]) return;
    if (writing_.valid()) writing_.get();
    const std::size_t aligned = staged_ / kAlignment * kAlignment;
    write_direct(staging_[current_].get(), aligned);
    set_direct(false);
    write_all(staging_[current_].get() + aligned, staged_ - aligned);
    staged_ = 0;
    staging_[0].reset(), staging_[1].reset();
  }
  void write_all(const char* p, std::size_t bytes) {
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, p, std::min(bytes, std::size_t{8} << 20));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(n < 0 ? errno : ENOSPC)));
      p += n, bytes -= static_cast<std::size_t>(n);
    }
  }

  std::string path_;
  int fd_ = -1;
  bool seekable_ = false;
  std::unique_ptr<char, FreeAligned> staging_[2];  // null: buffered writes
  int current_ = 0;                                // the buffer being filled
  std::size_t staged_ = 0;
  std::future<void> writing_;                      // the other buffer on its way to the disk
  std::uint64_t written_ = 0;
};

// One gzip member (RFC 1952) of `text`: members written one after another form one valid
// gzip file (gzip, zcat, Python's gzip and zlib's gzread read them all), so chunks are
// compressed on every core at once, as pigz does. Level 1: the output's rate matters more than
// the last 10% of its size (a potential map's text shrinks ~2.3x at level 1, ~2.5x at 6).
void gzip_member(const char* text, std::size_t bytes, std::string& out, const std::string& path) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error(path + ": cannot start gzip compression");
  out.resize(deflateBound(&z, static_cast<uLong>(bytes)) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text));
  z.avail_in = static_cast<uInt>(bytes);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  const std::size_t produced = out.size() - z.avail_out;
  deflateEnd(&z);
  if (status != Z_STREAM_END) throw Error(path + ": gzip compression failed");
  out.resize(produced);
}

std::string dx_header(const Lattice& lattice, const std::vector<std::string>& comments, bool binary) {
  std::string header;
  for (const auto& comment : comments) header += fmt::format("# {}\n", comment);
  const auto& n = lattice.dims;
  const auto& o = lattice.origin;
  const double h = lattice.spacing;
  // Positions with the shortest digits that read back as the same doubles: a client placing
  // values at origin + i * delta then sees the lattice nbkit computed on (APBS's %12.6e
  // would cost 1e-5 relative error at 20 A from the origin).
  header += fmt::format(
      "object 1 class gridpositions counts {} {} {}\n"
      "origin {} {} {}\n"
      "delta {} 0 0\n"
      "delta 0 {} 0\n"
      "delta 0 0 {}\n"
      "object 2 class gridconnections counts {} {} {}\n"
      "object 3 class array type double rank 0 items {} {}data follows\n",
      n[0], n[1], n[2], o.x, o.y, o.z, h, h, h, n[0], n[1], n[2], lattice.size(), binary ? "binary " : "");
  return header;
}

constexpr const char* kDxFooter =
    "attribute \"dep\" string \"positions\"\n"
    "object \"regular positions regular connections\" class field\n"
    "component \"positions\" value 1\n"
    "component \"connections\" value 2\n"
    "component \"data\" value 3\n";

// The part of a map file one writer makes: all of it in one process; in a job of several ranks,
// the values of the rank's rows, with the header and the footer rank 0's.
struct Part {
  std::int64_t first = 0, last = 0;  // values [first, last) of the lattice's, in file order
  bool header = true, footer = true;
  bool placed = false;                 // every rank writes at its values' offsets (MPI-IO), not through rank 0
  bool distributed = false;
};

// Counts the values given and refuses a map whose count does not match its lattice (or the part
// of it this writer makes).
class Writer : public MapFileWriter {
 public:
  Writer(std::unique_ptr<Sink> out, const std::string& path, const Lattice& lattice, const Part& part)
      : out_(std::move(out)), path_(path), lattice_(lattice), part_(part), written_values_(part.first) {}
  void write(const double* values, std::int64_t count) final {
    if (count < 0 || written_values_ + count > part_.last)
      throw Error(fmt::format("{}: more values than the {} lattice points{}", path_, lattice_.size(),
                              part_.distributed ? " of this rank's rows" : ""));
    put(values, count);
    written_values_ += count;
  }
  std::uint64_t bytes_written() const final { return out_->written(); }
  // This writer's values given: the rest of its part out (a chunk of text begun).
  void finish_part() {
    if (written_values_ != part_.last)
      throw Error(fmt::format("{}: {} of {} values written", path_, written_values_ - part_.first,
                              part_.last - part_.first));
    end_part();
  }
  void finish() {
    finish_part();
    end();
    out_->close();
  }
  Sink& sink() { return *out_; }
  // In a job of several ranks, before rank 0 ends the file: what rank 0 needs from every rank
  // (collective; MRC's statistics).
  virtual void collect(const Ranks&) {}
  virtual void end() = 0;  // the footer, the final header: rank 0's
  // Where value `value` (in file order) starts in the file, for formats of fixed-size values.
  virtual std::uint64_t offset_of(std::int64_t) const { throw Error("internal: text has no fixed offsets"); }

 protected:
  virtual void put(const double* values, std::int64_t count) = 0;
  virtual void end_part() {}
  std::unique_ptr<Sink> out_;
  std::string path_;
  Lattice lattice_;
  Part part_;
  std::int64_t written_values_ = 0;
};

// OpenDX text, three values a line; `gzip`: each chunk compressed as a gzip member.
class DxTextWriter final : public Writer {
 public:
  DxTextWriter(std::unique_ptr<Sink> out, const std::string& path, const Lattice& lattice, const Part& part,
               const std::vector<std::string>& comments, bool gzip, int threads)
      : Writer(std::move(out), path, lattice, part), gzip_(gzip), team_(writer_team(threads)),
        text_(static_cast<std::size_t>(team_)), packed_(static_cast<std::size_t>(gzip ? team_ : 0)) {
    if (part.header) emit(dx_header(lattice, comments, false));
  }
  void end() override { emit(kDxFooter); }

 private:
  // Chunks are fixed stretches of the file's values (kChunkValues each), whatever the slabs: a
  // chunk begun in one call is kept as text (carry_) and finished by the next, so that the gzip
  // members, and so the file's bytes, are the same for any slab size.
  void put(const double* values, std::int64_t count) override {
    const std::int64_t first = written_values_, total = lattice_.size();
    std::vector<std::pair<std::int64_t, std::int64_t>> pieces;  // [begin, end) of `values`, one chunk each
    for (std::int64_t begin = 0; begin < count;) {
      const std::int64_t end = std::min(count, ((first + begin) / kChunkValues + 1) * kChunkValues - first);
      pieces.emplace_back(begin, end);
      begin = end;
    }
    const std::int64_t count_pieces = static_cast<std::int64_t>(pieces.size());
    for (std::int64_t batch_first = 0; batch_first < count_pieces; batch_first += team_) {
      const std::int64_t batch = std::min<std::int64_t>(team_, count_pieces - batch_first);
#pragma omp parallel for num_threads(team_) schedule(static, 1) if (batch > 1)
      for (std::int64_t c = 0; c < batch; ++c) {
        const auto [begin, end] = pieces[static_cast<std::size_t>(batch_first + c)];
        std::string& out = text_[static_cast<std::size_t>(c)];
        const bool continues = batch_first + c == 0 && !carry_.empty();
        const std::size_t kept = continues ? carry_.size() : 0;
        out.resize(kept + static_cast<std::size_t>(end - begin) * 16);
        if (continues) std::memcpy(out.data(), carry_.data(), kept);
        char* p = out.data() + kept;
        for (std::int64_t i = begin; i < end; ++i) {
          p = format_scientific7(p, values[i]);
          const std::int64_t index = first + i;  // the separator depends on the place in the file
          *p++ = (index % 3 == 2 || index + 1 == total) ? '\n' : ' ';
        }
        out.resize(static_cast<std::size_t>(p - out.data()));
        const bool complete = (first + end) % kChunkValues == 0 || first + end == total;
        if (gzip_ && complete) gzip_member(out.data(), out.size(), packed_[static_cast<std::size_t>(c)], path_);
      }
      carry_.clear();
      for (std::int64_t c = 0; c < batch; ++c) {
        const std::int64_t end = pieces[static_cast<std::size_t>(batch_first + c)].second;
        const bool complete = (first + end) % kChunkValues == 0 || first + end == total;
        if (!complete) carry_.swap(text_[static_cast<std::size_t>(c)]);  // the last piece of this call only
        else out_->write(gzip_ ? packed_[static_cast<std::size_t>(c)] : text_[static_cast<std::size_t>(c)]);
      }
    }
  }
  void end_part() override {
    if (carry_.empty()) return;
    emit(carry_);
    carry_.clear();
  }
  void emit(const std::string& text) {
    if (!gzip_) return out_->write(text);
    std::string member;
    gzip_member(text.data(), text.size(), member, path_);
    out_->write(member);
  }

  bool gzip_;
  int team_;
  std::vector<std::string> text_, packed_;
  std::string carry_;  // the formatted text of a chunk the last call began
};

// APBS's binary OpenDX (Vgrid_writeDXBIN): the text header with "binary data follows", the
// values as 8-byte IEEE doubles, little-endian, x slowest, then a newline and the text footer.
class DxBinaryWriter final : public Writer {
 public:
  DxBinaryWriter(std::unique_ptr<Sink> out, const std::string& path, const Lattice& lattice, const Part& part,
                 const std::vector<std::string>& comments)
      : Writer(std::move(out), path, lattice, part), header_bytes_(dx_header(lattice, comments, true).size()) {
    if (part.header) out_->write(dx_header(lattice, comments, true));
  }
  // Where a value's bytes start in the file (the header's length is the same on every rank).
  std::uint64_t offset_of(std::int64_t value) const override {
    return header_bytes_ + 8 * static_cast<std::uint64_t>(value);
  }
  void end() override {
    const std::string footer = std::string("\n") + kDxFooter;
    if (part_.placed)
      out_->rewrite_at(offset_of(lattice_.size()), footer.data(), footer.size());
    else
      out_->write(footer);
  }

 private:
  void put(const double* values, std::int64_t count) override {
    static_assert(std::endian::native == std::endian::little, "binary OpenDX is written little-endian");
    out_->write(values, static_cast<std::size_t>(count) * sizeof(double));
  }
  std::uint64_t header_bytes_;
};

// CCP4/MRC, mode 2 (float32), the header prepared by gemmi. The file's axis order is the map's
// own: columns along z, rows along y, sections along x (MAPC, MAPR, MAPS = 3, 2, 1), so each
// slab of x-planes is a contiguous run of the file (gemmi, mrcfile, GridDataFormats, ChimeraX and
// VMD honour the axis words). The statistics words (DMIN, DMAX, DMEAN, RMS) are filled at the
// end from sums kept a row at a time in order (the same bits for any slab size); a file that
// cannot be rewritten (a pipe) keeps the MRC-2014 "not determined" values.
class Ccp4Writer final : public Writer {
 public:
  Ccp4Writer(std::unique_ptr<Sink> out, const std::string& path, const Lattice& lattice, const Part& part, int threads)
      : Writer(std::move(out), path, lattice, part), team_(writer_team(threads)) {
    for (auto n : lattice.dims)
      if (n > std::int64_t{0x7fffffff}) throw Error(path + ": lattice too large for a CCP4/MRC file (2^31 points an axis)");
    auto& grid = header_.grid;
    grid.nu = static_cast<int>(lattice.dims[2]);  // columns: z
    grid.nv = static_cast<int>(lattice.dims[1]);
    grid.nw = static_cast<int>(lattice.dims[0]);  // sections: x
    grid.axis_order = gemmi::AxisOrder::ZYX;
    grid.spacegroup = &gemmi::get_spacegroup_p1();
    // A vertex-centred lattice of n points spans (n-1)*h; a cell of n*h makes the voxel
    // size equal to the spacing, as ChimeraX and VMD expect for non-periodic maps.
    grid.unit_cell.set(lattice.dims[0] * lattice.spacing, lattice.dims[1] * lattice.spacing,
                       lattice.dims[2] * lattice.spacing, 90, 90, 90);
    header_.prepare_ccp4_header_except_mode_and_stats();
    header_.set_header_i32(4, 2);                                          // MODE: float32
    header_.set_header_float(50, static_cast<float>(lattice.origin.x));  // ORIGIN (MRC-2014), Angstrom
    header_.set_header_float(51, static_cast<float>(lattice.origin.y));
    header_.set_header_float(52, static_cast<float>(lattice.origin.z));
    set_statistics(0, -1, -2, -1);  // MRC-2014: DMAX < DMIN, DMEAN < both, RMS < 0: not determined
    if (part.header) out_->write(header_.ccp4_header.data(), header_.ccp4_header.size() * 4);
  }
  // The values follow the 1024-byte header and gemmi's symmetry record (NSYMBT bytes).
  std::uint64_t offset_of(std::int64_t value) const override {
    return header_.ccp4_header.size() * 4 + 4 * static_cast<std::uint64_t>(value);
  }
  // Every rank's row sums to rank 0, folded there in row order: the header's statistics are the
  // same bits as one process's.
  void collect(const Ranks& ranks) override {
    std::vector<double> mine;
    mine.reserve(4 * rank_rows_.size());
    for (const RowSums& r : rank_rows_) mine.insert(mine.end(), {r.low, r.high, r.sum, r.squares});
    const std::vector<double> all = ranks.gather(mine);
    total_ = RowSums{};
    for (std::size_t i = 0; i + 3 < all.size(); i += 4) fold(RowSums{all[i], all[i + 1], all[i + 2], all[i + 3]});
  }
  void end() override {
    const double n = static_cast<double>(lattice_.size());
    const double mean = total_.sum / n;
    set_statistics(total_.low, total_.high, mean, std::sqrt(std::max(0.0, total_.squares / n - mean * mean)));
    out_->rewrite_at(0, header_.ccp4_header.data(), 256 * 4);
  }

 private:
  struct RowSums {
    double low = HUGE_VAL, high = -HUGE_VAL, sum = 0, squares = 0;
  };
  void fold(const RowSums& s) {
    total_.low = std::min(total_.low, s.low), total_.high = std::max(total_.high, s.high);
    total_.sum += s.sum, total_.squares += s.squares;
  }
  void set_statistics(double low, double high, double mean, double rms) {
    header_.set_header_float(20, static_cast<float>(low));
    header_.set_header_float(21, static_cast<float>(high));
    header_.set_header_float(22, static_cast<float>(mean));
    header_.set_header_float(55, static_cast<float>(rms));
  }
  void put(const double* values, std::int64_t count) override {
    const std::int64_t nz = lattice_.dims[2];
    if (written_values_ % nz != 0 || count % nz != 0) throw Error(path_ + ": internal: MRC slabs must hold whole rows");
    const std::int64_t rows = count / nz;
    // A piece of whole rows at a time, converted on every core, then handed to the file: the
    // disk writes one piece while the next is converted. (Converting a whole 3 GiB slab first
    // left the disk idle for a seventh of the time: 0.86 of its rate on the H100 machine.)
    const std::int64_t piece_rows = std::max<std::int64_t>(1, kCcp4PieceValues / nz);
    for (std::int64_t first = 0; first < rows; first += piece_rows) {
      const std::int64_t last = std::min(rows, first + piece_rows);
      const double* from = values + first * nz;
      converted_.resize(static_cast<std::size_t>((last - first) * nz));
      row_sums_.resize(static_cast<std::size_t>(last - first));
#pragma omp parallel for num_threads(team_) schedule(static) if ((last - first) * nz > (1 << 18))
      for (std::int64_t r = 0; r < last - first; ++r) {
        RowSums s;
        for (std::int64_t k = r * nz; k < (r + 1) * nz; ++k) {
          const float v = static_cast<float>(from[k]);
          converted_[static_cast<std::size_t>(k)] = v;
          s.low = std::min(s.low, static_cast<double>(v)), s.high = std::max(s.high, static_cast<double>(v));
          s.sum += v, s.squares += static_cast<double>(v) * v;
        }
        row_sums_[static_cast<std::size_t>(r)] = s;
      }
      if (part_.distributed)  // kept for rank 0 (collect)
        rank_rows_.insert(rank_rows_.end(), row_sums_.begin(), row_sums_.end());
      else
        for (const RowSums& s : row_sums_) fold(s);  // in row order: the same sums for any slab size
      out_->write(converted_.data(), converted_.size() * sizeof(float));
    }
  }

  int team_;
  gemmi::Ccp4<float> header_;
  std::vector<float> converted_;
  std::vector<RowSums> row_sums_, rank_rows_;
  RowSums total_;
};

}  // namespace

MapFormat guess_map_format(const std::string& path) {
  std::string name = path;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.ends_with(".mrc") || name.ends_with(".map") || name.ends_with(".ccp4")) return MapFormat::ccp4;
  if (name.ends_with(".dx.gz")) return MapFormat::dx_gzip;
  if (name.ends_with(".dxbin")) return MapFormat::dx_binary;
  if (name.ends_with(".dx")) return MapFormat::dx;
  throw Error(path + ": unknown map format: expected a name ending in .dx, .dx.gz, .dxbin (APBS's binary OpenDX), "
                     ".mrc, .map or .ccp4");
}

std::string to_string(MapFormat format) {
  switch (format) {
    case MapFormat::dx: return "OpenDX";
    case MapFormat::dx_gzip: return "gzip-compressed OpenDX";
    case MapFormat::dx_binary: return "binary OpenDX";
    case MapFormat::ccp4: return "CCP4/MRC";
  }
  return "?";
}

namespace {

std::unique_ptr<Writer> make_writer(MapFormat format, std::unique_ptr<Sink> out, const std::string& path,
                                    const Lattice& lattice, const Part& part, const std::vector<std::string>& comments,
                                    int threads) {
  switch (format) {
    case MapFormat::dx: return std::make_unique<DxTextWriter>(std::move(out), path, lattice, part, comments, false, threads);
    case MapFormat::dx_gzip:
      return std::make_unique<DxTextWriter>(std::move(out), path, lattice, part, comments, true, threads);
    case MapFormat::dx_binary: return std::make_unique<DxBinaryWriter>(std::move(out), path, lattice, part, comments);
    case MapFormat::ccp4: return std::make_unique<Ccp4Writer>(std::move(out), path, lattice, part, threads);
  }
  throw Error("internal: unknown map format");
}

// ---- A map file written by the ranks of a job (issue 22) ----------------------------------

// A rank's bytes sent to rank 0, which writes them after its own and every earlier rank's: a
// message of the length, then the bytes; a length of 0 ends the rank's part.
constexpr int kMapBytesTag = 21;

class RootSink final : public Sink {
 public:
  explicit RootSink(const Ranks& ranks) : ranks_(ranks) {}
  void write(const void* data, std::size_t bytes) override {
    if (bytes == 0) return;
    const std::uint64_t length = bytes;
    ranks_.send(&length, sizeof length, 0, kMapBytesTag);
    ranks_.send(data, bytes, 0, kMapBytesTag);
    written_ += bytes;
  }
  bool rewrite_at(std::uint64_t, const void*, std::size_t) override { return false; }
  void close() override {
    const std::uint64_t end = 0;
    ranks_.send(&end, sizeof end, 0, kMapBytesTag);
  }
  std::uint64_t written() const override { return written_; }

 private:
  const Ranks& ranks_;
  std::uint64_t written_ = 0;
};

// Rank 0: every other rank's bytes, in rank order, after its own.
void write_other_ranks(const Ranks& ranks, Sink& out) {
  std::vector<char> buffer;
  for (int from = 1; from < ranks.size(); ++from)
    for (;;) {
      std::uint64_t length = 0;
      ranks.receive(&length, sizeof length, from, kMapBytesTag);
      if (length == 0) break;
      buffer.resize(static_cast<std::size_t>(length));
      ranks.receive(buffer.data(), buffer.size(), from, kMapBytesTag);
      out.write(buffer.data(), buffer.size());
    }
}

// A rank's values straight into their place in the shared file (MPI-IO), in pieces of 16 MiB.
class PlacedSink final : public Sink {
 public:
  explicit PlacedSink(std::shared_ptr<RankFile> file) : file_(std::move(file)) {}
  void start_at(std::uint64_t offset) { offset_ = offset - written_; }
  void write(const void* data, std::size_t bytes) override {
    file_->write_at(offset_ + written_, data, bytes);
    written_ += bytes;
  }
  bool rewrite_at(std::uint64_t offset, const void* data, std::size_t bytes) override {
    file_->write_at(offset, data, bytes);
    return true;
  }
  void close() override { file_->close(); }
  std::uint64_t written() const override { return written_; }

 private:
  std::shared_ptr<RankFile> file_;
  std::uint64_t offset_ = 0, written_ = 0;
};

// Every rank's part of the file: text through rank 0 (its length is known only once formatted),
// fixed-size values (MRC, binary OpenDX) in place when the target is a regular file.
void write_rank_part(const Ranks& ranks, MapFormat format, const std::string& temporary, bool placed,
                     const std::string& path, const Lattice& lattice, const std::vector<std::string>& comments,
                     std::int64_t first, std::int64_t last, const std::function<void(MapFileWriter&)>& produce,
                     int threads) {
  Part part;
  part.first = first, part.last = last;
  part.header = part.footer = ranks.root();
  part.placed = placed;
  part.distributed = true;
  std::unique_ptr<Sink> out;
  PlacedSink* placed_sink = nullptr;
  if (placed) {
    auto sink = std::make_unique<PlacedSink>(std::make_shared<RankFile>(ranks, temporary, path));
    placed_sink = sink.get();
    out = std::move(sink);
  } else if (ranks.root()) {
    // The temporary rank 0 made before the barrier, opened without O_CREAT: a rank that has
    // failed since removed it, and making it again here would leave it behind once mpirun
    // stops rank 0.
    out = std::make_unique<File>(temporary, path, true);
  } else {
    out = std::make_unique<RootSink>(ranks);
  }
  std::unique_ptr<Writer> writer = make_writer(format, std::move(out), path, lattice, part, comments, threads);
  // Rank 0 has written the header from offset 0 and goes on with its values; the others start at theirs.
  if (placed_sink && !ranks.root()) placed_sink->start_at(writer->offset_of(first));
  produce(*writer);
  writer->finish_part();
  if (!placed && ranks.root()) write_other_ranks(ranks, writer->sink());
  writer->collect(ranks);
  if (ranks.root()) writer->end();
  writer->sink().close();  // placed: collective; RootSink: the end of this rank's bytes
}

}  // namespace

void write_map_file(const std::string& path, MapFormat format, const Lattice& lattice,
                    const std::vector<std::string>& comments, const std::function<void(MapFileWriter&)>& produce,
                    int threads) {
  validate(lattice);
  write_atomically(path, [&](const std::string& temporary) {
    Part part;
    part.last = lattice.size();
    std::unique_ptr<Writer> writer =
        make_writer(format, std::make_unique<File>(temporary, path), path, lattice, part, comments, threads);
    produce(*writer);
    writer->finish();
  });
}

void write_map_file(const Ranks& ranks, const std::string& path, const Lattice& lattice,
                    const std::vector<std::string>& comments, std::int64_t row_begin, std::int64_t row_end,
                    const std::function<void(MapFileWriter&)>& produce, int threads) {
  validate(lattice);
  const std::int64_t nz = lattice.dims[2];
  if (!ranks.distributed()) {
    if (row_begin != 0 || row_end != lattice.rows())
      throw Error(fmt::format("internal: one rank writes all {} rows of {}, not [{}, {})", lattice.rows(), path,
                              row_begin, row_end));
    return write_map_file(path, lattice, comments, produce, threads);
  }
  const MapFormat format = guess_map_format(path);
  // Every rank knows the temporary's name, and removes it if it is stopped or fails (main's
  // error path; the job's file system is shared), before rank 0 makes it: a job that fails
  // leaves nothing behind, whichever rank fails and whether or not rank 0 sees a signal.
  if (ranks.root()) {
    write_atomically(path, [&](const std::string& temporary) {
      // Values of a fixed size go straight to their place from every rank where the file can
      // seek; text, and any stream (a pipe, /dev/stdout), through rank 0.
      const bool placed = (format == MapFormat::ccp4 || format == MapFormat::dx_binary) && !is_stream_target(temporary);
      // Made empty here (then opened by every rank, or rank 0's writer) before any rank can fail
      // and remove it: a removal never precedes the making.
      if (!is_stream_target(temporary)) File(temporary, path).close();
      std::string plan = std::string(placed ? "1" : "0") + temporary;
      ranks.broadcast(plan);
      ranks.barrier();
      write_rank_part(ranks, format, temporary, placed, path, lattice, comments, row_begin * nz, row_end * nz, produce,
                      threads);
    });
  } else {
    std::string plan;
    ranks.broadcast(plan);
    const std::string temporary = plan.substr(1);
    const bool stream = is_stream_target(temporary);
    std::optional<RemoveOnSignal> job_temporary;
    if (!stream) job_temporary.emplace(temporary);
    ranks.barrier();
    try {
      write_rank_part(ranks, format, temporary, plan[0] == '1', path, lattice, comments, row_begin * nz,
                      row_end * nz, produce, threads);
    } catch (...) {
      // Removed here, as rank 0's write_atomically does: once the exception has left this scope
      // the temporary is no longer registered, so main's error path (remove_registered_paths)
      // would not find it, and the job's only other remover is rank 0's signal handler, which
      // mpirun's SIGKILL may pre-empt on a loaded machine (a test left it there in 2 runs of 11).
      if (!stream) std::remove(temporary.c_str());
      throw;
    }
  }
  ranks.barrier();  // every rank returns once the file is in place
}

void write_map_file(const std::string& path, const Lattice& lattice, const std::vector<std::string>& comments,
                    const std::function<void(MapFileWriter&)>& produce, int threads) {
  write_map_file(path, guess_map_format(path), lattice, comments, produce, threads);
}

namespace {

void write_whole_map(const std::string& path, MapFormat format, const Map& map,
                     const std::vector<std::string>& comments, const std::function<void(double)>& progress) {
  const Lattice& lattice = map.lattice;
  if (static_cast<std::int64_t>(map.values.size()) != lattice.size())
    throw Error(path + ": the map holds a different number of values than its lattice");
  write_map_file(path, format, lattice, comments, [&](MapFileWriter& writer) {
    // Whole rows, about 16 M values at a time, so that progress moves.
    const std::int64_t nz = lattice.dims[2], rows = lattice.rows();
    const std::int64_t step = std::max<std::int64_t>(1, (std::int64_t{1} << 24) / nz);
    for (std::int64_t r = 0; r < rows; r += step) {
      const std::int64_t end = std::min(rows, r + step);
      writer.write(map.values.data() + r * nz, (end - r) * nz);
      if (progress) progress(static_cast<double>(end) / static_cast<double>(rows));
    }
  });
}

}  // namespace

void write_dx(const std::string& path, const Map& map, const std::vector<std::string>& comments,
              const std::function<void(double)>& progress) {
  write_whole_map(path, MapFormat::dx, map, comments, progress);
}

void write_ccp4(const std::string& path, const Map& map) { write_whole_map(path, MapFormat::ccp4, map, {}, {}); }

void write_map(const std::string& path, const Map& map, const std::vector<std::string>& comments,
               const std::function<void(double)>& progress) {
  write_whole_map(path, guess_map_format(path), map, comments, progress);
}

std::uint64_t map_file_bytes(const std::string& path, const Lattice& lattice) {
  const auto points = static_cast<std::uint64_t>(lattice.size());
  switch (guess_map_format(path)) {
    case MapFormat::ccp4: return 1024 + 80 + 4 * points;
    case MapFormat::dx_binary: return 2048 + 8 * points;
    // Text compressed at level 1 keeps under half its size; counted at half, to be safe.
    case MapFormat::dx_gzip: return dx_file_bytes(lattice) / 2;
    case MapFormat::dx: return dx_file_bytes(lattice);
  }
  return dx_file_bytes(lattice);
}

std::uint64_t map_write_memory_bytes(const std::string& path, const Lattice& lattice, int threads) {
  // Besides File's two staging blocks (32 MiB, as a thread's stack: not counted).
  switch (guess_map_format(path)) {
    case MapFormat::ccp4:  // a piece in float32 (at least a row, at most the map)
      return 4 * static_cast<std::uint64_t>(
                     std::min(lattice.size(), std::max<std::int64_t>(kCcp4PieceValues, lattice.dims[2])));
    case MapFormat::dx_binary: return 0;
    case MapFormat::dx_gzip:  // text and compressed chunks
      return 2 * static_cast<std::uint64_t>(writer_team(threads)) * 16 * static_cast<std::uint64_t>(kChunkValues);
    case MapFormat::dx:
      return static_cast<std::uint64_t>(writer_team(threads)) * 16 * static_cast<std::uint64_t>(kChunkValues);
  }
  return 0;
}

std::uint64_t dx_file_bytes(const Lattice& lattice) {
  // "-1.2345678e+00" and a separator per value, ~1 KiB of header and comments.
  return 15 * static_cast<std::uint64_t>(lattice.size()) + 1024;
}

}  // namespace nbkit::io
