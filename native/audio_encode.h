// Mono float32 PCM -> mp3 / wav / ogg-opus / raw s16le, streaming, with resampling. Pure C++ (no N-API)
// so it runs on a worker thread and can be tested on its own. One encoder is used by one thread at a
// time; the caller serialises calls.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace voxmill {

struct EncodeOptions {
  std::string format;  // "mp3" | "wav" | "opus" | "pcm16"
  int inputSampleRate = 0;
  int outputSampleRate = 0;
  // Whole: the output is one finished file returned by Finish() (seekable, so headers carry exact sizes
  // and mp3 gets its Xing/LAME frame). Streaming: bytes come out of every Encode() call.
  bool whole = false;
  int64_t bitRate = 0;  // mp3/opus bits per second; ignored (set to 0) for PCM
};

struct EncodeFailure {
  // AUDIO_ENCODE_FAILED | INVALID_ARGUMENT | ENCODE_UNSUPPORTED_RATE | OUT_OF_MEMORY | ENCODER_CLOSED
  std::string code;
  std::string message;
};

// Checks options before any FFmpeg state exists; fills in the default bit rate. Returns false with
// the failure's code and message when they are unusable.
bool ValidateEncodeOptions(EncodeOptions& options, EncodeFailure& failure);

class AudioEncoder {
 public:
  // `options` must have passed ValidateEncodeOptions. FFmpeg is set up lazily by the first call.
  explicit AudioEncoder(EncodeOptions options);
  ~AudioEncoder();
  AudioEncoder(const AudioEncoder&) = delete;
  AudioEncoder& operator=(const AudioEncoder&) = delete;

  // Appends the bytes that are ready to `out` (in whole mode: none). Never throws for bad input; may
  // throw std::bad_alloc. Samples outside [-1, 1] are clipped, NaN and infinities become silence.
  // After a failure the encoder is closed: its state is freed and later calls fail with ENCODER_CLOSED.
  bool Encode(const float* samples, size_t count, std::vector<uint8_t>& out, EncodeFailure& failure);
  // Flushes resampler, codec and muxer and appends the rest (whole mode: the complete file), then
  // frees the FFmpeg state. Later calls fail.
  bool Finish(std::vector<uint8_t>& out, EncodeFailure& failure);
  // Frees the FFmpeg state now; idempotent.
  void Release();

 private:
  bool EncodeSamples(const float* samples, size_t count, std::vector<uint8_t>& out, EncodeFailure& failure);
  bool Flush(std::vector<uint8_t>& out, EncodeFailure& failure);
  static bool Closed(EncodeFailure& failure);

 public:
  struct State;

 private:
  EncodeOptions options_;
  std::unique_ptr<State> state_;
  bool finished_ = false;
};

}  // namespace voxmill
