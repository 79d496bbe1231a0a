//===- Process.h - run an offline compiler as a subprocess -----*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_PROCESS_H
#define MLAGEN_LIB_RUNTIME_PROCESS_H

#include "mlagen/Runtime/Status.h"

#include <string>
#include <vector>

namespace mlagen {

// Runs argv[0] (a path) with argv, stdin from /dev/null, and returns its exit
// code (128 + signal if killed) and its stdout and stderr interleaved.
// Internal if the process cannot be started.
Status runProcess(const std::vector<std::string> &argv, int &exitCode,
                  std::string &output);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
public:
  TempDir() = default;
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  ~TempDir();
  Status create(const std::string &prefix);
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

// Searches $PATH for an executable named `name`; empty if none.
std::string findOnPath(const std::string &name);
bool isExecutable(const std::string &path);

// Whole-file helpers for handing sources to and code objects from a compiler.
Status readFile(const std::string &path, std::string &contents);
Status writeFile(const std::string &path, const std::string &contents);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_PROCESS_H
