//===- Process.cpp - run an offline compiler as a subprocess --------------===//

#include "Process.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace mlagen {

namespace {
Status systemError(const std::string &what) {
  return Status(StatusCode::Internal, what + ": " + std::strerror(errno));
}
} // namespace

Status runProcess(const std::vector<std::string> &argv, int &exitCode,
                  std::string &output) {
  // One pipe for stdout and stderr: read to EOF, then reap. O_CLOEXEC keeps
  // the read end (and this process's other descriptors) out of the child.
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0)
    return systemError("pipe");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 2);

  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                       environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipeFds[1]);
  if (rc != 0) {
    close(pipeFds[0]);
    errno = rc;
    return systemError("cannot start " + argv[0]);
  }

  output.clear();
  char buffer[4096];
  for (;;) {
    ssize_t n = read(pipeFds[0], buffer, sizeof(buffer));
    if (n > 0)
      output.append(buffer, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(pipeFds[0]);

  int waitStatus = 0;
  while (waitpid(pid, &waitStatus, 0) < 0) {
    if (errno != EINTR)
      return systemError("waitpid " + argv[0]);
  }
  exitCode = WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus)
                                   : 128 + WTERMSIG(waitStatus);
  return Status::ok();
}

TempDir::~TempDir() {
  if (!path_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
}

Status TempDir::create(const std::string &prefix) {
  const char *base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/" +
                        prefix + "-XXXXXX";
  if (!mkdtemp(pattern.data()))
    return systemError("cannot create a temporary directory " + pattern);
  path_ = pattern;
  return Status::ok();
}

bool isExecutable(const std::string &path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0 &&
         !std::filesystem::is_directory(path);
}

std::string findOnPath(const std::string &name) {
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (isExecutable(candidate))
      return candidate;
    start = end + 1;
  }
  return "";
}

Status readFile(const std::string &path, std::string &contents) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return systemError("cannot open " + path);
  contents.clear();
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      contents.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      Status status = systemError("cannot read " + path);
      close(fd);
      return status;
    }
  }
  close(fd);
  return Status::ok();
}

Status writeFile(const std::string &path, const std::string &contents) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return systemError("cannot create " + path);
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      Status status = systemError("cannot write " + path);
      close(fd);
      return status;
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0)
    return systemError("cannot write " + path);
  return Status::ok();
}

} // namespace mlagen
