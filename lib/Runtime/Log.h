//===- Log.h - what the runtime says on stderr, by $MLAGEN_LOG --*- C++ -*-===//
//
// MLAGEN_LOG=off|warn|info|debug (default warn). Warnings go through
// RuntimeOptions::onWarning, whose default prints them when the level is
// warn or more; info adds cache hits and misses, compile times and bundle
// decisions; debug adds lock waits and lookups. Never called on the
// launch path or on a memory-cache hit.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_LOG_H
#define MLAGEN_LIB_RUNTIME_LOG_H

#include <string>

namespace mlagen {

enum class LogLevel { Off = 0, Warn = 1, Info = 2, Debug = 3 };

// The level $MLAGEN_LOG names, read once; an unknown value is reported on
// stderr once and means warn.
LogLevel logLevel();
inline bool logEnabled(LogLevel level) { return logLevel() >= level; }

// "mlagen: info: <message>" on stderr, one write per line.
void logMessage(LogLevel level, const std::string &message);

// Parses a level name; false when `text` names none.
bool parseLogLevel(const std::string &text, LogLevel &out);

} // namespace mlagen

// Builds the message only when the level is on.
#define MLAGEN_LOG(level, message)                                             \
  do {                                                                         \
    if (::mlagen::logEnabled(::mlagen::LogLevel::level))                       \
      ::mlagen::logMessage(::mlagen::LogLevel::level, (message));              \
  } while (false)

#endif // MLAGEN_LIB_RUNTIME_LOG_H
