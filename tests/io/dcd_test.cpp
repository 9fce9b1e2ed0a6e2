// DCD trajectories: round trips with and without unit cells, big-endian files, and clear
// errors for truncated or corrupt files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include "nbkit/core/error.hpp"
#include "nbkit/io/dcd.hpp"
#include "test_support.hpp"

namespace nbkit::io {

namespace {

std::vector<DcdFrame> random_frames(int frames, int atoms, bool cell, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-50, 50);
  std::vector<DcdFrame> out(static_cast<std::size_t>(frames));
  for (DcdFrame& f : out) {
    for (auto* axis : {&f.x, &f.y, &f.z}) {
      axis->resize(static_cast<std::size_t>(atoms));
      for (float& v : *axis) v = u(rng);
    }
    if (cell) f.cell = std::array<double, 6>{40.5, 90, 41.5, 90, 90, 42.5};
  }
  return out;
}

std::vector<DcdFrame> read_all(const std::string& path) {
  DcdReader reader(path);
  std::vector<DcdFrame> frames;
  DcdFrame f;
  while (reader.next(f)) frames.push_back(f);
  return frames;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST(Dcd, RoundTripWithAndWithoutUnitCells) {
  test::ScratchDir dir;
  for (const bool cell : {false, true}) {
    const auto frames = random_frames(5, 37, cell, 3);
    write_dcd(dir.file("t.dcd"), frames, 2.0);
    DcdReader reader(dir.file("t.dcd"));
    EXPECT_EQ(reader.atoms(), 37);
    EXPECT_EQ(reader.frames(), 5);
    EXPECT_EQ(reader.has_cell(), cell);
    EXPECT_FLOAT_EQ(static_cast<float>(reader.timestep()), 2.0f);
    const auto back = read_all(dir.file("t.dcd"));
    ASSERT_EQ(back.size(), 5u);
    for (std::size_t f = 0; f < 5; ++f) {
      EXPECT_EQ(back[f].x, frames[f].x);
      EXPECT_EQ(back[f].z, frames[f].z);
      EXPECT_EQ(back[f].cell.has_value(), cell);
      if (cell) EXPECT_EQ((*back[f].cell)[2], 41.5);
    }
  }
}

// Skipping frames (a seek) lands on the frames reading would: every other frame, with and
// without cells; the end is the end; a truncated last frame is refused when skipped too, and a
// killed writer's unfinished tail is not a frame.
TEST(Dcd, SkippedFramesLandWhereReadingWould) {
  test::ScratchDir dir;
  for (const bool cell : {false, true}) {
    const auto frames = random_frames(5, 23, cell, 9);
    write_dcd(dir.file("t.dcd"), frames, 1.0);
    DcdReader reader(dir.file("t.dcd"));
    DcdFrame f;
    for (std::size_t k = 0; k < 5; ++k) {
      if (k % 2 == 0) {
        ASSERT_TRUE(reader.skip()) << k;
      } else {
        ASSERT_TRUE(reader.next(f)) << k;
        EXPECT_EQ(f.x, frames[k].x) << k;
        EXPECT_EQ(f.z, frames[k].z) << k;
      }
      EXPECT_EQ(reader.frames_read(), static_cast<std::int64_t>(k) + 1);
    }
    EXPECT_FALSE(reader.skip());
    EXPECT_FALSE(reader.next(f));
  }
  write_dcd(dir.file("t.dcd"), random_frames(3, 20, false, 5));
  const std::string bytes = read_bytes(dir.file("t.dcd"));
  std::ofstream(dir.file("cut.dcd"), std::ios::binary) << bytes.substr(0, bytes.size() - 30);
  DcdReader cut(dir.file("cut.dcd"));
  EXPECT_TRUE(cut.skip());
  EXPECT_TRUE(cut.skip());
  try {
    cut.skip();
    FAIL() << "a truncated frame was skipped";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("frame 3: the file ends inside the frame"), std::string::npos) << error.what();
  }
}

TEST(Dcd, BigEndianFilesReadTheSame) {
  test::ScratchDir dir;
  const auto frames = random_frames(3, 11, true, 4);
  write_dcd(dir.file("le.dcd"), frames);
  // Byte-swap every 4-byte word, and the 8-byte cell values, record by record.
  std::string bytes = read_bytes(dir.file("le.dcd"));
  std::size_t pos = 0;
  auto swap = [&](std::size_t at, int width) { std::reverse(bytes.begin() + static_cast<long>(at), bytes.begin() + static_cast<long>(at + width)); };
  while (pos < bytes.size()) {
    std::int32_t length = 0;
    std::memcpy(&length, bytes.data() + pos, 4);
    const bool doubles = length == 48;
    swap(pos, 4);
    if (length == 84) {  // "CORD" stays, the 20 control words swap
      for (std::size_t w = 4; w < 84; w += 4) swap(pos + 4 + w, 4);
    } else {
      const int width = doubles ? 8 : 4;
      for (std::int32_t w = 0; w < length; w += width) swap(pos + 4 + static_cast<std::size_t>(w), width);
    }
    swap(pos + 4 + static_cast<std::size_t>(length), 4);
    pos += 8 + static_cast<std::size_t>(length);
  }
  std::ofstream(dir.file("be.dcd"), std::ios::binary) << bytes;
  const auto back = read_all(dir.file("be.dcd"));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].y, frames[2].y);
  EXPECT_EQ((*back[1].cell)[5], 42.5);
}

TEST(Dcd, TruncatedAndCorruptFilesNameTheFrame) {
  test::ScratchDir dir;
  write_dcd(dir.file("t.dcd"), random_frames(4, 20, false, 5));
  const std::string bytes = read_bytes(dir.file("t.dcd"));
  std::ofstream(dir.file("cut.dcd"), std::ios::binary) << bytes.substr(0, bytes.size() - 30);
  try {
    read_all(dir.file("cut.dcd"));
    FAIL() << "a truncated file was read";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("frame 4: Z: the file ends inside the frame"), std::string::npos) << error.what();
  }
  // A writer killed inside its fourth frame: three frames counted, part of a fourth on the disk.
  // The three are read, the unfinished append ignored (DcdWriter counts a frame after writing it).
  write_dcd(dir.file("three.dcd"), random_frames(3, 20, false, 5));
  std::ofstream(dir.file("killed.dcd"), std::ios::binary)
      << read_bytes(dir.file("three.dcd")) << bytes.substr(bytes.size() - 3 * (20 * 4 + 8), 100);
  EXPECT_EQ(read_all(dir.file("killed.dcd")).size(), 3u);
  std::string corrupt = bytes;
  corrupt[corrupt.size() - 3 * (20 * 4 + 8) - 2] ^= 0x7f;  // the trailing marker of frame 3's Z record
  std::ofstream(dir.file("bad.dcd"), std::ios::binary) << corrupt;
  try {
    read_all(dir.file("bad.dcd"));
    FAIL() << "a corrupt file was read";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("frame 3"), std::string::npos) << error.what();
  }
  std::ofstream(dir.file("text.dcd")) << "hello, not a trajectory\n";
  EXPECT_THROW(DcdReader(dir.file("text.dcd")), Error);
  EXPECT_THROW(DcdReader(dir.file("missing.dcd")), Error);
}

// A trajectory being written is a valid DCD after every frame: the header counts the frames
// present, so a reader (or VMD) opening it mid-run sees them all.
TEST(Dcd, StreamedTrajectoryIsValidAfterEveryFrame) {
  test::ScratchDir dir;
  const auto frames = random_frames(4, 23, true, 9);
  DcdWriter writer(dir.file("s.dcd"), 23, 0.5, true);
  EXPECT_EQ(DcdReader(dir.file("s.dcd")).frames(), 0);
  for (std::size_t f = 0; f < frames.size(); ++f) {
    writer.append(frames[f]);
    const std::string bytes = read_bytes(dir.file("s.dcd"));
    std::int32_t header_count = 0;
    std::memcpy(&header_count, bytes.data() + 8, 4);
    EXPECT_EQ(header_count, static_cast<std::int32_t>(f + 1));
    const auto back = read_all(dir.file("s.dcd"));
    ASSERT_EQ(back.size(), f + 1);
    EXPECT_EQ(back[f].y, frames[f].y);
  }
  writer.close();
  EXPECT_EQ(std::filesystem::file_size(dir.file("s.dcd")), dcd_file_bytes(23, 4, true));
  EXPECT_THROW(DcdWriter(dir.file("s.dcd"), 23, 0.5, true).append(random_frames(1, 22, true, 1)[0]), Error);
}

// Corrupt coordinate bytes (NaN, 3.4e34) are refused with the frame and atom, not mapped.
TEST(Dcd, CorruptCoordinatesAreRefused) {
  test::ScratchDir dir;
  auto frames = random_frames(3, 11, false, 2);
  frames[2].z[4] = std::numeric_limits<float>::quiet_NaN();
  write_dcd(dir.file("t.dcd"), frames);
  DcdReader reader(dir.file("t.dcd"));
  DcdFrame f;
  EXPECT_TRUE(reader.next(f));
  EXPECT_TRUE(reader.next(f));
  try {
    reader.next(f);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("t.dcd: frame 3: atom 5: z = nan is no coordinate"), std::string::npos)
        << error.what();
  }
}

}  // namespace nbkit::io
