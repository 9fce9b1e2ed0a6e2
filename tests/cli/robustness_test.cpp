// The defects of issue 15 ("no silent wrong answers"), each as a user meets it on the command
// line: inputs read or refused, outputs that never replace inputs, resources counted before a
// run, non-finite results refused, messages that say what a file is.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_support.hpp"
#include "nbkit/core/backend.hpp"
#include "nbkit/io/dcd.hpp"
#include "nbkit/io/map_files.hpp"
#include "nbkit/io/pqr.hpp"
#include "nbkit/io/snapshot.hpp"
#include "nbkit/io/structure.hpp"
#include "test_support.hpp"

namespace nbkit::test {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// The error line of a failed run (exit status 1, one "nbkit: error:" line naming `expected`).
void expect_refused(const std::string& arguments, const std::string& expected, const std::string& environment = "") {
  const Result r = run_nbkit(arguments, environment);
  EXPECT_EQ(r.status, 1) << arguments << "\n" << r.output;
  EXPECT_TRUE(contains(r.output, "nbkit: error: ")) << arguments << "\n" << r.output;
  EXPECT_TRUE(contains(r.output, expected)) << arguments << "\n  expected: " << expected << "\n  got: " << r.output;
  EXPECT_FALSE(contains(r.output, "std::") || contains(r.output, "vector::") || contains(r.output, "basic_string"))
      << "a standard-library message reached the user: " << r.output;
}

}  // namespace

// Item 1: a PQR past 9,999 atoms (HETATM10000...) loses no record, and nbkit reads back its own
// ionize output of a 16,090-atom protein.
TEST(Robustness, LargePqrsLoseNoRecordAndIonizeReadsItsOwnOutputBack) {
  ScratchDir dir;
  const Result big = run_nbkit("map " + data("1a63-waters.pqr.gz") + " -o " + dir.file("w.dx") + " --spacing 3");
  ASSERT_EQ(big.status, 0) << big.output;
  EXPECT_TRUE(contains(big.output, "nbkit map: 10,315 atoms")) << big.output;
  write_text(dir.file("two.pqr"),
             "HETATM 9999  O   HOH W 998      13.000  11.000  12.000 -0.8340 1.7700\n"
             "HETATM10000  O   HOH W 999      14.000  11.000  12.000 -0.8340 1.7700\n");
  const Result two = run_nbkit("map " + dir.file("two.pqr") + " -o " + dir.file("t.dx") + " --spacing 2");
  EXPECT_TRUE(contains(two.output, "nbkit map: 2 atoms")) << two.output;
  const std::string achbp = apbs_example("misc/achbp.pqr");
  if (achbp.empty()) GTEST_SKIP() << "APBS's examples (apbs-data) are not installed";
  const Result ions = run_nbkit("ionize " + achbp + " --cations 3 --anions 2 --spacing 2 -q -o " + dir.file("i.pqr") +
                                " --pdb " + dir.file("i.pdb"));
  ASSERT_EQ(ions.status, 0) << ions.output;
  const Atoms back = io::read_pqr(dir.file("i.pqr"));
  EXPECT_EQ(back.size(), 16090u + 5);
  // Serials continue the input's, every one distinct.
  const auto records = io::parse_pqr_records(read_text(dir.file("i.pqr")), "i.pqr");
  ASSERT_EQ(records.size(), 16095u);
  EXPECT_EQ(*records.back().serial, 16095);
  EXPECT_EQ(records.back().chain, "I");
  // The PDB has no placeholder CRYST1 (no cell in the input), and every atom.
  const std::string pdb = read_text(dir.file("i.pdb"));
  EXPECT_FALSE(contains(pdb, "CRYST1")) << pdb.substr(0, 200);
}

// Item 2: a PDB file named .pqr would map occupancy as charge.
TEST(Robustness, PdbNamedPqrIsRefusedNamingPdb2pqr) {
  ScratchDir dir;
  std::ifstream pdb(test_data_file("tripeptide.pdb"));
  std::ofstream(dir.file("tri.pqr")) << pdb.rdbuf();
  expect_refused("map " + dir.file("tri.pqr") + " -o " + dir.file("m.dx"),
                 "tri.pqr:2: record: a PDB-format ATOM record (occupancy and B-factor in columns 55-66)");
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.dx")));
}

// Item 3: pdb2pqr leaves out what its force field cannot type; the map would lack their charges.
TEST(Robustness, ChargesLeftOutByPdb2pqrAreNamedAndRefusedUnlessAllowed) {
  if (io::find_pdb2pqr().empty()) GTEST_SKIP() << "pdb2pqr is not installed";
  ScratchDir dir;
  std::string pdb = read_text(test_data_file("tripeptide.pdb"));
  pdb = pdb.substr(0, pdb.find("END"));
  pdb +=
      "HETATM   25 ZN    ZN A 102       8.000   2.000   1.000  1.00  0.00          ZN\n"
      "HETATM   26  C1  LIG A 103      -8.000   2.000   1.000  1.00  0.00           C\n"
      "HETATM   27  O1  LIG A 103      -9.000   2.500   1.000  1.00  0.00           O\n"
      "END\n";
  write_text(dir.file("lig.pdb"), pdb);
  const std::string base = "map " + dir.file("lig.pdb") + " --charges amber --spacing 2 -o " + dir.file("m.dx");
  expect_refused(base, "pdb2pqr --ff=AMBER left out 2 residues (3 atoms) it has no parameters for: ZN A102, LIG A103");
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.dx")));
  const Result allowed = run_nbkit(base + " --allow-missing --save-pqr " + dir.file("kept.pqr"));
  ASSERT_EQ(allowed.status, 0) << allowed.output;
  EXPECT_TRUE(contains(allowed.output, "nbkit: notice: pdb2pqr --ff=AMBER left out 2 residues")) << allowed.output;
  EXPECT_GT(io::read_pqr(dir.file("kept.pqr")).size(), 24u);  // the peptide with its hydrogens
  expect_refused("map " + data("1a63.pqr") + " --allow-missing -o " + dir.file("m.dx"),
                 "--allow-missing applies to PDB/mmCIF input charged with --charges");
}

// Item 4: inputs a precision cannot handle and results that are not numbers never make a map,
// a run or a restart.
TEST(Robustness, NonFiniteInputsAndResultsAreRefused) {
  ScratchDir dir;
  write_text(dir.file("far.pqr"), "ATOM      1  N   MET     1       1e20    5.469  -3.259  0.1592 1.8240\n");
  expect_refused("map " + dir.file("far.pqr") + " -o " + dir.file("f.dx") + " --origin 0,0,0 --dims 4,4,4",
                 "far.pqr:1: x: 1e+20 A lies beyond 1e+06 A of the origin");
  expect_refused("map " + data("1a63.pqr") + " -o " + dir.file("f.dx") + " --origin 1e20,0,0 --dims 4,4,4",
                 "the lattice reaches 1e+20 A from the origin along x");
  // A DCD frame whose bytes were corrupted (3.4e34 as a coordinate).
  std::vector<io::DcdFrame> frames(3);
  const Atoms atoms = io::read_pqr(data("1a63.pqr"));
  for (io::DcdFrame& f : frames) {
    f.x.assign(atoms.x.begin(), atoms.x.end()), f.y.assign(atoms.y.begin(), atoms.y.end());
    f.z.assign(atoms.z.begin(), atoms.z.end());
  }
  frames[1].y[16] = 3.4e34f;
  io::write_dcd(dir.file("t.dcd"), frames);
  expect_refused("map " + data("1a63.pqr") + " --trajectory " + dir.file("t.dcd") + " --spacing 2 -o " + dir.file("f.dx"),
                 "t.dcd: frame 2: atom 17: y = 3.4e+34 is no coordinate");
  EXPECT_FALSE(std::filesystem::exists(dir.file("f.dx")));
  // N-body: one body has no potential energy to scale Henon units by.
  expect_refused("nbody --plummer 1 -o " + dir.file("nb"), "--plummer 1: a Plummer sphere needs at least 2 bodies");
  // A corrupted restart snapshot (a NaN velocity).
  if (io::snapshots_available()) {
    const Result run = run_nbkit("nbody --plummer 64 --steps 2 -q -o " + dir.file("nb"));
    ASSERT_EQ(run.status, 0) << run.output;
    io::SnapshotInfo info;
    nbody::Bodies bodies = io::read_snapshot(dir.file("nb/snapshot_00000002.hdf5"), &info);
    bodies.vy[9] = std::nan("");
    io::write_snapshot(dir.file("bad.hdf5"), bodies, info);
    expect_refused("nbody --restart " + dir.file("bad.hdf5") + " --steps 4 -o " + dir.file("nb2"),
                   "bad.hdf5: /PartType1/Velocities: body 10: vy = nan is not finite");
  }
  // MD: two atoms on one spot: the energy is infinite at step 0; the outputs hold what came before.
  write_text(dir.file("two.data"),
             "two atoms on one spot\n\n3 atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\n"
             "Masses\n\n1 1.0\n\nAtoms # atomic\n\n1 1 5.0 5.0 5.0\n2 1 5.0 5.0 5.0\n3 1 1.0 1.0 1.0\n");
  write_text(dir.file("two.toml"), "[system]\ndata = \"two.data\"\n[run]\nsteps = 10\n[output]\ndcd_every = 1\n");
  expect_refused("md " + dir.file("two.toml") + " -q -o " + dir.file("md"),
                 "step 0: the energy or pressure is not finite");
  EXPECT_EQ(io::DcdReader(dir.file("md/trajectory.dcd")).frames(), 1);
  EXPECT_TRUE(contains(read_text(dir.file("md/thermo.csv")), "step,temperature"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("md/final.data")));
}

// Item 6: outputs never replace an input or each other; devices and FIFOs are written
// directly; links are followed.
TEST(Robustness, OutputsNeverReplaceInputsOrEachOther) {
  ScratchDir dir;
  std::filesystem::copy_file(data("1a63.pqr"), dir.file("in.pqr"));
  const std::string input = dir.file("in.pqr"), original = read_text(input);
  expect_refused("map " + input + " -o " + dir.file("m.dx") + " --report " + input,
                 "--report " + input + " is the input " + input + " (INPUT)");
  expect_refused("map " + input + " -o " + dir.file("m.dx") + " --png " + dir.file("m.dx"),
                 "-o " + dir.file("m.dx") + " and --png " + dir.file("m.dx") + " name the same file");
  std::filesystem::create_symlink(input, dir.file("link.json"));
  expect_refused("map " + input + " -o " + dir.file("m.dx") + " --report " + dir.file("link.json"),
                 "is the input");
  expect_refused("ionize " + input + " --cations 1 -o " + input, "is the input");
  expect_refused("ionize " + input + " --cations 1 -o " + dir.file("x.dx"), "ionize writes a PQR file");
  expect_refused("ionize " + input + " --cations 1 --pdb " + dir.file("x.cif"), "writes PDB format: name it .pdb");
  EXPECT_EQ(read_text(input), original);
  // The final data file of md named as its input data file.
  std::filesystem::create_directories(dir.file("md"));
  write_text(dir.file("md/start.data"),
             "start\n\n2 atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\nMasses\n\n1 1.0\n\n"
             "Atoms # atomic\n\n1 1 5.0 5.0 5.0\n2 1 1.0 1.0 1.0\n");
  write_text(dir.file("md/run.toml"), "[system]\ndata = \"start.data\"\n[run]\nsteps = 1\n[output]\ndata = \"start.data\"\n");
  expect_refused("md " + dir.file("md/run.toml") + " -q -o " + dir.file("md"), "is the input");
  // --report to a character device: written there, the device left as it is.
  const Result out = run_nbkit("map " + input + " --spacing 3 -q -o " + dir.file("m.dx") + " --report /dev/stdout");
  ASSERT_EQ(out.status, 0) << out.output;
  EXPECT_EQ(nlohmann::json::parse(out.output)["input"]["atoms"], 2065);
  EXPECT_FALSE(std::filesystem::is_regular_file(std::filesystem::symlink_status("/dev/null")));
  // stdout redirected to a file: the report and then the summary, neither over the other.
  const std::string redirected = std::string(NBKIT_BINARY) + " map " + input + " --spacing 3 -o " + dir.file("m.dx") +
                                 " --report /dev/stdout > " + dir.file("both.txt") + " 2>/dev/null";
  ASSERT_EQ(std::system(redirected.c_str()), 0);
  const std::string both = read_text(dir.file("both.txt"));
  const std::size_t summary = both.find("nbkit map: 2,065 atoms");
  ASSERT_NE(summary, std::string::npos) << both;
  EXPECT_EQ(nlohmann::json::parse(both.substr(0, summary))["input"]["atoms"], 2065);
  const Result null = run_nbkit("map " + input + " --spacing 3 -q -o " + dir.file("m.dx") + " --report /dev/null");
  EXPECT_EQ(null.status, 0) << null.output;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  // An output that is a symbolic link: the file it names is written, the link stays.
  std::filesystem::create_symlink("target.dx", dir.file("link.dx"));
  ASSERT_EQ(run_nbkit("map " + input + " --spacing 3 -q -o " + dir.file("link.dx")).status, 0);
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("link.dx")));
  EXPECT_GT(std::filesystem::file_size(dir.file("target.dx")), 1000u);
}

// Item 7: md's trajectory and thermo table are valid at any moment: a run killed midway keeps
// every frame and row written.
TEST(Robustness, KilledMdRunKeepsAValidTrajectoryAndThermoTable) {
  ScratchDir dir;
  write_text(dir.file("long.toml"),
             "[system]\nlattice = \"fcc\"\ndensity = 0.8442\ncells = [6, 6, 6]\ntemperature = 1.44\n"
             "[run]\nsteps = 10000000\nthermo = 5\n[output]\ndcd_every = 5\n");
  const std::string out = dir.file("out");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string binary = NBKIT_BINARY, toml = dir.file("long.toml");
    ::execl(binary.c_str(), binary.c_str(), "md", toml.c_str(), "-q", "-o", out.c_str(), "--threads", "1",
            static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  // Wait for a few frames, then kill it without warning. Five frames' bytes on the disk: the
  // header counts the fourth (its count is written after each frame, so at four frames' bytes
  // the kill could fall between the fourth frame and its count: a flake once).
  const std::string dcd = out + "/trajectory.dcd";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline &&
         (!std::filesystem::exists(dcd) || std::filesystem::file_size(dcd) < io::dcd_file_bytes(864, 5, true)))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  io::DcdReader reader(dcd);
  io::DcdFrame frame;
  std::int64_t frames = 0;
  while (reader.next(frame)) ++frames;
  EXPECT_GE(frames, 4);
  // Every row of the table is whole: the header lines, then rows of six fields.
  std::istringstream csv(read_text(out + "/thermo.csv"));
  std::string line;
  int rows = 0;
  while (std::getline(csv, line)) {
    if (line.empty() || line[0] == '#' || line[0] == 's') continue;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 5) << line;
    ++rows;
  }
  EXPECT_GE(rows, 3);
}

// Items 9-12: memory and disk counted before a run; thread counts and run lengths validated;
// no standard-library message reaches the user.
TEST(Robustness, ResourcesThreadsAndRunLengthsAreCheckedFirst) {
  ScratchDir dir;
  const std::string map = "map " + data("1a63.pqr") + " --spacing 0.5 -o ";
  // 2,042,400 points: 15.6 MiB for the map; with 20 MB free it is computed and written in
  // slabs (issue 21); with 1 MB not even a row and the writer's buffers fit.
  const Result slabs = run_nbkit(map + dir.file("m.mrc"), "NBKIT_MEMORY_LIMIT=20000000");
  EXPECT_EQ(slabs.status, 0) << slabs.output;
  EXPECT_TRUE(contains(slabs.output, "notice: computed and written in")) << slabs.output;
  expect_refused(map + dir.file("m.dx"), "nbkit map needs at least", "NBKIT_MEMORY_LIMIT=1000000");
  // stdev keeps the running M2 beside the mean and the frame's map: 3 x 8 bytes a point (at
  // 1 A, 263,088 points: 6.3 MB); with 8 MB free (a 6 MB limit) the frames are combined a slab
  // at a time, with 200 kB not even the atoms fit. Cutoff sums over 5 frames: seconds under ASan.
  const std::string stdev = "map " + data("1a63.pqr") + " --spacing 1.0 --method cutoff -o " + dir.file("s.mrc") +
                            " --trajectory " + data("1a63-wobble.dcd") + " --last 4 --combine stdev --threads 2";
  const Result in_slabs = run_nbkit(stdev, "NBKIT_MEMORY_LIMIT=8000000");
  EXPECT_EQ(in_slabs.status, 0) << in_slabs.output;
  EXPECT_TRUE(contains(in_slabs.output, "with the frames' accumulators; the frames are read once a slab"))
      << in_slabs.output;
  expect_refused(stdev, "nbkit map needs at least", "NBKIT_MEMORY_LIMIT=200000");
  expect_refused("nbody --plummer 1000000000 -o " + dir.file("nb"), "nbkit nbody needs 141.56 GiB of memory",
                 "NBKIT_MEMORY_LIMIT=100000000000");
  expect_refused("nbody --plummer -5 -o " + dir.file("nb"), "--plummer -5: a Plummer sphere needs at least 2 bodies");
  expect_refused("nbody --plummer 100 --time 1e30 -o " + dir.file("nb"), "more than the 1e+12 a run may take");
  write_text(dir.file("huge.toml"), "[system]\nlattice = \"fcc\"\ndensity = 0.8442\ncells = [100, 100, 100]\n[run]\nsteps = 1\n");
  expect_refused("md " + dir.file("huge.toml") + " -o " + dir.file("md"),
                 "an fcc lattice of 100x100x100 cells (4000000 atoms) needs 351.0 MiB of memory",
                 "NBKIT_MEMORY_LIMIT=100000000");
  // The disk: the map's file (15 bytes a value as OpenDX), trajectories and snapshots.
  expect_refused(map + dir.file("m.dx"), "nbkit map would write 29.2 MiB to", "NBKIT_DISK_LIMIT=1000000");
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.dx")));
  expect_refused("nbody --plummer 4096 --steps 10 --snapshot-every 1 -q -o " + dir.file("nb"), "12 snapshots",
                 "NBKIT_DISK_LIMIT=100000");
  write_text(dir.file("lj.toml"),
             "[system]\nlattice = \"fcc\"\ndensity = 0.8442\ncells = [4, 4, 4]\ntemperature = 1.0\n[run]\nsteps = 1000\n"
             "[output]\ndcd_every = 1\n");
  expect_refused("md " + dir.file("lj.toml") + " -o " + dir.file("md"), "1,001 frames", "NBKIT_DISK_LIMIT=1000000");
  // Threads: negative counts refused; absurd ones cut to the machine, with a notice.
  for (const std::string command : {map + dir.file("t.dx"), "nbody --plummer 64 --steps 1 -o " + dir.file("nb"),
                                    "md " + dir.file("lj.toml") + " -o " + dir.file("md")})
    expect_refused(command + " --threads -1", "--threads: expected 0 (all) or a positive count, got -1");
  const Result many = run_nbkit("map " + data("1a63.pqr") + " --spacing 3 --threads 65535 -o " + dir.file("t.dx"));
  ASSERT_EQ(many.status, 0) << many.output;
  EXPECT_TRUE(contains(many.output, "nbkit: notice: --threads 65535: this machine has ")) << many.output;
}

// Item 13: messages that say what a file is, which option is ignored and why no GPU runs,
// before the work; counts in words.
TEST(Robustness, MessagesSayWhatIsWrongBeforeTheWork) {
  ScratchDir dir;
  expect_refused("map " + dir.path().string() + " -o " + dir.file("m.dx"), "is a directory, not a PQR file");
  expect_refused("map " + data("1a63-wobble.dcd") + " -o " + dir.file("m.dx"), "a trajectory, not a structure");
  {
    std::ofstream xtc(dir.file("t.pqr"), std::ios::binary);
    const unsigned char header[] = {0, 0, 7, 0xcb, 0, 0, 0, 3, 0, 0, 0, 0};
    xtc.write(reinterpret_cast<const char*>(header), sizeof header);
  }
  expect_refused("map " + dir.file("t.pqr") + " -o " + dir.file("m.dx"), "is a GROMACS XTC trajectory, not a PQR file");
  const std::string map = "map " + data("1a63.pqr") + " -o " + dir.file("m.dx");
  expect_refused(map + " --cutoff 8", "--cutoff applies to --method cutoff or msm, not direct");
  expect_refused(map + " --ionic-strength 0.1", "--ionic-strength applies to --method mdh, not direct");
  expect_refused(map + " --method cutoff --msm-spacing 1", "--msm-spacing applies to --method msm, not cutoff");
  expect_refused(map + " --slice z=1", "--slice chooses the slice of the --png picture");
  expect_refused(map + " --combine stdev", "--combine applies to maps of a --trajectory");
  expect_refused(map + " --backend cpu --gpus 1", "--gpus picks GPUs for --backend auto or cuda, not cpu");
  expect_refused("ionize " + data("1a63.pqr") + " --cations 1 --cutoff 8", "--cutoff applies to --method cutoff or msm");
  write_text(dir.file("one.pqr"), "ATOM 1 N HIS 1 1.0 2.0 3.0 0.5 1.0\n");
  const Result one = run_nbkit("map " + dir.file("one.pqr") + " --spacing 1 -o " + dir.file("one.dx"));
  ASSERT_EQ(one.status, 0) << one.output;
  EXPECT_TRUE(contains(one.output, "nbkit map: 1 atom,")) << one.output;
  // Without a GPU, auto says so in plain words before the summary (CI has none).
  if (list_gpus().empty() && build_info().cuda_compiled) {
    EXPECT_TRUE(contains(one.output, "nbkit: notice: no NVIDIA GPU found; running on the CPU")) << one.output;
    EXPECT_LT(one.output.find("notice"), one.output.find("nbkit map:")) << one.output;
  }
}

// Item 14: ionize with a multi-model input and serials that do not start at 1.
TEST(Robustness, IonizeKeepsModelOneAndNumbersIonsAfterTheInput) {
  ScratchDir dir;
  const std::string model = "ATOM    501  N   HIS A   1       1.000   2.000   3.000  0.5000 1.5000\n"
                            "ATOM    502  C   HIS A   1       2.000   2.000   3.000 -1.5000 1.7000\n";
  write_text(dir.file("models.pqr"), "MODEL 1\n" + model + "ENDMDL\nMODEL 2\n" + model + "ENDMDL\nEND\n");
  const Result r = run_nbkit("ionize " + dir.file("models.pqr") + " --neutralize --spacing 1 --padding 8 -o " +
                             dir.file("ions.pqr") + " --png " + dir.file("ions.png"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "has 2 models: the ions were placed around model 1")) << r.output;
  EXPECT_TRUE(contains(r.output, "1 cation and 0 anions around 2 atoms")) << r.output;
  const std::string text = read_text(dir.file("ions.pqr"));
  EXPECT_FALSE(contains(text, "ENDMDL")) << text;
  const auto records = io::parse_pqr_records(text, "ions.pqr");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(*records[2].serial, 503);
  EXPECT_EQ(records[2].residue_name, "NA");
}

}  // namespace nbkit::test
