#pragma once
#include <napi.h>

#include <vector>

namespace voxmill {

// decodeAudio(input: Uint8Array | string, { maxDurationSeconds, minSampleRate, maxSampleRate, stereo? })
//   -> { promise, abort }
// Resolves to { samples: Float32Array (16 kHz mono, finite, in [-1, 1]), container, codec, sampleRate, channels,
// bitRate }, plus stereo: { left, right } (16 kHz, as long as samples) when stereo is true and the source has 2+
// channels.
Napi::Value DecodeAudioJs(const Napi::CallbackInfo& info);

// Wraps a vector's storage in an external ArrayBuffer without copying; the vector is freed by the GC.
Napi::Float32Array AdoptSamples(Napi::Env env, std::vector<float>&& samples);

}  // namespace voxmill
