#include "whisper_log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "whisper.h"

namespace voxmill {
namespace {

thread_local std::string threadLog;
// Bounded so a chatty failure cannot grow memory without limit.
constexpr size_t kMaxThreadLog = 4096;

int StderrLevel() {
  const char* value = std::getenv("VOXMILL_WHISPER_LOG");
  if (value == nullptr) return 0;
  if (std::strcmp(value, "debug") == 0) return 2;
  return std::strcmp(value, "1") == 0 ? 1 : 0;
}

void OnLog(enum ggml_log_level level, const char* text, void* /*user*/) noexcept {
  static const int toStderr = StderrLevel();
  if (text == nullptr) return;
  // Called from C (ggml/whisper.cpp): nothing may escape, so a failed allocation only loses the message.
  try {
    const bool important = level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN;
    if (important && threadLog.size() < kMaxThreadLog) {
      threadLog.append(text, strnlen(text, kMaxThreadLog - threadLog.size()));
    }
    if (toStderr == 2 || (toStderr == 1 && important)) std::fputs(text, stderr);
  } catch (...) {
  }
}

}  // namespace

void InstallWhisperLog() {
  static std::once_flag once;
  std::call_once(once, [] { whisper_log_set(OnLog, nullptr); });
}

void ResetThreadLog() { threadLog.clear(); }

std::string ThreadLog() {
  std::string out = threadLog;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace voxmill
