//===- Log.cpp - what the runtime says on stderr, by $MLAGEN_LOG ----------===//

#include "Log.h"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace mlagen {

bool parseLogLevel(const std::string &text, LogLevel &out) {
  static const std::pair<const char *, LogLevel> names[] = {
      {"off", LogLevel::Off},   {"warn", LogLevel::Warn},
      {"warning", LogLevel::Warn}, {"info", LogLevel::Info},
      {"debug", LogLevel::Debug}};
  for (auto [name, level] : names)
    if (text == name) {
      out = level;
      return true;
    }
  return false;
}

LogLevel logLevel() {
  static const LogLevel level = [] {
    const char *text = std::getenv("MLAGEN_LOG");
    LogLevel parsed = LogLevel::Warn;
    if (text && *text && !parseLogLevel(text, parsed))
      std::fprintf(stderr,
                   "mlagen: warning: MLAGEN_LOG=%s is not off, warn, info or "
                   "debug; using warn\n",
                   text);
    return parsed;
  }();
  return level;
}

void logMessage(LogLevel level, const std::string &message) {
  const char *name = level == LogLevel::Debug  ? "debug"
                     : level == LogLevel::Info ? "info"
                                               : "warning";
  // One write, so lines from threads and processes do not interleave.
  std::string line = std::string("mlagen: ") + name + ": " + message + "\n";
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

} // namespace mlagen
