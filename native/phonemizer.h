// phonemize(dataDir, voice, texts): espeak-ng's clauses for each text (phonemizer_core.h), as a PromiseWorker job on
// libuv's pool. src/tts/phonemes.ts turns them into Piper's phonemes.
#pragma once
#include <napi.h>

namespace voxmill {

// phonemize(dataDir: string, voice: string, texts: string[]) -> { promise, abort }; the promise gives, per text, its
// clauses as { phonemes: string, terminator: number }.
Napi::Value PhonemizeJs(const Napi::CallbackInfo& info);
// The espeak-ng version compiled in.
Napi::Value EspeakVersionJs(const Napi::CallbackInfo& info);

}  // namespace voxmill
