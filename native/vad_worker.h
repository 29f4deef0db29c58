#pragma once
#include <napi.h>

namespace voxmill {

// detectSpeech(samples: Float32Array (16 kHz mono), params: { modelPath, threshold?, minSpeechMs?,
// minSilenceMs?, maxSpeechSeconds?, speechPadMs?, threads? }) -> { promise, abort }
// Resolves to [{ start, end }] in seconds of the input. Rejects with MODEL_LOAD_FAILED, VAD_FAILED or ABORTED.
Napi::Value DetectSpeechJs(const Napi::CallbackInfo& info);

}  // namespace voxmill
