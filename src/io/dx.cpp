// Reading OpenDX scalar fields, as APBS writes them (APBS, src/mg/vgrid.c Vgrid_writeDX and
// Vgrid_writeDXBIN); the writers are map_writer.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>

#include "io/text.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/core/error.hpp"
#include "nbkit/core/memory.hpp"
#include "nbkit/io/atomic_file.hpp"
#include "nbkit/io/map_files.hpp"

namespace nbkit::io {

namespace {

// Reads "keyword value..." header lines and the data block of an OpenDX file.
class DxParser {
 public:
  DxParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Map parse() {
    Map map;
    bool have_positions = false, have_origin = false, have_array = false, binary = false;
    int deltas = 0;
    std::int64_t items = 0;
    while (next_line()) {
      const auto fields = split_whitespace(line_);
      if (fields.empty() || fields[0].starts_with("#")) continue;
      if (fields[0] == "object" && contains(fields, "gridpositions")) {
        const auto counts = numbers_after(fields, "counts", 3, "gridpositions counts");
        for (int a = 0; a < 3; ++a) {
          if (counts[a] < 1 || counts[a] != std::floor(counts[a]) || counts[a] > (1 << 20))
            fail("counts", "expected three whole numbers from 1 to 1048576");
          map.lattice.dims[a] = static_cast<std::int64_t>(counts[a]);
        }
        have_positions = true;
      } else if (fields[0] == "origin") {
        const auto o = numbers_after(fields, "origin", 3, "origin");
        map.lattice.origin = {o[0], o[1], o[2]};
        have_origin = true;
      } else if (fields[0] == "delta") {
        const auto d = numbers_after(fields, "delta", 3, "delta");
        if (deltas >= 3) fail("delta", "expected exactly three delta lines");
        for (int a = 0; a < 3; ++a)
          if (a != deltas && d[a] != 0) fail("delta", "expected an axis-aligned lattice (off-diagonal deltas of 0)");
        if (!(d[deltas] > 0)) fail("delta", "expected a positive spacing");
        if (deltas == 0) map.lattice.spacing = d[0];
        else if (std::fabs(d[deltas] - map.lattice.spacing) > 1e-6 * map.lattice.spacing)
          fail("delta", "expected the same spacing along x, y and z");
        ++deltas;
      } else if (fields[0] == "object" && contains(fields, "array")) {
        const auto n = numbers_after(fields, "items", 1, "items");
        // At most 2^53, where doubles still count every integer (and a cast to int64 is defined).
        if (n[0] < 0 || n[0] != std::floor(n[0]) || n[0] > 9007199254740992.0)
          fail("items", "expected a whole number of items");
        items = static_cast<std::int64_t>(n[0]);
        binary = contains(fields, "binary");
        have_array = true;
        break;  // the data follow
      }
    }
    if (!have_positions) fail("", "no 'object 1 class gridpositions counts nx ny nz' line: not an OpenDX grid");
    if (!have_origin) fail("origin", "no origin line before the data");
    if (deltas != 3) fail("delta", "expected three delta lines before the data");
    if (!have_array) fail("", "no 'object 3 class array ... data follows' line");
    if (items != map.lattice.size())
      fail("items", fmt::format("expected {} items for a {}x{}x{} grid, found {}", map.lattice.size(),
                                map.lattice.dims[0], map.lattice.dims[1], map.lattice.dims[2], items));
    check_memory(static_cast<std::uint64_t>(items) * sizeof(double), source_ + ": the map");
    if (binary) {  // APBS's dxbin: 8-byte little-endian doubles right after the header line
      const std::uint64_t bytes = static_cast<std::uint64_t>(items) * sizeof(double);
      if (text_.size() < position_ || text_.size() - position_ < bytes)
        fail("data", fmt::format("expected {} binary doubles ({} bytes), the file ends after {} bytes", items, bytes,
                                 text_.size() - std::min(text_.size(), position_)));
      static_assert(std::endian::native == std::endian::little, "binary OpenDX is read little-endian");
      map.values.resize(static_cast<std::size_t>(items));
      std::memcpy(map.values.data(), text_.data() + position_, bytes);
      for (std::size_t p = 0; p < map.values.size(); ++p)
        if (!std::isfinite(map.values[p])) fail("data", fmt::format("value {} is not a finite number", p));
      return map;
    }
    map.values.reserve(static_cast<std::size_t>(items));
    while (static_cast<std::int64_t>(map.values.size()) < items) {
      if (!next_line()) fail("data", fmt::format("expected {} values, the file ends after {}", items, map.values.size()));
      for (const auto token : split_whitespace(line_)) {
        if (static_cast<std::int64_t>(map.values.size()) == items) {
          if (token.starts_with("attribute") || token.starts_with("object")) break;
          fail("data", "more values than items");
        }
        const auto value = parse_number(token);
        if (!value) fail("data", "expected a number, got " + quoted(token));
        map.values.push_back(*value);
      }
    }
    return map;
  }

 private:
  bool next_line() {
    if (position_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', position_);
    if (end == std::string_view::npos) end = text_.size();
    line_ = text_.substr(position_, end - position_);
    position_ = end + 1;
    ++line_number_;
    return true;
  }
  static bool contains(const std::vector<std::string_view>& fields, std::string_view word) {
    for (auto f : fields)
      if (f == word) return true;
    return false;
  }
  std::vector<double> numbers_after(const std::vector<std::string_view>& fields, std::string_view keyword, int count,
                                    const std::string& field) {
    std::size_t i = 0;
    while (i < fields.size() && fields[i] != keyword) ++i;
    if (i + static_cast<std::size_t>(count) >= fields.size())
      fail(field, fmt::format("expected {} number{} after '{}'", count, count == 1 ? "" : "s", keyword));
    std::vector<double> values;
    for (int c = 1; c <= count; ++c) {
      const auto value = parse_number(fields[i + c]);
      if (!value || !std::isfinite(*value)) fail(field, "expected a finite number, got " + quoted(fields[i + c]));
      values.push_back(*value);
    }
    return values;
  }
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw InputError(source_, line_number_, field, problem);
  }

  std::string_view text_;
  std::string source_;
  std::size_t position_ = 0;
  std::int64_t line_number_ = 0;
  std::string_view line_;
};

}  // namespace

Map parse_dx(std::string_view text, const std::string& source) { return DxParser(text, source).parse(); }

Map read_dx(const std::string& path) { return parse_dx(read_file_bytes(path), path); }

}  // namespace nbkit::io
