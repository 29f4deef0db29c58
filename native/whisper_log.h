// Routes whisper.cpp / ggml log output. whisper.cpp's logger is process-wide; we install one
// callback once and keep what matters per thread, so a failing load or transcription on a worker
// thread can report whisper's own reason instead of a bare "failed".
#pragma once
#include <string>

namespace voxmill {

// Installs the log callback (idempotent, thread-safe). Output goes to stderr only when the
// environment variable VOXMILL_WHISPER_LOG is set to 1 (or "debug" for every level).
void InstallWhisperLog();

// Clears the calling thread's captured warnings and errors.
void ResetThreadLog();

// The calling thread's captured warnings and errors since the last reset, one per line.
std::string ThreadLog();

}  // namespace voxmill
