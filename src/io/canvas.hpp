#pragma once
// An RGB picture with 5x7 bitmap text, saved as PNG through libpng (atomically). Shared by
// the map slices (png.cpp) and the N-body pictures. Internal to the library.
#include <cstdint>
#include <string>
#include <vector>

#include "io/bitmap_font.hpp"

namespace nbkit::io {

struct Rgb {
  std::uint8_t r, g, b;
};

class Canvas {
 public:
  Canvas(int width, int height) : width_(width), height_(height), pixels_(3 * width * height, 255) {}
  void set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    std::uint8_t* p = &pixels_[3 * (static_cast<std::size_t>(y) * width_ + x)];
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }
  void text(int x, int y, const std::string& s, int scale, Rgb c = {0, 0, 0}) {
    for (char ch : s) {
      const Glyph& g = glyph_for(ch);
      for (int row = 0; row < 7; ++row)
        for (int col = 0; col < 5; ++col)
          if (g.rows[row] & (0x10 >> col))
            for (int dy = 0; dy < scale; ++dy)
              for (int dx = 0; dx < scale; ++dx) set(x + col * scale + dx, y + row * scale + dy, c);
      x += 6 * scale;
    }
  }
  static int text_width(const std::string& s, int scale) { return static_cast<int>(s.size()) * 6 * scale; }
  int width() const { return width_; }
  int height() const { return height_; }
  const std::uint8_t* row(int y) const { return &pixels_[3 * static_cast<std::size_t>(y) * width_]; }

 private:
  int width_, height_;
  std::vector<std::uint8_t> pixels_;
};

// Writes the canvas to `path` (a temporary file renamed over it).
void save_png(const std::string& path, const Canvas& canvas);

}  // namespace nbkit::io
