// FFmpeg's log, routed: quiet by default (a library inside someone's server must not print), errors kept per
// thread so a failure's message can carry FFmpeg's own explanation. VOXMILL_FFMPEG_LOG=1 prints everything.
#pragma once
#include <string>

namespace voxmill {

// Installs the callback once per process (FFmpeg has one global logger). Called from the addon's Init on
// the main thread; later calls (jobs on pool threads) do nothing.
void InstallFfmpegLog();
// The last error FFmpeg logged on this thread, and forgetting it before a new job.
const std::string& LastFfmpegError();
void ClearFfmpegError();

}  // namespace voxmill
