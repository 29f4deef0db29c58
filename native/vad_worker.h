#pragma once
#include <napi.h>

#include "js_args.h"
#include "vad.h"

namespace voxmill {

// detectSpeech(samples: Float32Array (16 kHz mono), params: { modelPath, threshold, minSpeechMs, minSilenceMs,
// maxSpeechSeconds, speechPadMs, threads?, whisperSegmentation? }) -> { promise, abort }
// Resolves to [{ start, end }] in seconds of the input. Rejects with MODEL_LOAD_FAILED, VAD_FAILED or ABORTED.
Napi::Value DetectSpeechJs(const Napi::CallbackInfo& info);

// The VAD settings shared by detectSpeech's params and transcribe's params.vad, all required: modelPath,
// threshold, minSpeechMs, minSilenceMs, maxSpeechSeconds (0 = no limit), speechPadMs, and with `overlap`
// (transcription only) overlapSeconds. Throws INVALID_ARGUMENT.
VadOptions ReadVadOptions(Napi::Env env, const JsObject& params, bool overlap);

}  // namespace voxmill
