#include "io/text.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "nbkit/core/error.hpp"

namespace nbkit::io {

namespace {

// What a binary file is, from its first bytes (the formats a user of nbkit may hand to a
// text reader by mistake), or empty when unknown.
std::string binary_kind(std::string_view head) {
  auto starts = [&](std::string_view magic) { return head.substr(0, magic.size()) == magic; };
  auto int32_at = [&](std::size_t offset, bool big_endian) -> std::uint32_t {
    if (head.size() < offset + 4) return 0;
    const auto* b = reinterpret_cast<const unsigned char*>(head.data() + offset);
    return big_endian ? (std::uint32_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3]
                      : (std::uint32_t{b[3]} << 24) | (b[2] << 16) | (b[1] << 8) | b[0];
  };
  if (head.size() >= 8 && head.substr(4, 4) == "CORD") return "a DCD trajectory";
  if (int32_at(0, true) == 1995) return "a GROMACS XTC trajectory";
  if (int32_at(0, true) == 1993) return "a GROMACS TRR trajectory";
  if (starts("\x89HDF\r\n\x1a\n")) return "an HDF5 file";
  if (starts("\x89PNG")) return "a PNG image";
  if (starts("CDF\x01") || starts("CDF\x02")) return "a NetCDF file (an AMBER trajectory?)";
  if (starts("BZh")) return "a bzip2-compressed file";
  if (starts("\xfd" "7zXZ")) return "an xz-compressed file";
  if (starts("PK\x03\x04")) return "a zip archive";
  if (head.size() >= 212 && head.substr(208, 3) == "MAP") return "a CCP4/MRC map";
  return "";
}

std::string gunzip_file(const std::string& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> in(gzopen(path.c_str(), "rb"), &gzclose);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
  std::string text;
  std::array<char, 1 << 16> buffer;
  for (;;) {
    const int n = gzread(in.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(in.get(), &code);
      throw Error(fmt::format("{}: not a readable gzip file ({})", path, message ? message : "read error"));
    }
    if (n == 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace

namespace {

std::string read_bytes(const std::string& path, const std::string& expected) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) throw Error(path + ": no such file");
  if (fs::is_directory(status)) throw Error(fmt::format("{}: is a directory, not {}", path, expected));
  std::FILE* raw = std::fopen(path.c_str(), "rb");
  if (!raw) throw Error(path + ": cannot open: " + std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(raw, &std::fclose);
  std::string text;
  std::array<char, 1 << 16> buffer;
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), in.get())) text.append(buffer.data(), n);
  if (std::ferror(in.get())) throw Error(path + ": read error: " + std::strerror(errno));
  // gzip (".pqr.gz", ".dx.gz", or any name): read through zlib.
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b)
    text = gunzip_file(path);
  return text;
}

}  // namespace

std::string read_file_bytes(const std::string& path) { return read_bytes(path, "a file"); }

std::string read_file_text(const std::string& path, const std::string& expected) {
  std::string text = read_bytes(path, expected);
  // A text reader given a binary file says what the file is rather than that it holds no records.
  const std::string_view head(text.data(), std::min<std::size_t>(text.size(), 4096));
  if (head.find('\0') != std::string_view::npos) {
    const std::string kind = binary_kind(head);
    throw Error(fmt::format("{}: is {}, not {}", path, kind.empty() ? "a binary file" : kind, expected));
  }
  return text;
}

}  // namespace nbkit::io
