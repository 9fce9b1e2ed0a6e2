#include "nbkit/io/png.hpp"

#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "nbkit/core/error.hpp"
#include "test_support.hpp"

namespace nbkit::io {

namespace {
struct Image {
  int width = 0, height = 0;
  std::vector<std::vector<png_byte>> rows;
  const png_byte* pixel(int x, int y) const { return &rows[y][3 * x]; }
};

Image read_png(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  EXPECT_TRUE(file);
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, file.get());
  png_read_info(png, info);
  Image image;
  image.width = static_cast<int>(png_get_image_width(png, info));
  image.height = static_cast<int>(png_get_image_height(png, info));
  EXPECT_EQ(png_get_color_type(png, info), PNG_COLOR_TYPE_RGB);
  image.rows.assign(image.height, std::vector<png_byte>(png_get_rowbytes(png, info)));
  for (auto& row : image.rows) png_read_row(png, row.data(), nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return image;
}

// V = x - 5 on an 11x7x3 lattice: negative on the left, positive on the right.
Map ramp_map() {
  Map map;
  map.lattice.dims = {11, 7, 3};
  map.lattice.spacing = 1.0;
  for (std::int64_t i = 0; i < 11; ++i)
    for (std::int64_t j = 0; j < 7; ++j)
      for (std::int64_t k = 0; k < 3; ++k) map.values.push_back(static_cast<double>(i) - 5);
  return map;
}
}  // namespace

TEST(Png, SliceUsesRedForNegativeBlueForPositive) {
  test::ScratchDir dir;
  const Map map = ramp_map();
  const SliceInfo info = write_slice_png(dir.file("s.png"), map, parse_slice(""));
  EXPECT_EQ(info.axis, 2);
  EXPECT_EQ(info.index, 1);
  EXPECT_DOUBLE_EQ(info.range, 5.0);
  const Image image = read_png(dir.file("s.png"));
  const int scale = info.pixel_scale;  // lattice points drawn as scale x scale squares
  EXPECT_EQ(scale, 512 / 11);
  ASSERT_GE(image.width, info.image_left + 11 * scale);
  const int x0 = info.image_left, y = info.image_top + 3 * scale;
  const png_byte* left = image.pixel(x0 + scale / 2, y);    // i = 0, V = -5
  const png_byte* middle = image.pixel(x0 + 5 * scale + scale / 2, y);  // V = 0
  const png_byte* right = image.pixel(x0 + 10 * scale + scale / 2, y);  // V = +5
  EXPECT_GT(left[0], 150);
  EXPECT_LT(left[2], 60);
  EXPECT_EQ(middle[0], 255);
  EXPECT_EQ(middle[1], 255);
  EXPECT_EQ(middle[2], 255);
  EXPECT_GT(right[2], 150);
  EXPECT_LT(right[0], 60);
}

TEST(Png, SliceSpecParsingAndRange) {
  EXPECT_EQ(parse_slice("x=2.5").axis, 0);
  EXPECT_DOUBLE_EQ(*parse_slice("y=-1").coordinate, -1.0);
  EXPECT_FALSE(parse_slice("z").coordinate);
  EXPECT_THROW(parse_slice("w=1"), Error);
  EXPECT_THROW(parse_slice("z=abc"), Error);
  test::ScratchDir dir;
  EXPECT_THROW(write_slice_png(dir.file("s.png"), ramp_map(), parse_slice("z=100")), Error);
  const SliceInfo info = write_slice_png(dir.file("s.png"), ramp_map(), parse_slice("x=7.2"));
  EXPECT_EQ(info.index, 7);
  EXPECT_DOUBLE_EQ(info.coordinate, 7.0);
}

// Axes carry tick labels (dark pixels left of and below the lattice); a colour range that
// values exceed says so; a map that is never negative gets a sequential scale from zero.
TEST(Png, AxesSaturationAndSequentialScale) {
  test::ScratchDir dir;
  Map map;  // V = x - 15 on 31 x 30 x 2 points, and one point far beyond the 99th percentile
  map.lattice.dims = {31, 30, 2};
  map.lattice.spacing = 1.0;
  for (std::int64_t i = 0; i < 31; ++i)
    for (std::int64_t j = 0; j < 60; ++j) map.values.push_back(static_cast<double>(i) - 15);
  map.values[0] = -500;
  const SliceInfo info = write_slice_png(dir.file("s.png"), map, parse_slice("z=0"));
  EXPECT_TRUE(info.saturated);
  EXPECT_DOUBLE_EQ(info.low, -500);
  EXPECT_DOUBLE_EQ(info.range, 15);
  const Image image = read_png(dir.file("s.png"));
  auto dark_pixels = [&](int x0, int x1, int y0, int y1) {
    int dark = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) dark += image.pixel(x, y)[0] < 100 && image.pixel(x, y)[1] < 100;
    return dark;
  };
  const int image_h = static_cast<int>(map.lattice.dims[1]) * info.pixel_scale;
  EXPECT_GT(dark_pixels(0, info.image_left - 1, info.image_top, info.image_top + image_h), 20);  // tick labels
  EXPECT_GT(dark_pixels(info.image_left, image.width, info.image_top + image_h + 2, info.image_top + image_h + 24), 20);
  EXPECT_FALSE(write_slice_png(dir.file("t.png"), ramp_map(), parse_slice("")).saturated);
  // A standard deviation: zero is the scale's dark end (viridis), not the white of a diverging scale.
  Map spread = ramp_map();
  for (double& v : spread.values) v = std::fabs(v);
  const SliceInfo seq = write_slice_png(dir.file("q.png"), spread, parse_slice(""), {}, 0, ColorScale::sequential);
  const Image q = read_png(dir.file("q.png"));
  const png_byte* zero = q.pixel(seq.image_left + 5 * seq.pixel_scale + seq.pixel_scale / 2, seq.image_top + seq.pixel_scale);
  EXPECT_LT(zero[1], 30);  // viridis starts at (68, 1, 84)
  EXPECT_GT(zero[2], 60);
  const png_byte* top = q.pixel(seq.image_left + seq.pixel_scale / 2, seq.image_top + seq.pixel_scale);  // |V| = 5
  EXPECT_GT(top[1], 200);  // ... and ends yellow (253, 231, 37)
  EXPECT_LT(top[2], 80);
}

// Markers in two colours with a legend (ionize: cations and anions).
TEST(Png, MarkerSetsAreDrawnInTheirColours) {
  test::ScratchDir dir;
  const Map map = ramp_map();
  const SliceMarkers cations{"Na+", {250, 210, 40}, {{2, 3, 1}}}, anions{"Cl-", {40, 200, 60}, {{8, 3, 1}}};
  write_slice_png(dir.file("m.png"), map, parse_slice("z=1"), {cations, anions}, 1.0);
  const Image image = read_png(dir.file("m.png"));
  int yellow = 0, green = 0;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x) {
      const png_byte* p = image.pixel(x, y);
      yellow += p[0] == 250 && p[1] == 210 && p[2] == 40;
      green += p[0] == 40 && p[1] == 200 && p[2] == 60;
    }
  EXPECT_GT(yellow, 50);  // the marker and its legend entry
  EXPECT_GT(green, 50);
}

}  // namespace nbkit::io
