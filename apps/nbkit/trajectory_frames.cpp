// Trajectory frames for the commands (trajectory_frames.hpp).
#include "trajectory_frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include "nbkit/core/error.hpp"
#include "nbkit/io/cell.hpp"
#include "nbkit/io/structure.hpp"
#include "options.hpp"

namespace nbkit::cli {

TrajectoryFrames::TrajectoryFrames(const std::string& path, const FrameRange& range, std::size_t atoms,
                                   const std::string& structure)
    : path_(path), range_(range) {
  if (range.first < 0 || range.stride < 1 || (range.last >= 0 && range.last < range.first))
    throw Error("--first, --last, --stride: expected 0 <= first <= last (or last = -1 for the end) and stride >= 1");
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) { return std::tolower(c); });
  std::int64_t per_frame = 0;
  if (extension == ".dcd") {
    dcd_ = std::make_unique<io::DcdReader>(path);
    per_frame = dcd_->atoms();
    total_ = dcd_->frames();
  } else if (extension == ".xtc" || extension == ".trr") {
    gromacs_ = std::make_unique<io::GromacsTrajectoryReader>(path);
    per_frame = gromacs_->atoms();
    total_ = -1;  // not in the file: frames are counted as they come
  } else {
    models_ = io::read_models(path);
    per_frame = static_cast<std::int64_t>(models_.front().size());
    total_ = static_cast<std::int64_t>(models_.size());
    if (const auto box = io::read_periodic_box(path)) {
      const Vec3 e = box->edges();
      model_cell_ = std::array<double, 6>{e.x, 90, e.y, 90, 90, e.z};
    }
  }
  if (per_frame != static_cast<std::int64_t>(atoms))
    throw Error(fmt::format("{}: {} per frame, but {} has {}", path, count_of(per_frame, "atom"), structure, atoms));
  if (!advance()) throw Error(fmt::format("{}: no frame at --first {}", path, range.first));
}

TrajectoryFrames::~TrajectoryFrames() {
  if (!reader_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  reader_.join();
}

bool TrajectoryFrames::advance(bool load) {
  if (!read_ahead_) return step(frame_, index_, load);
  if (!load) throw Error("internal: a frame read ahead cannot be passed over");
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return !ready_.empty() || ended_; });
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return false;
  }
  spare_.push_back(std::move(frame_));
  frame_ = std::move(ready_.front().second);
  index_ = ready_.front().first;
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return true;
}

void TrajectoryFrames::read_ahead() {
  if (read_ahead_) return;
  read_ahead_ = true;
  reader_ = std::thread([this, index = index_] { read_frames_ahead(index); });
}

void TrajectoryFrames::read_frames_ahead(long long index) {
  for (;;) {
    io::DcdFrame frame;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return ready_.size() < kReadAhead || stop_; });
      if (stop_) return;
      if (!spare_.empty()) frame = std::move(spare_.back()), spare_.pop_back();
    }
    bool more = false;
    std::exception_ptr error;
    try {
      more = step(frame, index, true);  // the readers are this thread's alone from read_ahead() on
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (more) {
        ready_.emplace_back(index, std::move(frame));
      } else {
        ended_ = true;
        error_ = error;
      }
    }
    changed_.notify_all();
    if (!more) return;
  }
}

bool TrajectoryFrames::step(io::DcdFrame& into, long long& index, bool load) {
  for (;;) {
    // The frame after `index`: is it one the range takes?
    const long long k = index + 1;
    if (range_.last >= 0 && k > range_.last) return false;
    const bool wanted = k >= range_.first && (k - range_.first) % range_.stride == 0;
    if (!next(into, index, wanted && load)) return false;
    index = k;
    if (wanted) return true;
  }
}

void TrajectoryFrames::load(Atoms& target, const std::vector<std::int32_t>& only) const {
  for (std::size_t n = 0; n < target.size(); ++n) {
    const std::size_t a = only.empty() ? n : static_cast<std::size_t>(only[n]);
    target.x[n] = frame_.x[a], target.y[n] = frame_.y[a], target.z[n] = frame_.z[a];
  }
}

long long TrajectoryFrames::expected() const {
  if (total_ < 0) return -1;
  const long long end = range_.last >= 0 ? std::min<long long>(range_.last, total_ - 1) : total_ - 1;
  return std::max<long long>(1, (end - range_.first) / range_.stride + 1);
}

bool TrajectoryFrames::next(io::DcdFrame& into, long long index, bool load) {
  if (dcd_) return load ? dcd_->next(into) : dcd_->skip();
  if (gromacs_) return gromacs_->next(into);  // XTC frames vary in size: read to pass them
  if (index + 1 >= static_cast<long long>(models_.size())) return false;
  if (!load) return true;
  const Atoms& m = models_[static_cast<std::size_t>(index + 1)];
  into.x.assign(m.x.begin(), m.x.end());
  into.y.assign(m.y.begin(), m.y.end());
  into.z.assign(m.z.begin(), m.z.end());
  into.cell = model_cell_;
  return true;
}

}  // namespace nbkit::cli
