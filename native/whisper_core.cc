#include "whisper_core.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ggml-backend.h"
#include "whisper_log.h"

namespace voxmill {

namespace {
std::atomic<bool> g_processExiting{false};
}  // namespace

void MarkProcessExiting() { g_processExiting.store(true); }
bool ProcessExiting() { return g_processExiting.load(std::memory_order_relaxed); }

namespace {

// ---------------------------------------------------------------------------------------------------
// Loading

struct Header {
  int32_t vocab, audioCtx, audioState, audioHead, audioLayers, textCtx, textState, textHead, textLayers, mels, ftype;
};

// Reads the ggml header before whisper.cpp sees the file: a wrong file fails with a clear message,
// and the header decides the DTW alignment-heads preset, which must be fixed at load time.
bool ReadHeader(const std::string& path, Header& header, std::string& error) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    error = "cannot open " + path;
    return false;
  }
  uint32_t magic = 0;
  const bool ok = std::fread(&magic, sizeof(magic), 1, file) == 1 && std::fread(&header, sizeof(header), 1, file) == 1;
  std::fclose(file);
  if (!ok || magic != 0x67676d6c) {
    error = path + " is not a whisper.cpp ggml model (bad magic or too short)";
    return false;
  }
  return true;
}

whisper_alignment_heads_preset DtwPreset(const Header& h, std::string& name) {
  const bool english = h.vocab == 51864;
  switch (h.audioLayers) {
    case 4:
      name = english ? "tiny.en" : "tiny";
      return english ? WHISPER_AHEADS_TINY_EN : WHISPER_AHEADS_TINY;
    case 6:
      name = english ? "base.en" : "base";
      return english ? WHISPER_AHEADS_BASE_EN : WHISPER_AHEADS_BASE;
    case 12:
      name = english ? "small.en" : "small";
      return english ? WHISPER_AHEADS_SMALL_EN : WHISPER_AHEADS_SMALL;
    case 24:
      name = english ? "medium.en" : "medium";
      return english ? WHISPER_AHEADS_MEDIUM_EN : WHISPER_AHEADS_MEDIUM;
    case 32:
      // large-v1 and v2 share every shape, so only v3 (128 mels) and v3-turbo (4 text layers) are known.
      if (h.mels == 128) {
        name = h.textLayers == 4 ? "large-v3-turbo" : "large-v3";
        return h.textLayers == 4 ? WHISPER_AHEADS_LARGE_V3_TURBO : WHISPER_AHEADS_LARGE_V3;
      }
      break;
    default:
      break;
  }
  name.clear();
  return WHISPER_AHEADS_NONE;
}

// The device whisper.cpp puts the model on (whisper_backend_init_gpu): the gpuDevice-th GPU or integrated GPU in
// ggml's list, else none, and then the CPU. A build with no GPU backend, a machine where the backend found no device,
// and a gpuDevice past the last one all run on the CPU.
ggml_backend_dev_t ChosenGpuDevice(int gpuDevice) {
  int seen = 0;
  for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    const auto type = ggml_backend_dev_type(dev);
    if (type != GGML_BACKEND_DEVICE_TYPE_GPU && type != GGML_BACKEND_DEVICE_TYPE_IGPU) continue;
    if (seen++ == gpuDevice) return dev;
  }
  return nullptr;
}

bool IsSet(const std::atomic<bool>* flag) { return flag != nullptr && flag->load(std::memory_order_relaxed); }

// ---------------------------------------------------------------------------------------------------
// Transcription

double Centiseconds(int64_t t) { return static_cast<double>(t) / 100.0; }

// One whisper_full pass: samples [begin, end) of the audio whisper is given; its times are offset by begin.
struct Pass {
  size_t begin, end;
};

// whisper's window: audio up to this long is decoded in one encoder pass.
constexpr double kWindowSeconds = 30.0;
constexpr double kSampleRate = 16000.0;
constexpr size_t kSamplesPerFrame = 160;  // whisper's mel hop: 10 ms

// With the VAD, the joined speech is decoded in passes of whole speech stretches, each at most one window long (a
// stretch longer than that is a pass of its own, which whisper windows as usual). Given the joined hour in one
// call, whisper cut its 30 s windows wherever they fell, mid-word: words at window edges were dropped or written
// twice (60-minute file: 1.1 % WER against 0.0 % for the clips alone), and in places its seek drifted so that the
// text of three islands was stamped up to 20 s late. A pass ends after the stretch followed by the longest pause
// in the input among those ending in the second half of the window (a pause between sentences rather than inside
// one), the latest of equal pauses: 0.1 %, no late stretch. Passes filled greedily up to 30 s, cut inside
// sentences, gave 2.1 % (BENCHMARKS.md "Long audio").
std::vector<Pass> PassesOverSpans(const std::vector<SpeechSpan>& spans, size_t count) {
  std::vector<Pass> passes;
  const auto at = [count](double seconds) {
    return std::min(count, static_cast<size_t>(std::llround(seconds * kSampleRate)));
  };
  size_t first = 0;
  while (first < spans.size()) {
    // Where this pass starts: the previous one's end (the gap before this stretch included).
    const double begin = passes.empty() ? 0.0 : static_cast<double>(passes.back().end) / kSampleRate;
    size_t last = first;  // a stretch too long for the window is a pass of its own
    double bestPause = -1.0;
    for (size_t j = first; j < spans.size() && spans[j].procEnd - begin <= kWindowSeconds; j++) {
      const double pause = j + 1 < spans.size() ? spans[j + 1].origStart - spans[j].origEnd : 1e9;
      const bool secondHalf = spans[j].procEnd - begin >= kWindowSeconds / 2;
      // Before the second half, only the latest stretch counts (a fallback when the window has no later one).
      const double score = secondHalf ? pause : -1.0;
      if (score >= bestPause || !secondHalf) {
        if (secondHalf || bestPause < 0) last = j;
        if (secondHalf) bestPause = score;
      }
    }
    const size_t passBegin = passes.empty() ? 0 : passes.back().end;
    passes.push_back({passBegin, last + 1 < spans.size() ? at(spans[last].procEnd) : count});
    first = last + 1;
  }
  return passes;
}

// One call of TranscribeWhisper: what whisper.cpp's callbacks need to reach.
class Transcription {
 public:
  Transcription(whisper_context* context, const TranscribeParams& params, const std::atomic<bool>* cancel,
                const TranscribeCallbacks& callbacks, TranscriptionOut& out, WhisperFailure& failure)
      : context_(context), params_(params), cancel_(cancel), callbacks_(callbacks), out_(out), failure_(failure) {}

  bool Run(const float* samples, size_t count) {
    if (count > static_cast<size_t>(INT_MAX)) return Fail("AUDIO_TOO_LONG", "too many samples for whisper.cpp");
    // The decoder and the TypeScript layer hand over finite samples only; a direct caller that does not is refused
    // here rather than letting NaN reach whisper.cpp (whose DTW timestamps crash on it). About 0.1 ms per minute.
    for (size_t i = 0; i < count; i++) {
      if (!std::isfinite(samples[i])) {
        return Fail("INVALID_ARGUMENT", "samples[" + std::to_string(i) + "] is not finite (NaN or Infinity)");
      }
    }
    const float* audio = samples;
    size_t audioCount = count;
    std::vector<float> speech;
    if (params_.vad) {
      std::string error;
      if (!ExtractSpeech(samples, count, params_.vadOptions, speech, out_.speech, error, cancel_)) {
        return Cancelled() ? Fail("ABORTED", "aborted") : Fail("VAD_FAILED", error);
      }
      out_.vad = true;
      // Segment events carry times of the cut audio; the listener needs the map first (events stay in order).
      if (callbacks_.speech) callbacks_.speech(out_.speech);
      // No speech: the decoder is not run at all, so it cannot hallucinate on silence.
      if (speech.empty()) return true;
      audio = speech.data();
      audioCount = speech.size();
    }
    if (Cancelled()) return Fail("ABORTED", "transcription was aborted");

    ResetThreadLog();
    // DTW only when token times are asked for: it needs the attention weights, so it costs flash attention and a
    // second decoder pass per window (patch 0002 lets one context serve both kinds of call).
    std::unique_ptr<whisper_state, void (*)(whisper_state*)> state(
        voxmill_whisper_init_state(context_, true, params_.tokenTimestamps), whisper_free_state);
    if (!state) return Fail("OUT_OF_MEMORY", "cannot allocate a whisper state: " + ThreadLog());
    if (params_.liveThreads) voxmill_whisper_state_threads(state.get(), params_.liveThreads.get());

    const std::vector<Pass> passes =
        params_.vad ? PassesOverSpans(out_.speech, audioCount) : std::vector<Pass>{{0, audioCount}};
    total_ = audioCount;
    language_ = params_.language;
    // Detected once, on up to a window of the joined speech, as whisper would on its first window: the first pass
    // may be a single short stretch.
    if (language_.empty() && passes.size() > 1 && whisper_is_multilingual(context_) != 0) {
      const size_t head = std::min(audioCount, static_cast<size_t>(kWindowSeconds * kSampleRate));
      if (whisper_pcm_to_mel_with_state(context_, state.get(), audio, static_cast<int>(head), Threads()) != 0) {
        return Fail("TRANSCRIPTION_FAILED", "whisper.cpp could not compute the spectrogram: " + ThreadLog());
      }
      const int id = whisper_lang_auto_detect_with_state(context_, state.get(), 0, Threads(), nullptr);
      if (Cancelled()) return Fail("ABORTED", "transcription was aborted");
      if (id < 0) return Fail("TRANSCRIPTION_FAILED", "whisper.cpp could not detect the language: " + ThreadLog());
      language_ = whisper_lang_str(id);
    }
    for (size_t i = 0; i < passes.size(); i++) {
      pass_ = passes[i];
      passReported_ = 0;
      // whisper.cpp's DTW asserts (aborts the process) on a window of more than twice the context in 10 ms frames.
      // The caller sizes the context from the input, but the VAD's joins (overlap, silence) can make a pass longer.
      const size_t passFrames = (pass_.end - pass_.begin) / kSamplesPerFrame + 2;
      if (params_.audioContext > 0 && passFrames > 2 * static_cast<size_t>(params_.audioContext)) {
        return Fail("CONTEXT_TOO_SHORT", "audioContext " + std::to_string(params_.audioContext) +
                                             " is shorter than a " + std::to_string(passFrames) +
                                             "-frame window of the audio");
      }
      whisper_full_params wp = FullParams();
      if (i > 0 && params_.conditionOnPreviousText) {
        // The state still holds the text decoded so far: the next pass goes on from it, as whisper's next window
        // would (the initial prompt is in that context already).
        wp.no_context = false;
        wp.initial_prompt = nullptr;
      }
      const int rc = whisper_full_with_state(context_, state.get(), wp, audio + pass_.begin,
                                             static_cast<int>(pass_.end - pass_.begin));
      if (Cancelled()) return Fail("ABORTED", "transcription was aborted");
      if (tokenLimitHit_.load()) {
        return Fail("TOKEN_LIMIT",
                    "a decoding window grew past " + std::to_string(params_.maxWindowTokens) + " tokens");
      }
      if (nonFiniteOutput_.load()) {
        return Fail("TRANSCRIPTION_FAILED",
                    "the model produced non-finite values (NaN or Infinity); its weights may be damaged. Stopped "
                    "before computing timestamps");
      }
      if (rc != 0) {
        const std::string log = ThreadLog();
        return Fail("TRANSCRIPTION_FAILED",
                    "whisper.cpp failed with code " + std::to_string(rc) + (log.empty() ? "" : ": " + log));
      }
      // With DTW on, whisper.cpp reports new segments only after aligning them, so a window too short to align (see
      // patch 0001 in native/whisper-patches.cmake), and whisper's own count past the first window, leave some
      // unreported: the pass's remaining segments go out before its result.
      if (callbacks_.segment) ReportSegments(state.get());
      Collect(state.get());
      // A language detected in the first pass holds for the rest, as it does for whisper's later windows.
      if (language_.empty()) language_ = out_.language;
    }
    return true;
  }

 private:
  bool Fail(const char* code, const std::string& message) {
    failure_ = {code, message};
    return false;
  }

  bool Cancelled() const { return IsSet(cancel_) || ProcessExiting(); }

  // The threads for the next piece of work: the caller's live count when it gave one (patch 0003).
  int Threads() const {
    const int live = params_.liveThreads ? params_.liveThreads->load(std::memory_order_relaxed) : 0;
    return live > 0 ? live : params_.threads;
  }

  whisper_full_params FullParams() {
    whisper_full_params wp =
        whisper_full_default_params(params_.beamSize > 1 ? WHISPER_SAMPLING_BEAM_SEARCH : WHISPER_SAMPLING_GREEDY);
    wp.n_threads = Threads();
    wp.translate = params_.translate;
    wp.language = language_.empty() ? "auto" : language_.c_str();
    wp.detect_language = false;
    wp.print_progress = false;
    wp.print_realtime = false;
    wp.print_timestamps = false;
    wp.print_special = false;
    wp.token_timestamps = params_.tokenTimestamps;
    wp.temperature = params_.temperature;
    wp.temperature_inc = params_.temperatureIncrement;
    wp.entropy_thold = params_.entropyThreshold;
    wp.logprob_thold = params_.logprobThreshold;
    wp.no_speech_thold = params_.noSpeechThreshold;
    wp.greedy.best_of = params_.bestOf;
    wp.beam_search.beam_size = params_.beamSize > 1 ? params_.beamSize : wp.beam_search.beam_size;
    wp.initial_prompt = params_.initialPrompt.empty() ? nullptr : params_.initialPrompt.c_str();
    wp.tdrz_enable = params_.tinydiarize;
    wp.suppress_nst = params_.suppressNonSpeech;
    wp.no_context = true;  // a fresh state per call has no past; nothing to clear
    if (!params_.conditionOnPreviousText) {
      // whisper.cpp has no switch for this: the rolling context is capped at 0 tokens, and a prompt, if any, is
      // carried into every window with exactly the room it needs (its tokens and the "previous" marker).
      wp.carry_initial_prompt = !params_.initialPrompt.empty();
      wp.n_max_text_ctx =
          wp.carry_initial_prompt ? whisper_token_count(context_, params_.initialPrompt.c_str()) + 1 : 0;
    }
    wp.max_len = params_.maxSegmentLength;
    wp.audio_ctx = params_.audioContext;
    wp.split_on_word = params_.splitOnWord;
    wp.abort_callback = [](void* self) {
      auto* run = static_cast<Transcription*>(self);
      return run->Cancelled() || run->nonFiniteOutput_.load(std::memory_order_relaxed) ||
             run->tokenLimitHit_.load(std::memory_order_relaxed);
    };
    wp.abort_callback_user_data = this;
    // Guards whisper.cpp's DTW timestamps independently of the samples. They backtrack through the cross-attention
    // of the finished segment; when that is NaN no cost comparison holds, the path never steps diagonally, is one
    // step longer than the buffer whisper.cpp allots (N + M - 1), writes before it, and the token walk runs past the
    // last segment: SIGSEGV. NaN attention means a NaN decoder state, so every logit is NaN too: seeing one here,
    // the step is steered away from ending the segment (end-of-text ruled out, the rest made finite) and the next
    // graph pass aborts, so no segment decoded from NaN ever reaches DTW.
    wp.logits_filter_callback = [](whisper_context* ctx, whisper_state*, const whisper_token_data*, int n_tokens,
                                   float* logits, void* self) {
      auto* run = static_cast<Transcription*>(self);
      // The next graph pass aborts (abort_callback) and the call fails with TOKEN_LIMIT.
      if (run->params_.maxWindowTokens > 0 && n_tokens > run->params_.maxWindowTokens) {
        run->tokenLimitHit_.store(true, std::memory_order_relaxed);
      }
      const int n = whisper_n_vocab(ctx);
      bool finite = true;
      for (int i = 0; i < n && finite; i++) finite = std::isfinite(logits[i]) || logits[i] == -INFINITY;
      if (finite) return;
      run->nonFiniteOutput_.store(true, std::memory_order_relaxed);
      for (int i = 0; i < n; i++) logits[i] = 0.0f;
      logits[whisper_token_eot(ctx)] = -INFINITY;
    };
    wp.logits_filter_callback_user_data = this;
    wp.encoder_begin_callback = [](whisper_context*, whisper_state*, void* self) {
      const std::atomic<bool>* cancel = static_cast<Transcription*>(self)->cancel_;
      return cancel == nullptr || !cancel->load();
    };
    wp.encoder_begin_callback_user_data = this;
    if (callbacks_.progress) {
      wp.progress_callback = [](whisper_context*, whisper_state*, int progress, void* self) {
        static_cast<Transcription*>(self)->ReportProgress(progress);
      };
      wp.progress_callback_user_data = this;
    }
    if (callbacks_.segment) {
      // whisper.cpp's n_new is wrong when DTW is on, so count what was reported ourselves.
      wp.new_segment_callback = [](whisper_context*, whisper_state* st, int, void* self) {
        static_cast<Transcription*>(self)->ReportSegments(st);
      };
      wp.new_segment_callback_user_data = this;
    }
    return wp;
  }

  // A time whisper gave in the current pass (centiseconds from its start), in seconds of the audio whisper was given.
  // whisper.cpp does not keep timestamps inside its input: a short pass's last segment may end past it, in the gap
  // or the next stretch, which the time map would spread over the pause that follows. So times stop at the pass's end.
  double PassTime(int64_t centiseconds) const {
    const double length = static_cast<double>(pass_.end - pass_.begin) / kSampleRate;
    return static_cast<double>(pass_.begin) / kSampleRate + std::clamp(Centiseconds(centiseconds), 0.0, length);
  }

  // Percent of the whole call: the passes before this one, and `progress` percent of this one; never backwards
  // (whisper's own count can pass 100 in a pass shorter than a window).
  void ReportProgress(int progress) {
    const double done = static_cast<double>(pass_.begin) +
                        static_cast<double>(pass_.end - pass_.begin) * std::clamp(progress, 0, 100) / 100.0;
    const int percent = total_ > 0 ? static_cast<int>(done * 100.0 / static_cast<double>(total_)) : progress;
    if (percent <= progress_) return;
    progress_ = percent;
    callbacks_.progress(percent);
  }

  void ReportSegments(whisper_state* state) {
    const int total = whisper_full_n_segments_from_state(state);
    for (; passReported_ < total; passReported_++) {
      const char* text = whisper_full_get_segment_text_from_state(state, passReported_);
      callbacks_.segment(reported_++, PassTime(whisper_full_get_segment_t0_from_state(state, passReported_)),
                         PassTime(whisper_full_get_segment_t1_from_state(state, passReported_)),
                         text != nullptr ? text : "");
    }
  }

  void Collect(whisper_state* state) {
    const int langId = whisper_full_lang_id_from_state(state);
    const char* lang = langId >= 0 ? whisper_lang_str(langId) : nullptr;
    out_.language = lang != nullptr ? lang : params_.language;
    const whisper_token eot = whisper_token_eot(context_);
    const int n = whisper_full_n_segments_from_state(state);
    out_.segments.reserve(out_.segments.size() + static_cast<size_t>(n));
    for (int i = 0; i < n; i++) {
      SegmentOut segment;
      segment.t0 = PassTime(whisper_full_get_segment_t0_from_state(state, i));
      segment.t1 = PassTime(whisper_full_get_segment_t1_from_state(state, i));
      const char* text = whisper_full_get_segment_text_from_state(state, i);
      segment.text = text != nullptr ? text : "";
      segment.speakerTurnNext = whisper_full_get_segment_speaker_turn_next_from_state(state, i);
      segment.noSpeechProb = whisper_full_get_segment_no_speech_prob_from_state(state, i);
      const int tokens = whisper_full_n_tokens_from_state(state, i);
      segment.tokens.reserve(static_cast<size_t>(tokens));
      for (int j = 0; j < tokens; j++) {
        const whisper_token_data data = whisper_full_get_token_data_from_state(state, i, j);
        const char* piece = whisper_full_get_token_text_from_state(context_, state, i, j);
        const std::string bytes = piece != nullptr ? piece : "";
        segment.tokenBytes += bytes;
        // Token times whisper did not compute are negative, and stay so ("none").
        const auto tokenTime = [this](int64_t t) { return t < 0 ? Centiseconds(t) : PassTime(t); };
        segment.tokens.push_back({data.id, data.p, tokenTime(data.t0), tokenTime(data.t1),
                                  data.t_dtw >= 0 ? PassTime(data.t_dtw) : -1.0, data.id >= eot,
                                  static_cast<uint32_t>(bytes.size())});
      }
      out_.segments.push_back(std::move(segment));
    }
  }

  whisper_context* context_;
  const TranscribeParams& params_;
  const std::atomic<bool>* cancel_;
  const TranscribeCallbacks& callbacks_;
  TranscriptionOut& out_;
  WhisperFailure& failure_;
  int reported_ = 0;      // segments reported in every pass so far
  int passReported_ = 0;  // of the current pass's
  Pass pass_{0, 0};
  size_t total_ = 0;
  int progress_ = -1;  // the last percent reported
  // The language asked for, or once the first pass found it, that one ("" = detect).
  std::string language_;
  std::atomic<bool> nonFiniteOutput_{false};
  std::atomic<bool> tokenLimitHit_{false};
};

}  // namespace

WhisperContextPtr LoadWhisperModel(const LoadOptions& options, const std::atomic<bool>* cancel, ModelFacts& facts,
                                   WhisperFailure& failure) {
  Header header{};
  std::string error;
  if (!ReadHeader(options.path, header, error)) {
    failure = {"MODEL_LOAD_FAILED", error};
    return nullptr;
  }
  whisper_context_params params = whisper_context_default_params();
  params.use_gpu = options.gpu;
  params.gpu_device = options.gpuDevice;
  params.flash_attn = options.flashAttention;
  if (options.dtw) {
    params.dtw_aheads_preset = DtwPreset(header, facts.dtwPreset);
    params.dtw_token_timestamps = params.dtw_aheads_preset != WHISPER_AHEADS_NONE;
    // Both may stay on: each call's state picks DTW (word times asked) or flash attention (patch 0002).
  }
  if (IsSet(cancel)) {
    failure = {"ABORTED", "model loading was aborted"};
    return nullptr;
  }
  ResetThreadLog();
  voxmill_whisper_decoder_q8(options.decoderInt8);
  voxmill_whisper_vocab_q8(options.greedyInt8Vocabulary);
  whisper_context* ctx = whisper_init_from_file_with_params_no_state(options.path.c_str(), params);
  if (ctx == nullptr) {
    const std::string log = ThreadLog();
    failure = {"MODEL_LOAD_FAILED", "whisper.cpp could not load " + options.path + (log.empty() ? "" : ": " + log)};
    return nullptr;
  }
  WhisperContextPtr context(ctx, whisper_free);
  facts.type = whisper_model_type_readable(ctx);
  facts.multilingual = whisper_is_multilingual(ctx) != 0;
  facts.vocabSize = whisper_model_n_vocab(ctx);
  facts.audioLayers = whisper_model_n_audio_layer(ctx);
  facts.textLayers = whisper_model_n_text_layer(ctx);
  facts.audioState = whisper_model_n_audio_state(ctx);
  facts.mels = whisper_model_n_mels(ctx);
  facts.ftype = whisper_model_ftype(ctx);
  // What was loaded, not what was asked: patch 0013 quantizes only an f16 file's decoder.
  facts.decoderInt8 = options.decoderInt8 && voxmill_whisper_decoder_type(ctx) == GGML_TYPE_Q8_0;
  // Patch 0019 makes the copy only of an f16 projection on the CPU.
  facts.greedyInt8Vocabulary = voxmill_whisper_has_vocab_q8(ctx);
  facts.flashAttention = params.flash_attn;
  ggml_backend_dev_t gpu = params.use_gpu ? ChosenGpuDevice(params.gpu_device) : nullptr;
  facts.gpu = gpu != nullptr;
  facts.device = gpu != nullptr ? ggml_backend_dev_name(gpu) : "CPU";
  if (!params.dtw_token_timestamps) facts.dtwPreset.clear();
  return context;
}

bool TranscribeWhisper(whisper_context* context, const float* samples, size_t count, const TranscribeParams& params,
                       const std::atomic<bool>* cancel, const TranscribeCallbacks& callbacks, TranscriptionOut& out,
                       WhisperFailure& failure) {
  Transcription transcription(context, params, cancel, callbacks, out, failure);
  return transcription.Run(samples, count);
}

}  // namespace voxmill
