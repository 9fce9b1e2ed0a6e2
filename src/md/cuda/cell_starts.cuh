#pragma once
// The start of each cell's atoms in a cell-sorted order: shared by the Lennard-Jones engine's
// cell list (cell_list.cuh) and the molecular pair list (molecular_pair_list.cu).
#include <cuda_runtime.h>

namespace nbkit::md {
namespace {

// cell_start[c] = the first sorted atom in cell c or later (c = 0 .. cells), by binary search.
// A key is the cell above `shift` low bits (the molecular list's sub-cell order within a cell).
__global__ void cell_starts(int n, int cells, const unsigned* __restrict__ sorted_cell, int* __restrict__ cell_start,
                            int shift = 0) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c > cells) return;
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if ((sorted_cell[mid] >> shift) < static_cast<unsigned>(c)) lo = mid + 1;
    else hi = mid;
  }
  cell_start[c] = lo;
}

}  // namespace
}  // namespace nbkit::md
