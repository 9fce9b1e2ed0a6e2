// Outputs: written whole or not at all, even when a signal stops the process mid-write;
// links followed, devices written in place, inputs never replaced.
#include "nbkit/io/atomic_file.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "nbkit/core/error.hpp"
#include "nbkit/core/resources.hpp"
#include "test_support.hpp"

namespace nbkit::io {

namespace {

int files_in(const std::filesystem::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

// A writer stopped by SIGINT or SIGTERM halfway through leaves no temporary behind, and the
// process still ends by that signal (its status says so to the shell).
TEST(AtomicFile, SignalsMidWriteLeaveNoTemporary) {
  for (const int signal : {SIGINT, SIGTERM}) {
    test::ScratchDir dir;
    const std::string target = dir.file("out.dx");
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      write_atomically(target, [&](const std::string& temporary) {
        std::ofstream(temporary) << std::string(1 << 20, 'x');  // half a map on the disk
        ::raise(signal);
      });
      std::_Exit(0);  // not reached: the signal ends the process
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << signal;
    EXPECT_EQ(WTERMSIG(status), signal);
    EXPECT_EQ(files_in(dir.path()), 0) << "a temporary file was left behind after signal " << signal;
  }
}

// The signal handler reads the registered paths while other threads may be registering new ones
// in the same slots: a path read half old, half new must never be removed (it may name someone's
// file). One thread registers two paths in turn as fast as it can; another removes what is
// registered (remove_registered_paths, the handler's walk) as fast as it can; every name a torn
// read could make (a prefix of one path, the rest of the other) is a file that must survive.
TEST(AtomicFile, RemovalOnSignalsNeverTakesAHalfWrittenPath) {
  test::ScratchDir dir;
  const std::string a = dir.file("aaaaaaaaaaaaaaaaaaaaaaaa.tmp"), b = dir.file("bbbbbbbbbbbb.tmp");
  const std::size_t common = dir.file("").size();
  std::vector<std::string> torn;
  for (std::size_t k = common + 1; k < b.size(); ++k) torn.push_back(b.substr(0, k) + a.substr(k));
  for (std::size_t k = common + 1; k < b.size(); ++k) torn.push_back(a.substr(0, k) + b.substr(k));
  for (const std::string& name : torn) std::ofstream(name) << "someone's file";
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      { const RemoveOnSignal one(a); }
      { const RemoveOnSignal other(b); }
    }
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  std::int64_t walks = 0;
  while (std::chrono::steady_clock::now() < end) remove_registered_paths(), ++walks;
  stop = true;
  writer.join();
  int removed = 0;
  for (const std::string& name : torn) removed += !std::filesystem::exists(name);
  EXPECT_EQ(removed, 0) << "of " << torn.size() << " files named by torn reads, after " << walks << " walks";
}

TEST(AtomicFile, ErrorsLeaveNoTemporaryAndTheOldFile) {
  test::ScratchDir dir;
  std::ofstream(dir.file("out.dx")) << "previous";
  EXPECT_THROW(write_atomically(dir.file("out.dx"),
                                [](const std::string& temporary) {
                                  std::ofstream(temporary) << "half";
                                  throw Error("disk full");
                                }),
               Error);
  EXPECT_EQ(files_in(dir.path()), 1);
  std::ifstream in(dir.file("out.dx"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "previous");
}

TEST(AtomicFile, LinksAreFollowedAndStreamsWrittenInPlace) {
  test::ScratchDir dir;
  std::filesystem::create_directories(dir.file("real"));
  std::filesystem::create_symlink("real/target.txt", dir.file("link.txt"));
  write_atomically(dir.file("link.txt"), [](const std::string& path) { std::ofstream(path) << "through the link"; });
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("link.txt")));
  EXPECT_EQ(std::filesystem::file_size(dir.file("real/target.txt")), 16u);
  EXPECT_EQ(write_target(dir.file("link.txt")), dir.file("real/target.txt"));
  // A FIFO: written directly (a rename over it would replace the pipe with a file).
  ASSERT_EQ(::mkfifo(dir.file("pipe").c_str(), 0600), 0);
  EXPECT_TRUE(is_stream_target(dir.file("pipe")));
  std::string received;
  const pid_t reader = ::fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    std::ifstream in(dir.file("pipe"));
    std::string line;
    std::getline(in, line);
    std::_Exit(line == "through the pipe" ? 0 : 1);
  }
  write_atomically(dir.file("pipe"), [](const std::string& path) { std::ofstream(path) << "through the pipe\n"; });
  int status = 0;
  ::waitpid(reader, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(is_stream_target(dir.file("pipe")));
}

TEST(AtomicFile, OutputsThatAreInputsOrEachOtherAreRefused) {
  test::ScratchDir dir;
  std::ofstream(dir.file("in.pqr")) << "ATOM";
  std::filesystem::create_symlink("in.pqr", dir.file("alias.pqr"));
  EXPECT_THROW(check_distinct_files({{dir.file("in.pqr"), "INPUT"}}, {{dir.file("alias.pqr"), "-o"}}), Error);
  EXPECT_THROW(check_distinct_files({{dir.file("in.pqr"), "INPUT"}}, {{dir.path().string() + "/./in.pqr", "-o"}}), Error);
  EXPECT_THROW(check_distinct_files({}, {{dir.file("a.dx"), "-o"}, {dir.path().string() + "/../" +
                                                                        dir.path().filename().string() + "/a.dx",
                                                                    "--png"}}),
               Error);
  EXPECT_NO_THROW(check_distinct_files({{dir.file("in.pqr"), "INPUT"}}, {{dir.file("a.dx"), "-o"}, {"/dev/null", "--report"},
                                                                         {"/dev/null", "--png"}}));
}

TEST(Resources, DiskAndMemoryNeedsAreNamedWithWhatNeedsThem) {
  test::ScratchDir dir;
  ::setenv("NBKIT_DISK_LIMIT", "1000", 1);
  ResourcePlan plan("a test run");
  plan.disk(dir.file("sub/out.dcd"), 5000, "the trajectory");  // a folder the run will make
  try {
    plan.check();
    FAIL() << "expected DiskError";
  } catch (const DiskError& error) {
    EXPECT_EQ(std::string(error.what()), "a test run would write 4.9 KiB to " + dir.path().string() +
                                             " (the trajectory (" + dir.file("sub/out.dcd") +
                                             ") 4.9 KiB) but only 1000 B are free there");
  }
  ::unsetenv("NBKIT_DISK_LIMIT");
  EXPECT_NO_THROW(plan.check());
  ::setenv("NBKIT_MEMORY_LIMIT", "1048576", 1);
  ResourcePlan memory("a test run");
  memory.memory(1 << 20, "the map");
  memory.memory(1 << 19, "the copy");
  EXPECT_THROW(memory.check(), MemoryError);
  ::unsetenv("NBKIT_MEMORY_LIMIT");
}

}  // namespace nbkit::io
