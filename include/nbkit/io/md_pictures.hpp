#pragma once
// A picture of an MD run's thermo table: one panel per quantity (temperature, energies, density)
// against time, stacked, each with its own labelled axis. `nbkit md` writes thermo.png at the end.
#include <string>
#include <vector>

namespace nbkit::io {

struct ThermoSeries {
  std::string label;           // "temperature (K)"
  std::vector<double> values;  // one per time
};

// Panels top to bottom, the x axis `time` (labelled `time_label`, e.g. "time (ps)"). Each panel's
// y range is its data's (a flat series gets +-1 around its value), ticks at the ends and the
// middle; non-finite values are left out. Throws nbkit::Error when there is nothing to draw.
void write_thermo_png(const std::string& path, const std::vector<double>& time, const std::string& time_label,
                      const std::vector<ThermoSeries>& panels);

}  // namespace nbkit::io
