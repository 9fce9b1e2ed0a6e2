#include "nbkit/core/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace nbkit {

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)),
      active_(enabled && isatty(fileno(stderr)) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(double fraction) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && fraction < 1.0) return;
  last_draw_ = now;
  draw(std::clamp(fraction, 0.0, 1.0));
}

void ProgressBar::update(double fraction, const std::string& note) {
  if (!active_) return;
  note_ = note;
  update(fraction);
}

void ProgressBar::draw(double fraction) {
  constexpr int width = 40;
  const int filled = static_cast<int>(fraction * width);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string eta = "";
  if (fraction > 0.01 && fraction < 1.0) eta = fmt::format(" ETA {:.0f} s", elapsed * (1 - fraction) / fraction);
  fmt::print(stderr, "\r{} [{}{}] {:5.1f}% {:.1f} s{}{}{}\033[K", label_, std::string(filled, '#'),
             std::string(width - filled, '.'), 100.0 * fraction, elapsed, eta, note_.empty() ? "" : ", ", note_);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!active_ || !drawn_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

void ProgressBar::finish() {
  if (!active_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  active_ = false;
}

ParallelProgress::ParallelProgress(const std::function<void(double)>* callback, std::int64_t total,
                                   std::int64_t reports)
    : callback_(callback),
      active_(callback != nullptr && *callback && total > 0),
      total_(std::max<std::int64_t>(total, 1)),
      step_(std::max<std::int64_t>(1, total_ / std::max<std::int64_t>(reports, 1))),
      next_(step_) {}

void ParallelProgress::report() {
  std::unique_lock lock(reporting_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  // Read again under the lock: the count this thread saw may be older than one reported.
  const std::int64_t now = done_.load(std::memory_order_relaxed);
  if (now < next_.load(std::memory_order_relaxed)) return;
  if (cancelled()) return;
  next_.store((now / step_ + 1) * step_, std::memory_order_relaxed);
  try {
    (*callback_)(std::min(1.0, static_cast<double>(now) / static_cast<double>(total_)));
  } catch (...) {
    error_ = std::current_exception();
    cancelled_.store(true, std::memory_order_relaxed);
  }
}

void ParallelProgress::finish() {
  if (!active_) return;
  const std::lock_guard lock(reporting_);
  next_.store(std::numeric_limits<std::int64_t>::max(), std::memory_order_relaxed);
  active_ = false;
  if (error_) std::rethrow_exception(error_);
  (*callback_)(1.0);
}

}  // namespace nbkit
