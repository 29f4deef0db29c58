#include "ffmpeg_log.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

extern "C" {
#include <libavutil/log.h>
}

namespace voxmill {
namespace {

thread_local std::string lastFfmpegError;

void OnFfmpegLog(void* avcl, int level, const char* fmt, va_list args) noexcept {
  static const bool toStderr = std::getenv("VOXMILL_FFMPEG_LOG") != nullptr;
  if (level > AV_LOG_ERROR && !toStderr) return;
  // Called from C (FFmpeg): nothing may escape, so a failed allocation only loses the message.
  try {
    char line[512];
    int printPrefix = 1;
    av_log_format_line(avcl, level, fmt, args, line, sizeof(line), &printPrefix);
    if (level <= AV_LOG_ERROR) {
      lastFfmpegError = line;
      while (!lastFfmpegError.empty() && (lastFfmpegError.back() == '\n' || lastFfmpegError.back() == ' ')) {
        lastFfmpegError.pop_back();
      }
    }
    if (toStderr) std::fputs(line, stderr);
  } catch (...) {
  }
}

}  // namespace

void InstallFfmpegLog() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(OnFfmpegLog); });
}

const std::string& LastFfmpegError() { return lastFfmpegError; }

void ClearFfmpegError() { lastFfmpegError.clear(); }

}  // namespace voxmill
