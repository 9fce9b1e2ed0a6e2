#include <gemmi/ccp4.hpp>
#include <gtest/gtest.h>

#include "nbkit/io/map_files.hpp"
#include "test_support.hpp"

namespace nbkit::io {

TEST(Ccp4, GemmiReadsBackValuesOriginAndSpacing) {
  test::ScratchDir dir;
  Map map;
  map.lattice.origin = {-10, 5, 2.5};
  map.lattice.spacing = 0.5;
  map.lattice.dims = {4, 3, 5};
  for (std::int64_t i = 0; i < map.lattice.size(); ++i) map.values.push_back(0.25 * i - 7);
  write_map(dir.file("m.mrc"), map);
  gemmi::Ccp4<float> back;
  back.read_ccp4_file(dir.file("m.mrc"));
  back.setup(NAN, gemmi::MapSetup::ReorderOnly);  // the file's axes are z, y, x (MAPC/MAPR/MAPS 3, 2, 1)
  ASSERT_EQ(back.grid.nu, 4);
  ASSERT_EQ(back.grid.nv, 3);
  ASSERT_EQ(back.grid.nw, 5);
  EXPECT_NEAR(back.grid.unit_cell.a / back.grid.nu, 0.5, 1e-6);
  EXPECT_FLOAT_EQ(back.header_float(50), -10.f);
  EXPECT_FLOAT_EQ(back.header_float(51), 5.f);
  EXPECT_FLOAT_EQ(back.header_float(52), 2.5f);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) EXPECT_FLOAT_EQ(back.grid.get_value_q(i, j, k), static_cast<float>(map.at(i, j, k)));
}

}  // namespace nbkit::io
