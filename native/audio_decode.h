// Any container FFmpeg knows -> 16 kHz mono float32 (and optionally left/right). Pure C++ (no N-API) so it runs on a
// worker thread and can be fuzzed on its own.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace voxmill {

// The highest source rate FFmpeg's resampler is asked to handle; callers choose their maximum below it.
constexpr int kMaxSampleRate = 768000;

struct DecodeRequest {
  // Exactly one of (data, size) or path is used.
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string path;
  int targetSampleRate = 16000;
  // Decoding stops with AUDIO_TOO_LONG as soon as the output would pass this many seconds.
  double maxDurationSeconds = 3 * 3600.0;
  // Also produce `left` and `right` when the source has two or more channels.
  bool stereo = false;
  // Source sample rates outside [minSampleRate, maxSampleRate] fail with AUDIO_DECODE_FAILED, checked on the
  // stream header and again on every decoded frame. A tiny rate is a decompression bomb: 128 KB of samples
  // "at 7 Hz" resample to hours of audio. The caller (TypeScript) owns the defaults.
  int minSampleRate = 0;
  int maxSampleRate = 0;
  // A container that parses but holds no samples gives empty output instead of AUDIO_EMPTY (empty input bytes
  // are AUDIO_EMPTY either way: there is no container to read).
  bool allowEmpty = false;
  const std::atomic<bool>* cancel = nullptr;
};

// Every output sample is finite and in [-1, 1]: NaN and ±Inf become 0 and louder values are clipped, so
// float sources with garbage samples cannot reach whisper.cpp (NaN samples crashed its DTW timestamps).
struct DecodedAudio {
  std::vector<float> samples;  // mono, targetSampleRate
  // Only with request.stereo and a source of 2+ channels, else empty: at targetSampleRate, as long as
  // `samples`. A 2-channel source's own channels; more channels are libswresample's standard stereo
  // downmix (centre and surrounds added at -3 dB to both sides, LFE dropped; float, so not normalised).
  std::vector<float> left, right;
  std::string container;          // FFmpeg demuxer name, e.g. "wav", "mp3", "mov,mp4,m4a,3gp,3g2,mj2"
  std::string codec;              // e.g. "pcm_s16le", "mp3", "aac"
  int sampleRate = 0;             // of the source stream
  int channels = 0;               // of the source stream
  int64_t bitRate = 0;            // of the source stream when known, else 0
  uint64_t nonFiniteSamples = 0;  // output samples that were NaN or ±Inf and were set to 0
};

// Makes samples safe for whisper.cpp in place: NaN and ±Inf -> 0, everything else clamped to [-1, 1].
// Returns how many were not finite.
uint64_t SanitizeSamples(float* samples, size_t count);

struct DecodeFailure {
  // AUDIO_DECODE_FAILED | AUDIO_UNSUPPORTED | AUDIO_EMPTY | AUDIO_TOO_LONG | ABORTED | FILE_NOT_FOUND
  std::string code;
  std::string message;
};

// Returns true on success. Never throws for bad input; may throw std::bad_alloc.
bool DecodeAudio(const DecodeRequest& request, DecodedAudio& out, DecodeFailure& failure);

// FFmpeg's version string, for diagnostics.
std::string FfmpegVersion();

}  // namespace voxmill
