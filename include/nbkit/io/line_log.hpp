#pragma once
// A text table that grows as a run goes (md's thermo.csv, nbody's diagnostics.csv): each
// line reaches the file when it is written (flushed), so a run that is killed or fails
// keeps every line before it, and the file reads at any moment. Written in place, not
// renamed (a stream, as DcdWriter's trajectories).
#include <cstdio>
#include <memory>
#include <string>

namespace nbkit::io {

class LineLog {
 public:
  explicit LineLog(const std::string& path);  // truncates; throws nbkit::Error naming the path
  void write(const std::string& text);        // whole lines (ending in '\n'); flushed; throws on failure
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
};

}  // namespace nbkit::io
