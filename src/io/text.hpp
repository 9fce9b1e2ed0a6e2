#pragma once
// Small text helpers shared by the hand-written readers (PQR, OpenDX, CHARMM's files).
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nbkit::io {

// The whole file as text (gzip-compressed files are read through zlib, whatever their name).
// Throws nbkit::Error naming the path when it is missing, a directory or a binary file (saying
// which kind, when known: a DCD or XTC trajectory, HDF5, ...), with `expected` in the message
// ("a PQR file").
std::string read_file_text(const std::string& path, const std::string& expected = "a text file");

// The whole file's bytes, through zlib when gzip-compressed, with no test for text (formats
// with a text header and binary data: APBS's binary OpenDX).
std::string read_file_bytes(const std::string& path);

// The lines of a text one at a time ('\n' removed), with their 1-based numbers for error
// messages.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (position_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', position_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(position_, end - position_);
    position_ = end + 1;
    ++number_;
    return true;
  }
  std::int64_t number() const { return number_; }

 private:
  std::string_view text_;
  std::size_t position_ = 0;
  std::int64_t number_ = 0;
};

inline std::vector<std::string_view> split_whitespace(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

// The whole token as a number, or nothing (accepts a leading '+', as Fortran writers emit).
inline std::optional<double> parse_number(std::string_view token) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  double value = 0;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

// The text in capitals (CHARMM's names and keywords are case-insensitive).
inline std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Quote a token for an error message, cut short if long.
inline std::string quoted(std::string_view token) {
  std::string shown(token.substr(0, 40));
  if (token.size() > 40) shown += "...";
  return "'" + shown + "'";
}

}  // namespace nbkit::io
