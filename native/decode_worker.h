#pragma once
#include <napi.h>

namespace voxmill {

// decodeAudio(input: Uint8Array | string, maxDurationSeconds: number) -> { promise, abort }
// Resolves to { samples: Float32Array (16 kHz mono), container, codec, sampleRate, channels, bitRate }.
Napi::Value DecodeAudioJs(const Napi::CallbackInfo& info);

// Wraps a vector's storage in an external ArrayBuffer without copying; the vector is freed by the GC.
Napi::Float32Array AdoptSamples(Napi::Env env, std::vector<float>&& samples);

}  // namespace voxmill
