// nbkit md's checkpoint files (io/checkpoint.hpp has the format).
#include "nbkit/io/checkpoint.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <fstream>
#include <iterator>

#include "nbkit/core/error.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace nbkit::io {

namespace {

constexpr char kMagic[8] = {'N', 'B', 'K', 'I', 'T', 'C', 'H', 'K'};
constexpr std::uint32_t kVersion = 2, kByteOrder = 0x01020304;
constexpr int kTerms = 12;
// magic, version, byte order, atoms, step, time step, box (6), flags (2 x u32), thermostat
// calls, potential, virial, terms; then (version 2) the barostat: flag and padding (2 x u32),
// calls, volume scales (3), moves tried and kept since it adapted (3 + 3)
constexpr std::uint64_t kCheckpointHeaderBytes =
    8 + 4 + 4 + 8 + 8 + 8 + 6 * 8 + 2 * 4 + 8 + 8 + 8 + kTerms * 8 + 2 * 4 + 8 + 3 * 8 + 6 * 8;

std::uint64_t fnv1a(const char* data, std::size_t size) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t k = 0; k < size; ++k) h = (h ^ static_cast<unsigned char>(data[k])) * 1099511628211ull;
  return h;
}

template <class T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

class Reader {
 public:
  explicit Reader(const std::string& data) : data_(data) {}
  template <class T>
  T get() {
    T value;
    std::memcpy(&value, data_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  const char* take(std::size_t bytes) {
    const char* p = data_.data() + at_;
    at_ += bytes;
    return p;
  }

 private:
  const std::string& data_;
  std::size_t at_ = 0;
};

}  // namespace

std::uint64_t checkpoint_file_bytes(std::uint64_t atoms) { return kCheckpointHeaderBytes + 9 * 8 * atoms + 8; }

void write_checkpoint(const std::string& path, const md::Checkpoint& c) {
  const std::uint64_t n = c.x.size();
  std::string out;
  out.reserve(checkpoint_file_bytes(n));
  out.append(kMagic, sizeof kMagic);
  put(out, kVersion), put(out, kByteOrder), put(out, n), put(out, c.step), put(out, c.timestep);
  for (int a = 0; a < 3; ++a) put(out, c.box.lo[static_cast<std::size_t>(a)]);
  for (int a = 0; a < 3; ++a) put(out, c.box.hi[static_cast<std::size_t>(a)]);
  put(out, static_cast<std::uint32_t>(c.thermostat)), put(out, static_cast<std::uint32_t>(c.terms.has_value()));
  put(out, c.thermostat_calls), put(out, c.forces.potential), put(out, c.forces.virial);
  const md::EnergyTerms terms = c.terms.value_or(md::EnergyTerms{});
  for (const auto& [name, value] : terms.named()) put(out, value);
  put(out, static_cast<std::uint32_t>(c.barostat)), put(out, std::uint32_t{0}), put(out, c.barostat_calls);
  for (double v : c.barostat_volume_scale) put(out, v);
  for (std::int64_t v : c.barostat_attempted) put(out, v);
  for (std::int64_t v : c.barostat_accepted) put(out, v);
  for (const auto* v : {&c.x, &c.y, &c.z, &c.vx, &c.vy, &c.vz, &c.forces.fx, &c.forces.fy, &c.forces.fz}) {
    if (v->size() != n) throw Error(fmt::format("{}: a checkpoint's arrays must all hold {} atoms", path, n));
    out.append(reinterpret_cast<const char*>(v->data()), 8 * n);
  }
  put(out, fnv1a(out.data(), out.size()));
  write_atomically(path, [&](const std::string& temporary) {
    std::ofstream file(temporary, std::ios::binary);
    file.write(out.data(), static_cast<std::streamsize>(out.size()));
    file.close();
    if (!file) throw Error(fmt::format("{}: cannot write the checkpoint", path));
  });
}

md::Checkpoint read_checkpoint(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(fmt::format("{}: cannot open the checkpoint", path));
  const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto refuse = [&](const std::string& why) { return Error(fmt::format("{}: not a usable nbkit checkpoint: {}", path, why)); };
  if (data.size() < kCheckpointHeaderBytes + 8) throw refuse(fmt::format("{} bytes, shorter than any checkpoint", data.size()));
  if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) throw refuse("it does not start with NBKITCHK");
  Reader r(data);
  r.get<std::array<char, 8>>();
  const auto version = r.get<std::uint32_t>(), order = r.get<std::uint32_t>();
  if (order != kByteOrder) throw refuse("written on a machine of the other byte order");
  if (version != kVersion) throw refuse(fmt::format("format version {}, this nbkit reads {}", version, kVersion));
  const auto n = r.get<std::uint64_t>();
  if (n > (data.size() / 72) || data.size() != checkpoint_file_bytes(n))
    throw refuse(fmt::format("{} bytes for {} atoms, which need {} (a truncated or appended file)", data.size(), n,
                             checkpoint_file_bytes(n)));
  std::uint64_t stored;
  std::memcpy(&stored, data.data() + data.size() - 8, 8);
  if (stored != fnv1a(data.data(), data.size() - 8)) throw refuse("its checksum does not match (a damaged file)");
  md::Checkpoint c;
  c.step = r.get<std::int64_t>(), c.timestep = r.get<double>();
  for (int a = 0; a < 3; ++a) c.box.lo[static_cast<std::size_t>(a)] = r.get<double>();
  for (int a = 0; a < 3; ++a) c.box.hi[static_cast<std::size_t>(a)] = r.get<double>();
  c.thermostat = r.get<std::uint32_t>() != 0;
  const bool has_terms = r.get<std::uint32_t>() != 0;
  c.thermostat_calls = r.get<std::uint64_t>();
  c.forces.potential = r.get<double>(), c.forces.virial = r.get<double>();
  std::array<double, kTerms> terms{};
  for (double& t : terms) t = r.get<double>();
  if (has_terms) c.terms = md::EnergyTerms::from_values(terms);
  c.barostat = r.get<std::uint32_t>() != 0;
  r.get<std::uint32_t>();
  c.barostat_calls = r.get<std::uint64_t>();
  for (double& v : c.barostat_volume_scale) v = r.get<double>();
  for (std::int64_t& v : c.barostat_attempted) v = r.get<std::int64_t>();
  for (std::int64_t& v : c.barostat_accepted) v = r.get<std::int64_t>();
  for (auto* v : {&c.x, &c.y, &c.z, &c.vx, &c.vy, &c.vz, &c.forces.fx, &c.forces.fy, &c.forces.fz}) {
    v->resize(n);
    std::memcpy(v->data(), r.take(8 * n), 8 * n);
  }
  return c;
}

}  // namespace nbkit::io
