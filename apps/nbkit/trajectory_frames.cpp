// Trajectory frames for the commands (trajectory_frames.hpp).
#include "trajectory_frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

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

bool TrajectoryFrames::advance(bool load) {
  for (;;) {
    // The frame after index_: is it one the range takes?
    const long long k = index_ + 1;
    if (range_.last >= 0 && k > range_.last) return false;
    const bool wanted = k >= range_.first && (k - range_.first) % range_.stride == 0;
    if (!next(wanted && load)) return false;
    index_ = k;
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

bool TrajectoryFrames::next(bool load) {
  if (dcd_) return load ? dcd_->next(frame_) : dcd_->skip();
  if (gromacs_) return gromacs_->next(frame_);  // XTC frames vary in size: read to pass them
  if (index_ + 1 >= static_cast<long long>(models_.size())) return false;
  if (!load) return true;
  const Atoms& m = models_[static_cast<std::size_t>(index_ + 1)];
  frame_.x.assign(m.x.begin(), m.x.end());
  frame_.y.assign(m.y.begin(), m.y.end());
  frame_.z.assign(m.z.begin(), m.z.end());
  frame_.cell = model_cell_;
  return true;
}

}  // namespace nbkit::cli
