#include "io/canvas.hpp"

#include <png.h>

#include <cstdio>
#include <memory>

#include "nbkit/core/error.hpp"
#include "nbkit/io/atomic_file.hpp"

namespace nbkit::io {

void save_png(const std::string& path, const Canvas& canvas) {
  write_atomically(path, [&](const std::string& temporary) {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(temporary.c_str(), "wb"), &std::fclose);
    if (!file) throw Error(path + ": cannot open for writing");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (!png || !info) {
      png_destroy_write_struct(&png, &info);
      throw Error(path + ": libpng could not start");
    }
    if (setjmp(png_jmpbuf(png))) {
      png_destroy_write_struct(&png, &info);
      throw Error(path + ": libpng failed to write the image");
    }
    png_init_io(png, file.get());
    png_set_IHDR(png, info, canvas.width(), canvas.height(), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < canvas.height(); ++y) png_write_row(png, const_cast<png_bytep>(canvas.row(y)));
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    if (std::fflush(file.get()) != 0) throw Error(path + ": write failed (disk full?)");
  });
}


}  // namespace nbkit::io
