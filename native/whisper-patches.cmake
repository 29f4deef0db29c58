# voxmill's patch set over the pinned whisper.cpp (the whisper-cpp-src package; see package.json).
#
# The addon compiles a copy of whisper.cpp's src/whisper.cpp written into the build tree with the numbered edits
# below; the source tree is left as it is. Each edit names text that must occur exactly the given number of times in
# the pinned upstream, so an upgrade that moves or changes it fails at configure time naming the patch, and the patch
# cannot silently disappear. Edits apply in order; a later one sees the text the earlier ones wrote. What each patch
# measured is in BENCHMARKS.md, "Faster than faster-whisper (issue 43)".
#
#   0001  DTW guard: skip DTW on a window too short for its median filter (upstream aborts the process).
#   0002  Attention per state: flash attention and DTW are chosen per whisper state (per call), not per context, so
#         one loaded model serves calls that want word times (DTW, which needs the attention weights) and calls that
#         do not (flash attention, 1.3x faster encoder on tiny.en) without a second copy of the weights.
#   0003  Threads per graph pass: a call's thread count may change while it runs (the CPU budget lends a lone call
#         every core and takes the extra thread back when other work arrives).
#
# Input: WHISPER_CPP_TEXT (the upstream file's text). Output: WHISPER_CPP_TEXT, patched.

# Replaces `find` with `replace` in WHISPER_CPP_TEXT after checking it occurs exactly `count` times.
function(voxmill_whisper_edit patch count find replace)
  set(text "${WHISPER_CPP_TEXT}")
  set(found 0)
  string(LENGTH "${find}" find_length)
  while(TRUE)
    string(FIND "${text}" "${find}" at)
    if(at EQUAL -1)
      break()
    endif()
    math(EXPR found "${found} + 1")
    math(EXPR at "${at} + ${find_length}")
    string(SUBSTRING "${text}" ${at} -1 text)
  endwhile()
  if(NOT found EQUAL count)
    message(FATAL_ERROR "whisper.cpp patch ${patch}: expected ${count} occurrence(s) of '${find}' in "
      "${WHISPER_CPP_SOURCE}, found ${found}. The pinned whisper.cpp changed: update native/whisper-patches.cmake")
  endif()
  string(REPLACE "${find}" "${replace}" patched "${WHISPER_CPP_TEXT}")
  set(WHISPER_CPP_TEXT "${patched}" PARENT_SCOPE)
endfunction()

# --- 0001 DTW guard -------------------------------------------------------------------------------
# whisper.cpp aligns token times (DTW) over each decoding window's audio with a median filter 7 audio tokens wide, and
# asserts (abort(): the host process dies) when the window holds 7 tokens or fewer: a 110-150 ms clip of speech, a
# tail that short after the last window, or a window whose text ends by 0.14 s. Measured: 120 ms of jfk.wav with the
# real tiny.en and word timestamps aborted the process. The patched copy skips DTW for such a window (its tokens keep
# t_dtw = -1 and take the decoder's timestamps). The 7 is the median filter's width, the call's argument after
# n_frames; the second edit only checks it is still 7.
voxmill_whisper_edit(0001 1
  "if (ctx->params.dtw_token_timestamps && n_segments) {"
  "if (ctx->params.dtw_token_timestamps && n_segments && std::min(std::min(WHISPER_CHUNK_SIZE * 100, seek_delta), seek_end - seek) / 2 > 7) {")
voxmill_whisper_edit(0001 1 "seek, n_frames, 7, params.n_threads);" "seek, n_frames, 7, params.n_threads);")

# --- 0002 Attention per state ---------------------------------------------------------------------
# Upstream decides flash attention and DTW once per context, and turns DTW off when flash attention is on (DTW reads
# the cross-attention weights that the flash kernel never materializes). Every call then paid for DTW and lost flash
# attention, word times asked or not. Here the context may hold both; each state picks one at its creation
# (voxmill_whisper_init_state), and every place that read the context's choice reads the state's. Upstream's own
# whisper_init_state keeps upstream's rule (flash attention wins).
voxmill_whisper_edit(0002 1
  [=[    // padded buffer for flash-attention
    whisper_kv_cache kv_pad;
]=]
  [=[    // padded buffer for flash-attention
    whisper_kv_cache kv_pad;

    // voxmill patch 0002: this state's attention, chosen when it is made
    bool flash_attn = false;
    bool dtw_token_timestamps = false;
]=])
voxmill_whisper_edit(0002 1
  [=[static uint32_t whisper_kv_cache_get_padding(const struct whisper_context & wctx) {
    if (!wctx.params.flash_attn || !wctx.params.use_gpu) {]=]
  [=[static uint32_t whisper_kv_cache_get_padding(const struct whisper_context & wctx, bool flash_attn) {
    if (!flash_attn || !wctx.params.use_gpu) {]=])
voxmill_whisper_edit(0002 1 "whisper_kv_cache_get_padding(wctx);" "whisper_kv_cache_get_padding(wctx, wstate.flash_attn);")
voxmill_whisper_edit(0002 5 "wctx.params.flash_attn" "wstate.flash_attn")
voxmill_whisper_edit(0002 2 "wctx.params.dtw_token_timestamps" "wstate.dtw_token_timestamps")
voxmill_whisper_edit(0002 5 "ctx->params.dtw_token_timestamps" "state->dtw_token_timestamps")
voxmill_whisper_edit(0002 1
  [=[struct whisper_state * whisper_init_state(whisper_context * ctx) {
    whisper_state * state = new whisper_state;
]=]
  [=[struct whisper_state * voxmill_whisper_init_state(whisper_context * ctx, bool flash_attn, bool dtw_token_timestamps);

struct whisper_state * whisper_init_state(whisper_context * ctx) {
    return voxmill_whisper_init_state(ctx, ctx->params.flash_attn, !ctx->params.flash_attn);
}

// voxmill patch 0002: DTW when asked and the context has alignment heads; flash attention when asked, the context
// allows it and DTW is off.
struct whisper_state * voxmill_whisper_init_state(whisper_context * ctx, bool flash_attn, bool dtw_token_timestamps) {
    whisper_state * state = new whisper_state;
    state->dtw_token_timestamps = dtw_token_timestamps && ctx->params.dtw_token_timestamps;
    state->flash_attn = flash_attn && ctx->params.flash_attn && !state->dtw_token_timestamps;
]=])
voxmill_whisper_edit(0002 1
  "    if (params.flash_attn && params.dtw_token_timestamps) {"
  "    if (false) { // voxmill patch 0002: a context may hold both; each state chooses")

# --- 0003 Threads per graph pass ------------------------------------------------------------------
# Upstream takes a call's thread count once (whisper_full_params.n_threads). Here a state may point at a counter the
# caller changes while the call runs (voxmill_whisper_state_threads); each encoder and decoder graph pass (DTW's
# alignment pass and language detection included), the spectrogram and the beams' bookkeeping threads read it when
# they start. The CPU budget lends a lone call every core and takes the extra
# thread back when other work arrives, effective at the next graph pass.
voxmill_whisper_edit(0003 1
  [=[static uint32_t whisper_kv_cache_get_padding(const struct whisper_context & wctx, bool flash_attn) {]=]
  [=[// voxmill patch 0003: the threads of this state's next graph pass (the counter when set and positive).
void voxmill_whisper_state_threads(struct whisper_state * state, const std::atomic<int> * n_threads) {
    state->voxmill_n_threads = n_threads;
}

static int voxmill_threads(const struct whisper_state * state, int n_threads) {
    const int n = state->voxmill_n_threads ? state->voxmill_n_threads->load(std::memory_order_relaxed) : 0;
    return n > 0 ? n : n_threads;
}

static uint32_t whisper_kv_cache_get_padding(const struct whisper_context & wctx, bool flash_attn) {]=])
voxmill_whisper_edit(0003 1
  [=[    bool flash_attn = false;
    bool dtw_token_timestamps = false;
]=]
  [=[    bool flash_attn = false;
    bool dtw_token_timestamps = false;

    // voxmill patch 0003: the caller's thread counter, read at each graph pass (null: params.n_threads)
    const std::atomic<int> * voxmill_n_threads = nullptr;
]=])
voxmill_whisper_edit(0003 1
  "whisper_encode_internal(*ctx, *state, seek, params.n_threads, params.abort_callback"
  "whisper_encode_internal(*ctx, *state, seek, voxmill_threads(state, params.n_threads), params.abort_callback")
voxmill_whisper_edit(0003 2
  "whisper_decode_internal(*ctx, *state, state->batch, params.n_threads, false, params.abort_callback"
  "whisper_decode_internal(*ctx, *state, state->batch, voxmill_threads(state, params.n_threads), false, params.abort_callback")
voxmill_whisper_edit(0003 2
  "std::min(params.n_threads, n_decoders_cur)"
  "std::min(voxmill_threads(state, params.n_threads), n_decoders_cur)")
# The spectrogram and language detection at the start of a call, and each window's DTW alignment pass.
voxmill_whisper_edit(0003 1
  "whisper_pcm_to_mel_with_state(ctx, state, samples, n_samples, params.n_threads)"
  "whisper_pcm_to_mel_with_state(ctx, state, samples, n_samples, voxmill_threads(state, params.n_threads))")
voxmill_whisper_edit(0003 1
  "whisper_lang_auto_detect_with_state(ctx, state, 0, params.n_threads, probs.data())"
  "whisper_lang_auto_detect_with_state(ctx, state, 0, voxmill_threads(state, params.n_threads), probs.data())")
voxmill_whisper_edit(0003 1
  "seek, n_frames, 7, params.n_threads);"
  "seek, n_frames, 7, voxmill_threads(state, params.n_threads));")
