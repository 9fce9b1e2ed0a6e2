#pragma once
// A progress bar for long runs: drawn on a terminal (stderr), silent when stderr is piped
// or redirected, so logs stay clean.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

namespace nbkit {

class ProgressBar {
 public:
  // enabled: draw at all (false for --quiet). Drawing also needs stderr to be a terminal.
  ProgressBar(std::string label, bool enabled = true);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(double fraction);  // 0..1; redraws at most ~10 times a second
  // The same with a rate or other note drawn after the time ("12.3 ns/day").
  void update(double fraction, const std::string& note);
  void finish();                 // clears the bar's line
  void clear();                  // clears the line for other output; the next update redraws

  bool active() const { return active_; }

 private:
  void draw(double fraction);
  std::string label_, note_;
  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// Progress of a parallel loop of `total` units: whichever thread finishes a unit calls
// done_one(), and the callback hears the fraction done about `reports` times, one thread at a
// time, in increasing order; finish() reports 1.0. Any thread may report: a loop that let only
// OpenMP's thread 0 report went silent when the other threads drew every block (16 threads on
// a 2-core machine, or a fast GPU host), and one that reported on multiples of the step missed
// them all. A thread that finds another reporting moves on; it never waits.
// A callback may throw to stop the loop (the Python module's Ctrl-C): the exception is kept,
// cancelled() turns true so that the loop skips its remaining units, and finish() rethrows it
// on the calling thread (an exception must not leave an OpenMP region).
class ParallelProgress {
 public:
  // callback may be null or empty: then nothing is reported and done_one() costs one test.
  ParallelProgress(const std::function<void(double)>* callback, std::int64_t total, std::int64_t reports = 100);
  ParallelProgress(const ParallelProgress&) = delete;
  ParallelProgress& operator=(const ParallelProgress&) = delete;

  bool active() const { return active_; }
  void done_one() {
    if (!active_) return;
    const std::int64_t now = done_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (now >= next_.load(std::memory_order_relaxed)) report();
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  void finish();

 private:
  void report();
  const std::function<void(double)>* callback_;
  bool active_;
  std::int64_t total_, step_;
  std::atomic<std::int64_t> done_{0}, next_;
  std::atomic<bool> cancelled_{false};
  std::exception_ptr error_;  // what a callback threw (written under reporting_)
  std::mutex reporting_;
};

}  // namespace nbkit
