// whisper.cpp loading and transcription, pure C++ (no N-API): it runs on a worker thread and reports
// through plain structs and callbacks. whisper_model.cc wraps it for JavaScript.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vad.h"
#include "whisper.h"

// From voxmill's patch 0002 to whisper.cpp (native/whisper-patches.cmake): a state whose attention is chosen per call.
// DTW when `dtw_token_timestamps` and the context has alignment heads; flash attention when `flash_attn`, the context
// was loaded with it, and DTW is off. C++ linkage, as defined in the patched copy compiled with the addon.
whisper_state* voxmill_whisper_init_state(whisper_context* ctx, bool flash_attn, bool dtw_token_timestamps);
// From patch 0013: whether models loaded on the calling thread keep an f16 file's decoder matrices in q8_0 (the
// patched copy's default is false). Set before each load: the setting stays with the thread.
void voxmill_whisper_decoder_q8(bool on);
// From patch 0013: the ggml type of the loaded decoder's matrices (GGML_TYPE_Q8_0 when quantized at load).
int voxmill_whisper_decoder_type(whisper_context* ctx);
// From patch 0019: whether models loaded on the calling thread make a q8_0 copy of an f16 vocabulary projection for
// greedy steps (the patched copy's default is true). Set before each load: the setting stays with the thread.
void voxmill_whisper_vocab_q8(bool on);
// From patch 0019: whether the loaded context made that copy.
bool voxmill_whisper_has_vocab_q8(whisper_context* ctx);
// From patch 0003: each later graph pass of `state` runs with `*n_threads` threads (when positive). The counter must
// outlive the state's use.
void voxmill_whisper_state_threads(whisper_state* state, const std::atomic<int>* n_threads);

namespace voxmill {

// A loaded context (the weights). Shared: a running job keeps it alive even if the model is disposed meanwhile.
using WhisperContextPtr = std::shared_ptr<whisper_context>;

// Why a load or a transcription failed: a stable code (MODEL_LOAD_FAILED, ABORTED, AUDIO_TOO_LONG,
// INVALID_ARGUMENT, VAD_FAILED, OUT_OF_MEMORY, TRANSCRIPTION_FAILED) and a message.
struct WhisperFailure {
  std::string code;
  std::string message;
};

// ---------------------------------------------------------------------------------------------------
// Loading

// Every field is set by the caller (TypeScript owns the defaults).
struct LoadOptions {
  std::string path;
  bool gpu = false;
  bool flashAttention = false;
  bool dtw = false;                   // use DTW token timestamps when a preset matches the model
  bool decoderInt8 = false;           // an f16 file's decoder matrices in q8_0 (patch 0013)
  bool greedyInt8Vocabulary = false;  // a q8_0 copy of an f16 vocabulary projection for greedy steps (patch 0019)
  int gpuDevice = 0;
};

struct ModelFacts {
  std::string type;  // "tiny", "base", ... as whisper.cpp reads it
  bool multilingual = false;
  int vocabSize = 0;
  int audioLayers = 0;
  int textLayers = 0;
  int audioState = 0;
  int mels = 0;
  int ftype = 0;                      // ggml_ftype of the weights, as the file says
  bool decoderInt8 = false;           // the decoder's matrices were quantized to q8_0 at load (patch 0013)
  bool greedyInt8Vocabulary = false;  // greedy steps rank the vocabulary on a q8_0 copy (patch 0019)
  std::string dtwPreset;              // "" when DTW is off; else calls with token times use it (and no flash attention)
  bool flashAttention = false;        // calls without token times use flash attention
  bool gpu = false;
  std::string device;  // ggml's name of the device the weights run on: "CPU", "CUDA0", "Vulkan0", ...
};

// Reads the file's header, then loads it. `cancel` (may be null) is checked once, before the weights are read.
// Returns null with `failure` set (MODEL_LOAD_FAILED or ABORTED) when it cannot.
WhisperContextPtr LoadWhisperModel(const LoadOptions& options, const std::atomic<bool>* cancel, ModelFacts& facts,
                                   WhisperFailure& failure);

// ---------------------------------------------------------------------------------------------------
// Transcription

// Every field the TypeScript layer always sends is set by the caller; the rest are off unless set.
struct TranscribeParams {
  std::string language;  // "" = auto-detect
  bool translate = false;
  int threads = 1;
  int beamSize = 0;  // 0 or 1 = greedy
  int bestOf = 1;
  float temperature = 0.0f;
  float temperatureIncrement = 0.0f;  // 0 = no fallback
  float entropyThreshold = 0.0f;
  float logprobThreshold = 0.0f;
  float noSpeechThreshold = 0.0f;
  std::string initialPrompt;  // "" = none
  bool tokenTimestamps = false;
  bool tinydiarize = false;
  bool suppressNonSpeech = false;
  // Decode each 30 s window with the text of the windows before it as the prompt (whisper's rolling context). Off,
  // only `initialPrompt` is given, to every window: a window that went wrong cannot pass its mistake on.
  bool conditionOnPreviousText = true;
  int maxSegmentLength = 0;  // 0 = no limit
  bool splitOnWord = false;
  bool vad = false;  // cut the audio to the speech vadOptions finds first
  VadOptions vadOptions;
  // The encoder's context in audio positions (50 a second); 0 = the model's 1500 (30 s). A pass of audio longer than
  // the context covers fails with CONTEXT_TOO_SHORT (whisper.cpp's DTW would abort the process on it).
  int audioContext = 0;
  // A window whose decoded sequence grows past this many tokens fails with TOKEN_LIMIT (0 = no limit): with a short
  // context the decoder can repeat itself to whisper's own 220-token limit, at many times the cost of a full run.
  int maxWindowTokens = 0;
  // When set, the threads of each graph pass from here on (the caller may change it while the call runs: patch 0003);
  // `threads` is the count it starts with.
  std::shared_ptr<const std::atomic<int>> liveThreads;
};

struct TokenOut {
  int id;
  float p;
  double t0, t1, tDtw;  // seconds; tDtw < 0 when unavailable
  bool special;
  uint32_t byteLength;
};

struct SegmentOut {
  double t0, t1;  // seconds of the audio whisper.cpp saw (the cut audio with VAD)
  std::string text;
  bool speakerTurnNext;
  float noSpeechProb;
  std::vector<TokenOut> tokens;
  std::string tokenBytes;  // every token's text back to back (UTF-8 may split across tokens)
};

struct TranscriptionOut {
  std::string language;  // detected or asked for; "" when VAD found no speech
  bool vad = false;      // VAD ran, and `speech` maps the cut audio's times to the input's
  std::vector<SpeechSpan> speech;
  std::vector<SegmentOut> segments;
};

// Observers, called on the transcribing thread, in this order: speech once (with VAD), then progress and segment
// as whisper.cpp goes. An unset one is not called, and whisper.cpp is not asked for what it would receive.
struct TranscribeCallbacks {
  std::function<void(const std::vector<SpeechSpan>& spans)> speech;
  std::function<void(int percent)> progress;
  std::function<void(int index, double t0, double t1, const std::string& text)> segment;
};

// Transcribes 16 kHz mono `samples` (read in place) with a whisper_state of its own, so calls on one context may
// run at once. `cancel` (may be null) is honoured between whisper.cpp's graph passes and during VAD. Returns false
// with `failure` set; `out` is then incomplete.
// The process is exiting (set from the main thread's `exit` event, src/native.ts): process.exit() joins the libuv
// pool threads without running the event loop again, so running transcriptions stop at their next checkpoint as if
// aborted, and none waits for the main thread any more.
void MarkProcessExiting();
bool ProcessExiting();

bool TranscribeWhisper(whisper_context* context, const float* samples, size_t count, const TranscribeParams& params,
                       const std::atomic<bool>* cancel, const TranscribeCallbacks& callbacks, TranscriptionOut& out,
                       WhisperFailure& failure);

}  // namespace voxmill
