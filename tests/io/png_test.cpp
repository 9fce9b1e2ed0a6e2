#include "nbkit/io/png.hpp"

#include <gtest/gtest.h>
#include <png.h>

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
  const int scale = 512 / 11;  // lattice points drawn as scale x scale squares
  ASSERT_GE(image.width, 11 * scale);
  const int top = 10 + 20;     // margin + title line
  const int y = top + 3 * scale;
  const png_byte* left = image.pixel(10 + scale / 2, y);    // i = 0, V = -5
  const png_byte* middle = image.pixel(10 + 5 * scale + scale / 2, y);  // V = 0
  const png_byte* right = image.pixel(10 + 10 * scale + scale / 2, y);  // V = +5
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

}  // namespace nbkit::io
