#pragma once
// A progress bar for long runs: drawn on a terminal (stderr), silent when stderr is piped
// or redirected, so logs stay clean.
#include <chrono>
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
  void finish();                 // clears the bar's line
  void clear();                  // clears the line for other output; the next update redraws

  bool active() const { return active_; }

 private:
  void draw(double fraction);
  std::string label_;
  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace nbkit
