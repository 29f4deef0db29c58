# voxmill's patch set over the pinned whisper.cpp (the whisper-cpp-src package, ggml included; see package.json).
#
# The addon compiles copies of whisper.cpp's src/whisper.cpp and of ggml's CPU operators (ggml/src/ggml-cpu/ops.cpp),
# graph runner (ggml-cpu.c), vector kernels (vec.cpp) and llamafile's tiled products (llamafile/sgemm.cpp), and of its
# BLAS backend (ggml/src/ggml-blas/ggml-blas.cpp, in builds with BLAS), written into the build tree with the numbered
# edits below; the source tree is left as it is.
# Each edit names text that must occur exactly the given number of times in the pinned upstream, so an upgrade that
# moves or changes it fails at configure time naming the patch, and the patch cannot silently disappear. Edits apply
# in order; a later one sees the text the earlier ones wrote. What each patch measured is in BENCHMARKS.md, "Faster
# than faster-whisper (issue 43)".
#
#   0001  DTW guard: skip DTW on a window too short for its median filter (upstream aborts the process).
#   0002  Attention per state: flash attention and DTW are chosen per whisper state (per call), not per context, so
#         one loaded model serves calls that want word times (DTW, which needs the attention weights) and calls that
#         do not (flash attention, 1.3x faster encoder on tiny.en) without a second copy of the weights.
#   0003  Threads per graph pass: a call's thread count may change while it runs (the CPU budget lends a lone call
#         every core and takes the extra thread back when other work arrives).
#   0004  Flash attention's keys and values converted once per head: ggml's tiled CPU kernel converted a head's f16
#         keys and values to f32 again for every 64 queries (24 times per head in a 1500-position encoder window).
#   0005  The encoder's two convolutions as f32 im2col times the f16 kernel, which the BLAS backend takes, instead of
#         ggml's f16 dot products: the encoder 16-24 % faster with OpenBLAS; not bit-identical (see the patch).
#   0006  A row's largest score over 16 running maxima instead of one scalar chain (softmax, flash attention):
#         bit-identical.
#   0007  The decoder's attention without flash attention on the CPU (the encoder keeps it): beam 5 1.7-2x faster
#         with llamafile's sgemm; not bit-identical with flash attention.
#   0008  The decoder's attention products in whole blocks of 32 keys, so llamafile's sgemm takes them (it needs the
#         inner dimension in whole vectors); not bit-identical.
#   0009  ggml's barrier yields its core after a short spin (ggml-cpu.c): with more threads than cores (two processes
#         transcribing at once) a spinning thread kept its core from the thread it waited for, up to 15-19 times
#         slower; results unchanged.
#   0010  A window's prompt (the previous text, up to 224 tokens) projects onto the vocabulary only the rows whose
#         logits are read (1-4); upstream projects every row. Not bit-identical (see the patch).
#   0011  no_speech_prob from the start-of-transcript token's logits, as OpenAI's decoder and faster-whisper; upstream
#         read a row never copied out whenever the prompt held more than that token (later windows, multilingual
#         models).
#   0012  f16 dot products (vec.cpp): with AVX512-FP16, summed in single precision (ggml sums in half precision, and
#         its 128-value blocks left the decoder's 64-value attention products wholly to scalar code); elsewhere the
#         leftovers past whole blocks in whole vectors. Not bit-identical.
#   0013  On request, the decoder's matrices in q8_0, quantized from an f16 file as it is read (a greedy step reads
#         every decoder weight for one token: half the bytes); the encoder keeps f16. Not bit-identical. Per loading
#         thread: voxmill_whisper_decoder_q8(true) before loading; off by default.
#   0014  The BLAS backend takes only products of more than 448 rows (the encoder's 768-3000), so the decoder's
#         prompt pass (up to 228 tokens) runs on ggml's own f16 kernels instead of converting every decoder matrix to
#         f32 for OpenBLAS on each pass: prompt passes 2.1x faster. Not bit-identical.
#   0015  ggml's pad (ops.cpp) copies whole rows when only the first dimension grows at its end (the cross-attention
#         softmax padded to a multiple of 32 keys by 0008, every decoder step): it went value by value with the
#         outermost dimension innermost, 3 % of a beam-5 call. Bit-identical.
#   0016  Beam search's draws (whisper_sample_token_topk) without the work nothing reads: upstream sorted a copy of
#         the logits for the k (beam size) best and never used it, and built a std::discrete_distribution (two
#         vectors of n_vocab doubles) per decoder and step. The table of cumulative probabilities is the decoder's,
#         made once per step, and the draws are libstdc++'s exactly: bit-identical with gcc's build. A libc++ build,
#         whose discrete_distribution drew otherwise, now draws the same, but for a canonical draw of 1.0 (about
#         once in 2^42 draws), which libstdc++ clamps below 1 and libc++ does not.
#   0017  llamafile's f16 products of 4-6 columns (beam search's batched decoder rows) with an inner dimension of 256
#         or more, on 16-register x64 builds (AVX or AVX2 with F16C, no AVX-512): one pass of single-row tiles
#         instead of two passes of 4-row tiles, and for any row count (a multilingual vocabulary's 51,865 rows went
#         to ggml's dot products). Bit-identical where upstream's tiles took the product; beam-5 decoder steps
#         14-28 % faster on AVX2.
#   0018  The log-mel's 25-point DFTs (16 a frame) advance their table index instead of dividing for it per term.
#         Bit-identical.
#   0019  A greedy step (one token, temperature 0) projects onto a q8_0 copy of the f16 vocabulary projection (half
#         the bytes of the largest matrix a step reads), then recomputes from the f16 rows, bit for bit as the f16
#         product, the logits that decide the token (within a margin far over the measured q8_0 error). The f16
#         tokens and timestamps; reported probabilities move by up to about 0.002. Per loading thread:
#         voxmill_whisper_vocab_q8(false) turns it off (on by default).
#   0020  The log-softmax and the probabilities (2 x 51,864 expf and three more passes per decoder and step) eight or
#         four values at a time through native/voxmill_expf.h, glibc's expf algorithm with its FMA build's
#         operations, on CPUs with AVX2 and FMA. Bit-identical (all 2^32 exponentials checked against the C library).
#   0021  The tiled flash attention (the encoder) multiplies a query tile's own rows only, and the rows past the last
#         whole block of the micro-kernel's height (4 of every 64 with AVX2) as one block instead of one at a time.
#         Bit-identical.
#   0022  The encoder's GELU through ggml's f16 table eight values at a time (native/voxmill_f16.h, AVX2 and F16C).
#         Bit-identical (all 2^32 inputs checked).
#   0023  The copy of f32 rows into f16 (the encoder's keys and values for flash attention) eight values at a time
#         (native/voxmill_f16.h, AVX2 and F16C). Bit-identical (all 2^32 inputs checked).
#   0024  The log-mel's 25-point DFTs run their outputs side by side (each output's chain of multiply-adds as before),
#         and its filter bank skips each filter's groups of zero weights while the frame's bins are finite.
#         Bit-identical.
#   0025  A greedy step at temperature 0 takes the probabilities of the timestamp tokens and of the tokens within 1e-3
#         of the largest log probability only, not all 51,864 (on 0020's path). Bit-identical.
#   0026  The timestamp rule's largest text log probability, and 0019's largest text logit and its scan for the tokens
#         to rescore, eight at a time (on 0020's path). Bit-identical.
#   0027  Beam search as openai-whisper and CTranslate2 run it: at temperature 0 each beam proposes its k + 1 most
#         probable tokens (upstream drew k samples), and a hypothesis that ends in end-of-text is set aside instead of
#         stopping a live beam until as many have finished as there are beams. Changes beam-search output by design;
#         greedy decoding is untouched.
#   0028  On x86-64, llamafile's products of at most 6 columns (beam search's decoder steps) prefetch the weight rows
#         8 rows ahead of the tile: the short rows of a streamed matrix left the tiles waiting on memory.
#         Bit-identical.
#   0029  With AVX-512, llamafile's f16 products of 2-6 columns in 4-row tiles over chunks of rows claimed from the
#         thread pool's counter (upstream claimed every 4-16 rows), and for any row count (a multilingual vocabulary
#         went to ggml's one-row dot products). Bit-identical where upstream's tiles took the product.
#
# Included after add_subdirectory() of the tree at WHISPER_CPP_DIR: each patched copy replaces its original among
# its target's sources.

# The file being patched: VOXMILL_PATCH_SOURCE (its path) and VOXMILL_PATCH_TEXT (its text, edited in place).
macro(voxmill_patch_begin relative_path)
  set(VOXMILL_PATCH_SOURCE "${WHISPER_CPP_DIR}/${relative_path}")
  file(READ "${VOXMILL_PATCH_SOURCE}" VOXMILL_PATCH_TEXT)
  # A source or a patch that changes reconfigures, so the patched copy follows it.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${VOXMILL_PATCH_SOURCE}"
    "${CMAKE_CURRENT_LIST_FILE}")
endmacro()

# Replaces `find` with `replace` in VOXMILL_PATCH_TEXT after checking it occurs exactly `count` times.
function(voxmill_edit patch count find replace)
  set(text "${VOXMILL_PATCH_TEXT}")
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
      "${VOXMILL_PATCH_SOURCE}, found ${found}. The pinned whisper.cpp changed: update native/whisper-patches.cmake")
  endif()
  string(REPLACE "${find}" "${replace}" patched "${VOXMILL_PATCH_TEXT}")
  set(VOXMILL_PATCH_TEXT "${patched}" PARENT_SCOPE)
endfunction()

# Writes the patched text to voxmill-patched/<relative_path> in the build tree and compiles it in `target` instead
# of the original, which the target lists as `listed_as` (relative to its folder) or by its whole path.
function(voxmill_patch_end target listed_as relative_path)
  if(NOT TARGET ${target})
    message(STATUS "voxmill: no ${target} target in this build (${relative_path} not compiled), its patches unused")
    return()
  endif()
  set(copy "${CMAKE_BINARY_DIR}/voxmill-patched/${relative_path}")
  file(WRITE "${copy}.next" "${VOXMILL_PATCH_TEXT}")
  # Copied only when it changed, so a reconfigure does not rebuild it.
  configure_file("${copy}.next" "${copy}" COPYONLY)
  get_target_property(sources ${target} SOURCES)
  list(LENGTH sources count_before)
  list(REMOVE_ITEM sources "${listed_as}" "${VOXMILL_PATCH_SOURCE}")
  list(LENGTH sources count_after)
  if(count_after EQUAL count_before)
    message(FATAL_ERROR "the ${target} target of ${WHISPER_CPP_DIR} does not list ${relative_path} as '${listed_as}': "
      "update native/whisper-patches.cmake (both copies would be linked)")
  endif()
  list(APPEND sources "${copy}")
  set_property(TARGET ${target} PROPERTY SOURCES ${sources})
  # The files this configure patched, for tools that lay them over a copy of the tree (bench/build-whisper-cli.mjs
  # --patched); a copy left from a dropped patch is not listed.
  set_property(GLOBAL APPEND PROPERTY VOXMILL_PATCHED_FILES "${relative_path}")
  get_property(listed GLOBAL PROPERTY VOXMILL_PATCHED_FILES)
  string(REPLACE ";" "\n" listed "${listed}")
  file(WRITE "${CMAKE_BINARY_DIR}/voxmill-patched/files.txt" "${listed}\n")
endfunction()

# Copies `source` (relative to the project) to voxmill-patched/<relative_path> for the patched copies to include, and
# lists it with them.
function(voxmill_patch_add_file target source relative_path)
  if(NOT TARGET ${target})
    return()
  endif()
  get_filename_component(from "${CMAKE_CURRENT_LIST_DIR}/../${source}" ABSOLUTE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${from}")
  configure_file("${from}" "${CMAKE_BINARY_DIR}/voxmill-patched/${relative_path}" COPYONLY)
  set_property(GLOBAL APPEND PROPERTY VOXMILL_PATCHED_FILES "${relative_path}")
  get_property(listed GLOBAL PROPERTY VOXMILL_PATCHED_FILES)
  string(REPLACE ";" "\n" listed "${listed}")
  file(WRITE "${CMAKE_BINARY_DIR}/voxmill-patched/files.txt" "${listed}\n")
endfunction()

voxmill_patch_begin(src/whisper.cpp)

# --- 0001 DTW guard -------------------------------------------------------------------------------
# whisper.cpp aligns token times (DTW) over each decoding window's audio with a median filter 7 audio tokens wide, and
# asserts (abort(): the host process dies) when the window holds 7 tokens or fewer: a 110-150 ms clip of speech, a
# tail that short after the last window, or a window whose text ends by 0.14 s. Measured: 120 ms of jfk.wav with the
# real tiny.en and word timestamps aborted the process. The patched copy skips DTW for such a window (its tokens keep
# t_dtw = -1 and take the decoder's timestamps). The 7 is the median filter's width, the call's argument after
# n_frames; the second edit only checks it is still 7.
voxmill_edit(0001 1
  "if (ctx->params.dtw_token_timestamps && n_segments) {"
  "if (ctx->params.dtw_token_timestamps && n_segments && std::min(std::min(WHISPER_CHUNK_SIZE * 100, seek_delta), seek_end - seek) / 2 > 7) {")
voxmill_edit(0001 1 "seek, n_frames, 7, params.n_threads);" "seek, n_frames, 7, params.n_threads);")

# --- 0002 Attention per state ---------------------------------------------------------------------
# Upstream decides flash attention and DTW once per context, and turns DTW off when flash attention is on (DTW reads
# the cross-attention weights that the flash kernel never materializes). Every call then paid for DTW and lost flash
# attention, word times asked or not. Here the context may hold both; each state picks one at its creation
# (voxmill_whisper_init_state), and every place that read the context's choice reads the state's. Upstream's own
# whisper_init_state keeps upstream's rule (flash attention wins).
voxmill_edit(0002 1
  [=[    // padded buffer for flash-attention
    whisper_kv_cache kv_pad;
]=]
  [=[    // padded buffer for flash-attention
    whisper_kv_cache kv_pad;

    // voxmill patch 0002: this state's attention, chosen when it is made
    bool flash_attn = false;
    bool dtw_token_timestamps = false;
]=])
voxmill_edit(0002 1
  [=[static uint32_t whisper_kv_cache_get_padding(const struct whisper_context & wctx) {
    if (!wctx.params.flash_attn || !wctx.params.use_gpu) {]=]
  [=[static uint32_t whisper_kv_cache_get_padding(const struct whisper_context & wctx, bool flash_attn) {
    if (!flash_attn || !wctx.params.use_gpu) {]=])
voxmill_edit(0002 1 "whisper_kv_cache_get_padding(wctx);" "whisper_kv_cache_get_padding(wctx, wstate.flash_attn);")
voxmill_edit(0002 5 "wctx.params.flash_attn" "wstate.flash_attn")
voxmill_edit(0002 2 "wctx.params.dtw_token_timestamps" "wstate.dtw_token_timestamps")
voxmill_edit(0002 5 "ctx->params.dtw_token_timestamps" "state->dtw_token_timestamps")
voxmill_edit(0002 1
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
voxmill_edit(0002 1
  "    if (params.flash_attn && params.dtw_token_timestamps) {"
  "    if (false) { // voxmill patch 0002: a context may hold both; each state chooses")

# --- 0003 Threads per graph pass ------------------------------------------------------------------
# Upstream takes a call's thread count once (whisper_full_params.n_threads). Here a state may point at a counter the
# caller changes while the call runs (voxmill_whisper_state_threads); each encoder and decoder graph pass (DTW's
# alignment pass and language detection included), the spectrogram and the beams' bookkeeping threads read it when
# they start. The CPU budget lends a lone call every core and takes the extra
# thread back when other work arrives, effective at the next graph pass.
voxmill_edit(0003 1
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
voxmill_edit(0003 1
  [=[    bool flash_attn = false;
    bool dtw_token_timestamps = false;
]=]
  [=[    bool flash_attn = false;
    bool dtw_token_timestamps = false;

    // voxmill patch 0003: the caller's thread counter, read at each graph pass (null: params.n_threads)
    const std::atomic<int> * voxmill_n_threads = nullptr;
]=])
voxmill_edit(0003 1
  "whisper_encode_internal(*ctx, *state, seek, params.n_threads, params.abort_callback"
  "whisper_encode_internal(*ctx, *state, seek, voxmill_threads(state, params.n_threads), params.abort_callback")
voxmill_edit(0003 2
  "whisper_decode_internal(*ctx, *state, state->batch, params.n_threads, false, params.abort_callback"
  "whisper_decode_internal(*ctx, *state, state->batch, voxmill_threads(state, params.n_threads), false, params.abort_callback")
voxmill_edit(0003 2
  "std::min(params.n_threads, n_decoders_cur)"
  "std::min(voxmill_threads(state, params.n_threads), n_decoders_cur)")
# The spectrogram and language detection at the start of a call, and each window's DTW alignment pass.
voxmill_edit(0003 1
  "whisper_pcm_to_mel_with_state(ctx, state, samples, n_samples, params.n_threads)"
  "whisper_pcm_to_mel_with_state(ctx, state, samples, n_samples, voxmill_threads(state, params.n_threads))")
voxmill_edit(0003 1
  "whisper_lang_auto_detect_with_state(ctx, state, 0, params.n_threads, probs.data())"
  "whisper_lang_auto_detect_with_state(ctx, state, 0, voxmill_threads(state, params.n_threads), probs.data())")
voxmill_edit(0003 1
  "seek, n_frames, 7, params.n_threads);"
  "seek, n_frames, 7, voxmill_threads(state, params.n_threads));")

# --- 0005 The encoder's convolutions through BLAS ---------------------------------------------------
# ggml_conv_1d_ph writes its im2col in f16 and multiplies it with the f16 kernel on ggml's own f16 dot products (the
# BLAS backend takes only f32 activations), one dot product per output: perf on the addon's libraries (tiny.en, one
# 30 s window, 1 thread, OpenBLAS) put ggml_vec_dot_f16 at 24 % of the encoder's cycles for two layers that are 5 % of
# its arithmetic. Here im2col stays f32 and the kernel multiplies it as the weights of a matrix product (f16 weights,
# f32 activations: BLAS's case), transposed back to the layout the rest of the encoder reads. Not bit-identical:
# the activations are no longer rounded to f16, so a borderline transcript can change (BENCHMARKS.md); without BLAS
# ggml converts the activations to f16 itself and the time is unchanged.
voxmill_edit(0005 1
  "static struct ggml_cgraph * whisper_build_graph_conv("
  [=[// voxmill patch 0005: a 1-D convolution with "same" padding as f32 im2col times the f16 kernel (BLAS's case).
static struct ggml_tensor * voxmill_conv_1d_ph(struct ggml_context * ctx, struct ggml_tensor * kernel,
                                               struct ggml_tensor * input, int stride) {
    struct ggml_tensor * columns =
        ggml_im2col(ctx, kernel, input, stride, 0, kernel->ne[0] / 2, 0, 1, 0, false, GGML_TYPE_F32); // [N, OL, IC*K]
    struct ggml_tensor * product = ggml_mul_mat(ctx,
        ggml_reshape_2d(ctx, kernel, kernel->ne[0] * kernel->ne[1], kernel->ne[2]),     // [OC, IC*K]
        ggml_reshape_2d(ctx, columns, columns->ne[0], columns->ne[2] * columns->ne[1])); // [N*OL, IC*K]
    product = ggml_cont(ctx, ggml_transpose(ctx, product));                                // [N*OL, OC] -> [OC, N*OL]
    return ggml_reshape_3d(ctx, product, columns->ne[1], kernel->ne[2], columns->ne[2]); // [N, OC, OL]
}

static struct ggml_cgraph * whisper_build_graph_conv(]=])
voxmill_edit(0005 1
  "cur = ggml_conv_1d_ph(ctx0, model.e_conv_1_w, mel, 1, 1);"
  "cur = voxmill_conv_1d_ph(ctx0, model.e_conv_1_w, mel, 1);")
voxmill_edit(0005 1
  "cur = ggml_conv_1d_ph(ctx0, model.e_conv_2_w, cur, 2, 1);"
  "cur = voxmill_conv_1d_ph(ctx0, model.e_conv_2_w, cur, 2);")


# --- 0007 The decoder's attention without flash attention on the CPU ------------------------------
# On the CPU, ggml's flash attention for a handful of queries (the decoder: one token per beam and step) runs
# ggml_compute_forward_flash_attn_ext_f16_one_chunk: query by query, key by key, a scalar expf per key and the values
# summed in f16. The plain path (K*Q, softmax, V*KQ as matrix products) is what upstream runs without flash attention,
# and with llamafile's sgemm (GGML_LLAMAFILE, CMakeLists.txt) its products run on tiled SIMD kernels. Measured whole
# calls (jfk, 1 thread, BENCHMARKS.md): tiny.en beam 5 1,145-1,185 -> 654-672 ms, base beam 5 2,675 -> 1,347-1,353 ms.
# Here the encoder keeps flash attention (its tiled kernel is the faster one for 1,500 queries) and the decoder uses
# it only when the state's first backend is a GPU, where upstream's rule stands. The cross-attention cache is laid
# out for the decoder's choice (written by the cross graph, read by the decoder). Not bit-identical with flash
# attention (f32 softmax and sums instead of the online softmax with f16 sums). Without llamafile's kernels (an
# SSE-only x86-64-v2 build) the plain decoder still measured faster than the one-query flash kernel (a beam-5 jfk call
# less its encoder: about 520 against 850 ms). Memory: every CPU state now reserves the plain decoder's worst-case
# graph, which only states with word times did before (peak RSS of a process +2 to +7 MB, BENCHMARKS.md).
voxmill_edit(0007 1
  [=[    bool flash_attn = false;
    bool dtw_token_timestamps = false;
]=]
  [=[    bool flash_attn = false;
    bool dtw_token_timestamps = false;
    // voxmill patch 0007: flash attention in the decoder (and the cross cache's layout): on a GPU only
    bool voxmill_decoder_flash_attn = false;
]=])
voxmill_edit(0007 5 "if (wstate.flash_attn) {" "if (wstate.voxmill_decoder_flash_attn) {")
# ...but the encoder's own attention keeps the state's choice.
voxmill_edit(0007 1
  [=[if (wstate.voxmill_decoder_flash_attn) {
                ggml_build_forward_expand(gf, ggml_cpy(ctx0, Kcur, ggml_view_1d(ctx0, kv_pad.k]=]
  [=[if (wstate.flash_attn) {
                ggml_build_forward_expand(gf, ggml_cpy(ctx0, Kcur, ggml_view_1d(ctx0, kv_pad.k]=])
voxmill_edit(0007 1
  "whisper_kv_cache_get_padding(wctx, wstate.flash_attn);"
  "whisper_kv_cache_get_padding(wctx, wstate.voxmill_decoder_flash_attn);")
voxmill_edit(0007 1
  [=[    state->backends = whisper_backend_init(ctx->params);
    if (state->backends.empty()) {
        WHISPER_LOG_ERROR("%s: whisper_backend_init() failed\n", __func__);
        whisper_free_state(state);
        return nullptr;
    }
]=]
  [=[    state->backends = whisper_backend_init(ctx->params);
    if (state->backends.empty()) {
        WHISPER_LOG_ERROR("%s: whisper_backend_init() failed\n", __func__);
        whisper_free_state(state);
        return nullptr;
    }

    // voxmill patch 0007: the decoder keeps flash attention on a GPU (whisper_backend_init puts it first) only.
    {
        const enum ggml_backend_dev_type first = ggml_backend_dev_type(ggml_backend_get_device(state->backends[0]));
        state->voxmill_decoder_flash_attn = state->flash_attn &&
            (first == GGML_BACKEND_DEVICE_TYPE_GPU || first == GGML_BACKEND_DEVICE_TYPE_IGPU);
    }
]=])

# --- 0008 The decoder's attention products in whole blocks of 32 keys -----------------------------
# llamafile's sgemm takes an f16 product only when its inner dimension is a multiple of the vector width (16 floats
# with AVX-512); otherwise ggml falls back to one dot product per output. Without flash attention the decoder's
# V * softmax products have the keys as inner dimension: the cross-attention's 1,500 audio positions and the
# self-attention's cache cells (upstream pads the cell count only for a GPU with flash attention), so every one of
# them fell back (counted per shape with a print in a copy of ggml-cpu.c: 100 of 100 cross-attention products per 25
# beam-5 steps on jfk). Here the self-attention cache is read in blocks of 32 cells (the cells past the last used
# one are masked to -inf like any cell of another sequence, so their weight is exactly zero), and the non-flash
# cross-attention cache keeps each head's values in rows of the audio length rounded up to 32, the softmax padded
# with zeros to match (the cache is cleared when the state is made; a padding written by an earlier layout of the same
# state, another audio_ctx, holds finite values that a zero weight cancels). The same sums in another order inside
# the products: not bit-identical. The padding also applies to a GPU state without flash attention (harmless).
voxmill_edit(0008 1
  [=[    if (!flash_attn || !wctx.params.use_gpu) {
        return 1u;
    }]=]
  [=[    if (!flash_attn || !wctx.params.use_gpu) {
        return 32u; // voxmill patch 0008: whole blocks for the CPU's products (cells past the last are masked)
    }]=])
voxmill_edit(0008 1
  [=[            v = ggml_view_2d(ctx0, wstate.kv_cross.v, n_ctx, n_state,
                    (   n_ctx)*ggml_element_size(wstate.kv_cross.v),
                    (il*n_ctx)*ggml_element_size(wstate.kv_cross.v)*n_state);]=]
  [=[            // voxmill patch 0008: rows of GGML_PAD(n_ctx, 32), the padding left zero
            v = ggml_view_2d(ctx0, wstate.kv_cross.v, n_ctx, n_state,
                    (   GGML_PAD(n_ctx, 32))*ggml_element_size(wstate.kv_cross.v),
                    (il*GGML_PAD(n_ctx, 32))*ggml_element_size(wstate.kv_cross.v)*n_state);]=])
voxmill_edit(0008 1
  [=[                            n_audio_ctx, n_state_head, n_head,
                            n_audio_ctx*ggml_element_size(wstate.kv_cross.v),
                            n_audio_ctx*ggml_element_size(wstate.kv_cross.v)*n_state_head,
                            n_audio_ctx*ggml_element_size(wstate.kv_cross.v)*n_state*il);]=]
  [=[                            GGML_PAD(n_audio_ctx, 32), n_state_head, n_head,
                            GGML_PAD(n_audio_ctx, 32)*ggml_element_size(wstate.kv_cross.v),
                            GGML_PAD(n_audio_ctx, 32)*ggml_element_size(wstate.kv_cross.v)*n_state_head,
                            GGML_PAD(n_audio_ctx, 32)*ggml_element_size(wstate.kv_cross.v)*n_state*il);]=])
voxmill_edit(0008 1
  "struct ggml_tensor * KQV = ggml_mul_mat(ctx0, Vcross, KQ_soft_max);"
  [=[// voxmill patch 0008: the softmax padded with zero weights to the values' padded rows
                struct ggml_tensor * KQV = ggml_mul_mat(ctx0, Vcross, GGML_PAD(n_audio_ctx, 32) == n_audio_ctx ? KQ_soft_max :
                        ggml_pad(ctx0, KQ_soft_max, GGML_PAD(n_audio_ctx, 32) - n_audio_ctx, 0, 0, 0));]=])

# --- 0010 A prompt's logits for the tokens read ---------------------------------------------------
# Each window after the first starts with a prompt: the previous windows' text (up to 224 tokens) and the start
# tokens, run through the decoder in one batch. Only the last token's logits are read (whisper_batch_prep_legacy
# marks it alone; 0011 adds the start-of-transcript token), but upstream projects every token onto the vocabulary
# (the view that would limit it is commented out upstream): for a 230-token prompt 230 x 51,864 x 384 multiply-adds
# on tiny.en (9 GFLOP, more than the rest of the prompt pass) and the f16 token embedding converted to f32 for BLAS,
# once per window. Here only the rows from the first token whose logits are read to the last are projected; the
# reserved worst-case graph keeps every row. Rows that are not read are not copied out, as upstream. Not
# bit-identical: a few rows run on ggml's f16 kernels instead of BLAS's f32 product, so a borderline first token of a
# window can change.
voxmill_edit(0010 1
  "static struct ggml_cgraph * whisper_build_graph_decoder("
  [=[// voxmill patch 0010: the first token of a batch whose logits are read (0 when none is)
static int voxmill_first_logits_row(const whisper_batch & batch) {
    for (int i = 0; i < batch.n_tokens; ++i) {
        if (batch.logits[i]) {
            return i;
        }
    }
    return 0;
}

static struct ggml_cgraph * whisper_build_graph_decoder(]=])
voxmill_edit(0010 1
  [=[    //cur = ggml_view_2d(ctx0, cur, cur->ne[0], 1, cur->nb[1], (cur->ne[1] - 1)*cur->nb[1]);
]=]
  [=[    //cur = ggml_view_2d(ctx0, cur, cur->ne[0], 1, cur->nb[1], (cur->ne[1] - 1)*cur->nb[1]);
    // voxmill patch 0010: the rows from the first whose logits are read
    const int voxmill_first_row = worst_case ? 0 : voxmill_first_logits_row(batch);
    if (voxmill_first_row > 0) {
        cur = ggml_view_2d(ctx0, cur, cur->ne[0], cur->ne[1] - voxmill_first_row, cur->nb[1], voxmill_first_row*cur->nb[1]);
    }
]=])
voxmill_edit(0010 1
  "ggml_backend_tensor_get(logits, logits_out.data() + (n_vocab*i), sizeof(float)*(n_vocab*i), sizeof(float)*n_vocab);"
  [=[// voxmill patch 0010: the logits tensor's rows are the batch's last ones
        const size_t row = i - (n_tokens - logits->ne[1]);
        ggml_backend_tensor_get(logits, logits_out.data() + (n_vocab*i), sizeof(float)*(n_vocab*row), sizeof(float)*n_vocab);]=])

# --- 0011 no_speech_prob at the start-of-transcript token ----------------------------------------
# OpenAI's decoder (and faster-whisper) read the no-speech probability from the logits at the start-of-transcript
# token. Upstream reads the prompt batch's first row: that is the start-of-transcript token only when the prompt is
# that one token (an English-only model's first window). With the previous text in the prompt (every later window)
# or a language and task after it (every multilingual model) that row is never copied out, so the value was left from
# the call's previous decoding step, or zero in a fresh state: voxmill reported no_speech_prob 0.0000 for every
# segment of base on jfk.wav and gb0.wav. It decides the temperature fallback (a window whose text scores under
# logprob_thold is retried only when no_speech_prob is under no_speech_thold), whether a window's text is dropped as
# no speech, and each segment's reported no_speech_prob. Here that token's logits are read too (0010 projects the
# rows from it to the last: 1 to 4) and the probability is taken from them.
voxmill_edit(0011 1
  [=[                whisper_batch_prep_legacy(state->batch, prompt.data(), prompt.size(), 0, 0);
]=]
  [=[                whisper_batch_prep_legacy(state->batch, prompt.data(), prompt.size(), 0, 0);
                // voxmill patch 0011: the logits at the start-of-transcript token are read too (no_speech_prob)
                const int voxmill_sot_index = (int) prompt.size() - (int) prompt_init.size();
                state->batch.logits[voxmill_sot_index] = 1;
]=])
voxmill_edit(0011 1
  [=[                    whisper_compute_logprobs(state->logits, n_logits, logprobs);
                    whisper_compute_probs(state->logits, n_logits, logprobs, probs);]=]
  [=[                    // voxmill patch 0011: from the start-of-transcript token's row
                    const std::vector<float> sot_logits(state->logits.begin() + (size_t) voxmill_sot_index*n_logits,
                                                        state->logits.begin() + (size_t) (voxmill_sot_index + 1)*n_logits);
                    whisper_compute_logprobs(sot_logits, n_logits, logprobs);
                    whisper_compute_probs(sot_logits, n_logits, logprobs, probs);]=])

# --- 0013 The decoder's matrices in q8_0 -----------------------------------------------------------
# A greedy step decodes one token: every decoder matrix and the token embedding (the vocabulary projection, 20 M of
# tiny.en's 29 M decoder weights) are read once for one row, so with 0012 the step is bound by reading weights:
# ggml_vec_dot_f16's loads were the hottest instructions. CTranslate2's int8 reads half those bytes. Here, when the
# file's weights are f16, the decoder's matrices (token embedding, self- and cross-attention, MLP) are created as q8_0
# and quantized from the f16 file as they are read (the CPU backend's quantizer, blocks of 32 along a row); the encoder keeps
# f16 (its products go through BLAS, which would dequantize them again for no gain). q8_0 keeps a scale per 32
# weights and 8 bits each: not bit-identical, so a transcript can differ by a word (BENCHMARKS.md measures WER).
# Chosen per loading thread: voxmill_whisper_decoder_q8(true) before whisper_init_* quantizes (voxmill's load option
# decoderPrecision: 'int8'); the default keeps the file's type, as whisper-cli built with this patch set does and as
# voxmill's default ('full') does: with the q8_0 decoder, tiny.en wrote "I'm not sure what's going to do, but" over
# the clicks of the invented-text check (VAD off), where the f16 decoder writes nothing.
voxmill_edit(0013 1
  "static bool whisper_model_load(struct whisper_model_loader * loader, whisper_context & wctx) {"
  [=[// voxmill patch 0013: whether a model loaded on this thread keeps its decoder's f16 matrices in q8_0
#include "ggml-cpu.h"

static thread_local bool voxmill_decoder_q8 = false;

void voxmill_whisper_decoder_q8(bool on) {
    voxmill_decoder_q8 = on;
}

// voxmill patch 0013: stores f16 values in `tensor` quantized to q8_0, a few rows at a time through small buffers,
// with the CPU backend's SIMD conversions (ggml's reference quantizer over whole tensors made loading tiny.en 220 ms
// slower; this way it loads in 69-73 ms, against 82 ms all f16). `chunk(first_row, n_values, scratch)` gives the
// n_values f16 values from first_row on (read into scratch, which holds that many, or found elsewhere), or null when
// it cannot. A host buffer takes each chunk in place; any other (a GPU's, or the CPU's repacking buffer, which takes a
// tensor only whole) gets the whole tensor in one write.
template <typename Chunk>
static bool voxmill_store_f16_as_q8_0(struct ggml_tensor * tensor, Chunk chunk) {
    const int64_t row = tensor->ne[0];
    const int64_t rows = ggml_nrows(tensor);
    const int64_t rows_per_chunk = std::max<int64_t>(1, 65536 / row);
    const size_t row_bytes = ggml_row_size(GGML_TYPE_Q8_0, row);
    const auto from_float = ggml_get_type_traits_cpu(GGML_TYPE_Q8_0)->from_float;
    const bool host = ggml_backend_buffer_is_host(tensor->buffer);
    std::vector<ggml_fp16_t> half(rows_per_chunk*row);
    std::vector<float> full(rows_per_chunk*row);
    std::vector<char> staged(host ? 0 : ggml_nbytes(tensor));
    char * out = host ? (char *) tensor->data : staged.data();
    for (int64_t first = 0; first < rows; first += rows_per_chunk) {
        const int64_t n = std::min(rows_per_chunk, rows - first)*row;
        const ggml_fp16_t * values = chunk(first, n, half.data());
        if (values == nullptr) {
            return false;
        }
        ggml_cpu_fp16_to_fp32(values, full.data(), n);
        from_float(full.data(), out + first*row_bytes, n);
    }
    if (!host) {
        ggml_backend_tensor_set(tensor, staged.data(), 0, staged.size());
    }
    return true;
}

// voxmill patch 0013: reads `tensor`'s values as f16 from the loader and stores them quantized to q8_0.
static bool voxmill_read_f16_as_q8_0(struct whisper_model_loader * loader, struct ggml_tensor * tensor) {
    return voxmill_store_f16_as_q8_0(tensor, [&](int64_t, int64_t n, ggml_fp16_t * scratch) -> const ggml_fp16_t * {
        // A short read fails here with a loader that reports one (whisper.cpp's file loader does not: a file cut
        // short inside a tensor is caught, as upstream, by the next tensor's header failing to read).
        const size_t bytes = n*sizeof(ggml_fp16_t);
        return loader->read(loader->context, scratch, bytes) == bytes ? scratch : nullptr;
    });
}

// voxmill patch 0013: the type the decoder's matrices were loaded as (q8_0 when quantized at load)
int voxmill_whisper_decoder_type(struct whisper_context * ctx) {
    return ctx->model.d_te ? (int) ctx->model.d_te->type : -1;
}

static bool whisper_model_load(struct whisper_model_loader * loader, whisper_context & wctx) {]=])
voxmill_edit(0013 1
  "    const ggml_type vtype = wctx.wtype == GGML_TYPE_F32 ? GGML_TYPE_F32 : GGML_TYPE_F16; // conv type"
  [=[    const ggml_type vtype = wctx.wtype == GGML_TYPE_F32 ? GGML_TYPE_F32 : GGML_TYPE_F16; // conv type
    // voxmill patch 0013: the decoder's matrices (rows of n_text_state: whole q8_0 blocks of 32)
    const ggml_type dtype = wtype == GGML_TYPE_F16 && voxmill_decoder_q8 && model.hparams.n_text_state % 32 == 0
        ? GGML_TYPE_Q8_0 : wtype;]=])
voxmill_edit(0013 10 "ggml_new_tensor_2d(ctx, wtype, n_text_state" "ggml_new_tensor_2d(ctx, dtype, n_text_state")
voxmill_edit(0013 1 "ggml_new_tensor_2d(ctx, wtype, 4*n_text_state" "ggml_new_tensor_2d(ctx, dtype, 4*n_text_state")
voxmill_edit(0013 1
  [=[            loader->read(loader->context, &tmp[0], tmp.size()); // read to buffer
            name.assign(&tmp[0], tmp.size());
]=]
  [=[            loader->read(loader->context, &tmp[0], tmp.size()); // read to buffer
            name.assign(&tmp[0], tmp.size());

            // voxmill patch 0013: an f16 matrix the decoder keeps in q8_0, quantized as it is read
            if (ttype == GGML_TYPE_F16) {
                const auto it = model.tensors.find(name);
                if (it != model.tensors.end() && it->second->type == GGML_TYPE_Q8_0) {
                    ggml_tensor * tensor = it->second;
                    if (n_dims != 2 || tensor->ne[0] != ne[0] || tensor->ne[1] != ne[1]) {
                        WHISPER_LOG_ERROR("%s: tensor '%s' has wrong shape in model file\n", __func__, name.data());
                        return false;
                    }
                    if (!voxmill_read_f16_as_q8_0(loader, tensor)) {
                        WHISPER_LOG_ERROR("%s: tensor '%s' could not be read from the model file\n", __func__, name.data());
                        return false;
                    }
                    total_size += ggml_nbytes(tensor);
                    model.n_loaded++;
                    continue;
                }
            }
]=])
# --- 0016 Beam search's draws without the unused work ---------------------------------------------------------------
# whisper_sample_token_topk filled a vector of (logit, id) pairs for every token and partially sorted it for the k best,
# then drew k tokens from the probabilities instead (upstream's beam search samples, also at temperature 0) and never
# read the sort. Each draw went through a std::discrete_distribution, which copies the n_vocab probabilities into
# doubles, normalizes them and builds their cumulative sums in a second vector, per decoder and step. Here the sort is
# gone and the cumulative table lives in the decoder (allocated once), made with libstdc++'s arithmetic in its order
# (the sum in double, each weight divided by it, the running sum, the last entry 1) and searched as it does
# (std::lower_bound of a canonical double). gcc's build draws the same tokens bit for bit; a libc++ build (zig's), whose
# discrete_distribution draws differently, now draws what gcc's does (libc++'s canonical double is not clamped below 1,
# a difference once in about 2^42 draws). Greedy sampling at a temperature (the fallback) uses the same draw.
voxmill_edit(0016 1
  "    mutable std::mt19937 rng; // used for sampling at t > 0.0"
  [=[    mutable std::mt19937 rng; // used for sampling at t > 0.0

    // voxmill patch 0016: the cumulative probabilities of a draw, kept to avoid an allocation per step
    mutable std::vector<double> voxmill_cdf;]=])
voxmill_edit(0016 1
  "static whisper_token_data whisper_sample_token("
  [=[// voxmill patch 0016: the table std::discrete_distribution<int>(probs) builds, with libstdc++'s arithmetic in its
// order (accumulate in double from 0.0, each weight divided by the sum, partial_sum, the last entry set to 1); empty
// for fewer than two weights, as there.
static void voxmill_fill_cdf(const std::vector<float> & probs, std::vector<double> & cdf) {
    const size_t n = probs.size();
    if (n < 2) {
        cdf.clear();
        return;
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        sum = sum + probs[i];
    }
    // Every entry is written below: a resize to the size it already has (each step's) zeroes nothing.
    cdf.resize(n);
    double running = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double weight = (double) probs[i] / sum;
        running = i == 0 ? weight : running + weight;
        cdf[i] = running;
    }
    cdf[n - 1] = 1.0;
}

// voxmill patch 0016: one draw from that table as libstdc++'s discrete_distribution draws (0 without a table, the
// generator untouched)
static int voxmill_draw(const std::vector<double> & cdf, std::mt19937 & rng) {
    if (cdf.empty()) {
        return 0;
    }
    const double u = std::generate_canonical<double, std::numeric_limits<double>::digits>(rng);
    return (int) (std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
}

static whisper_token_data whisper_sample_token(]=])
voxmill_edit(0016 1
  [=[        std::discrete_distribution<> dist(probs.begin(), probs.end());

        result.id   = dist(decoder.rng);]=]
  [=[        // voxmill patch 0016: the same draw without a distribution object
        voxmill_fill_cdf(probs, decoder.voxmill_cdf);
        result.id   = voxmill_draw(decoder.voxmill_cdf, decoder.rng);]=])
voxmill_edit(0016 1
  [=[    const auto & logits   = decoder.logits;
    const auto & logprobs = decoder.logprobs;

    const int n_logits = vocab.n_vocab;

    auto & logits_id = decoder.logits_id;
]=]
  [=[    const auto & logprobs = decoder.logprobs;

    const int n_logits = vocab.n_vocab;
]=])
voxmill_edit(0016 1
  [=[    logits_id.resize(n_logits);
    for (int i = 0; i < n_logits; ++i) {
        logits_id[i].first = logits[i];
        logits_id[i].second = i;
    }

    {
        using pair_type = std::remove_reference<decltype(logits_id)>::type::value_type;
        std::partial_sort(
                logits_id.begin(),
                logits_id.begin() + k, logits_id.end(),
                [](const pair_type & a, const pair_type & b) {
            return a.first > b.first;
        });
    }
]=]
  [=[    // voxmill patch 0016: upstream sorted the logits for the k best here and never read the result
]=])
voxmill_edit(0016 1
  [=[    std::discrete_distribution<> dist(probs.begin(), probs.end());

    for (int i = 0; i < k; ++i) {
        const auto id = dist(decoder.rng);]=]
  [=[    // voxmill patch 0016: one table for the k draws
    voxmill_fill_cdf(probs, decoder.voxmill_cdf);

    for (int i = 0; i < k; ++i) {
        const auto id = voxmill_draw(decoder.voxmill_cdf, decoder.rng);]=])

# --- 0018 The mel's odd-length DFT without a division per term -----------------------------------------------------
# whisper.cpp's FFT halves the 400-sample frame down to 25 points and runs a naive DFT there: 16 DFTs of 625 terms a
# frame, each term's table index computed as (k * n * step) % 400, an integer division per term, for every 10 ms frame
# of the audio (the 30 s of padding after it is filled without a transform). The index is now advanced by k * step and
# wrapped: the same index, the same table values, the same float operations in the same order, so the same bits.
voxmill_edit(0018 1
  [=[        for (int n = 0; n < N; n++) {
            int idx = (k * n * sin_cos_step) % (SIN_COS_N_COUNT); // t = 2*M_PI*k*n/N
            re += in[n]*global_cache.cos_vals[idx]; // cos(t)
            im -= in[n]*global_cache.sin_vals[idx]; // sin(t)
        }]=]
  [=[        // voxmill patch 0018: (k * n * step) % SIN_COS_N_COUNT, advanced term by term instead of divided out
        const int idx_step = (k * sin_cos_step) % SIN_COS_N_COUNT;
        int idx = 0;
        for (int n = 0; n < N; n++) {
            re += in[n]*global_cache.cos_vals[idx]; // cos(t)
            im -= in[n]*global_cache.sin_vals[idx]; // sin(t)
            idx += idx_step;
            if (idx >= SIN_COS_N_COUNT) {
                idx -= SIN_COS_N_COUNT;
            }
        }]=])

# --- 0024 The mel's DFTs across outputs, and its filter bank over the bands' own bins -------------------------------
# After 0018 the log-mel still cost 0.65-0.92 s of a ten-minute file (4-5 % of a tiny.en greedy call, and of a short
# clip's): each 25-point DFT ran its 25 outputs one after another, every output a chain of 25 dependent multiply-adds
# (latency-bound, about 2,500 cycles a DFT, 16 a frame), and the filter bank multiplied all 201 power bins by all 80
# filters although each filter is zero outside a few bins.
# - The DFT of the odd length the FFT reaches (WHISPER_N_FFT without its factors of 2: 25) reads a table of the same
#   cos_vals / sin_vals entries laid out term by term, 32 outputs wide, and runs the outputs side by side: each output
#   is still the same chain, re += in[n] * cos and im -= in[n] * sin for n in order from 0, on the same values. The
#   bits then depend on the compiler contracting each step the same way in both loops, which is checked, not implied:
#   the addon's whisper.cpp is built without -march (no FMA on x86, both loops multiply then add; arm64 fuses both),
#   and a review compared the two loops on 2 million random inputs, inf, NaN, zeros and subnormals included, built
#   for x86-64, x86-64-v2, x86-64-v3 and arm64 (gcc 12 -O3): the same bits, but for the sign of a NaN produced from a
#   NaN or infinite input on x86 without FMA, which voxmill never passes (it rejects audio that is not finite).
# - The filter bank skips, per filter, the whole groups of four bins before its first and after its last non-zero
#   weight. A skipped group is four products with a zero weight: ±0 added to the double sum, which leaves it as it
#   was. That holds while every power bin is finite; a frame with an infinite or NaN bin (inf * 0 is NaN) runs
#   upstream's loop over every group. The lone bin past the last group is always added, as upstream does.
# Bit-identical.
voxmill_edit(0024 1
  [=[// naive Discrete Fourier Transform
// input is real-valued
// output is complex-valued
static void dft(const float* in, int N, float* out) {
    const int sin_cos_step = SIN_COS_N_COUNT / N;
]=]
  [=[// voxmill patch 0024: the odd length the FFT reaches (25 for 400 samples), and its DFT's table: for each term n, the
// cos_vals / sin_vals entries that output k reads, (k * n * step) % SIN_COS_N_COUNT, for 32 outputs (0 past N).
static constexpr int voxmill_dft_odd(int n) {
    return n % 2 == 0 ? voxmill_dft_odd(n / 2) : n;
}
static constexpr int VOXMILL_DFT_N = voxmill_dft_odd(SIN_COS_N_COUNT);
static constexpr int VOXMILL_DFT_WIDTH = 32;
static_assert(VOXMILL_DFT_N <= VOXMILL_DFT_WIDTH, "voxmill patch 0024: the DFT table is 32 outputs wide");

static const struct voxmill_dft_table {
    alignas(32) float cos_vals[VOXMILL_DFT_N][VOXMILL_DFT_WIDTH] = {};
    alignas(32) float sin_vals[VOXMILL_DFT_N][VOXMILL_DFT_WIDTH] = {};
    voxmill_dft_table() {
        const int step = SIN_COS_N_COUNT / VOXMILL_DFT_N;
        for (int n = 0; n < VOXMILL_DFT_N; n++) {
            for (int k = 0; k < VOXMILL_DFT_N; k++) {
                const int idx = (k * n * step) % SIN_COS_N_COUNT;
                cos_vals[n][k] = global_cache.cos_vals[idx];
                sin_vals[n][k] = global_cache.sin_vals[idx];
            }
        }
    }
} voxmill_dft;

// naive Discrete Fourier Transform
// input is real-valued
// output is complex-valued
static void dft(const float* in, int N, float* out) {
    // voxmill patch 0024: every output's chain as upstream's loop below runs it, the outputs side by side
    if (N == VOXMILL_DFT_N) {
        float re[VOXMILL_DFT_WIDTH] = {};
        float im[VOXMILL_DFT_WIDTH] = {};
        for (int n = 0; n < VOXMILL_DFT_N; n++) {
            const float x = in[n];
            for (int k = 0; k < VOXMILL_DFT_WIDTH; k++) {
                re[k] += x*voxmill_dft.cos_vals[n][k];
                im[k] -= x*voxmill_dft.sin_vals[n][k];
            }
        }
        for (int k = 0; k < VOXMILL_DFT_N; k++) {
            out[k*2 + 0] = re[k];
            out[k*2 + 1] = im[k];
        }
        return;
    }

    const int sin_cos_step = SIN_COS_N_COUNT / N;
]=])
voxmill_edit(0024 1
  [=[    // make sure n_fft == 1 + (WHISPER_N_FFT / 2), bin_0 to bin_nyquist
    assert(n_fft == 1 + (frame_size / 2));
]=]
  [=[    // make sure n_fft == 1 + (WHISPER_N_FFT / 2), bin_0 to bin_nyquist
    assert(n_fft == 1 + (frame_size / 2));

    // voxmill patch 0024: where upstream's groups of four bins end, and each filter's first and last group with a
    // non-zero weight (begin == end: none)
    int voxmill_groups_end = 0;
    while (voxmill_groups_end < n_fft - 3) {
        voxmill_groups_end += 4;
    }
    std::vector<int> voxmill_begin(mel.n_mel, 0);
    std::vector<int> voxmill_end(mel.n_mel, 0);
    for (int j = 0; j < mel.n_mel; j++) {
        bool seen = false;
        for (int k = 0; k < voxmill_groups_end; k += 4) {
            const float * w = &filters.data[j * n_fft + k];
            if (w[0] != 0.0f || w[1] != 0.0f || w[2] != 0.0f || w[3] != 0.0f) {
                voxmill_begin[j] = seen ? voxmill_begin[j] : k;
                voxmill_end[j] = k + 4;
                seen = true;
            }
        }
    }
]=])
voxmill_edit(0024 1
  [=[        // mel spectrogram
        for (int j = 0; j < mel.n_mel; j++) {
            double sum = 0.0;
            // unroll loop (suggested by GH user @lunixbochs)
            int k = 0;
            for (k = 0; k < n_fft - 3; k += 4) {]=]
  [=[        // mel spectrogram
        // voxmill patch 0024: the zero-weight groups only while every bin is finite (inf * 0 is NaN)
        bool voxmill_finite = true;
        for (int j = 0; j < n_fft; j++) {
            voxmill_finite &= std::fabs(fft_out[j]) <= FLT_MAX;
        }
        for (int j = 0; j < mel.n_mel; j++) {
            double sum = 0.0;
            // unroll loop (suggested by GH user @lunixbochs)
            int k = voxmill_finite ? voxmill_begin[j] : 0;
            const int voxmill_k_end = voxmill_finite ? voxmill_end[j] : voxmill_groups_end;
            for (; k < voxmill_k_end; k += 4) {]=])
voxmill_edit(0024 1
  [=[            // handle n_fft remainder
            for (; k < n_fft; k++) {]=]
  [=[            // handle n_fft remainder
            for (k = voxmill_groups_end; k < n_fft; k++) {]=])

# --- 0019 Greedy steps rank the vocabulary on a q8_0 copy, then take exact logits where they decide ----------------
# A greedy step (one token, temperature 0) reads every decoder weight once, and the vocabulary projection is most of
# them: 40 of tiny.en's 56 MB in f16, 53 of base's 95 MB, so the step is bound by those bytes (BENCHMARKS.md). 0013's
# q8_0 decoder halves them but changes the chosen tokens (words lost, a phrase invented over clicks). Here the model
# keeps its f16 projection and also a q8_0 copy of it (CPU only, f16 rows in host memory; 53 % of the f16
# projection's memory: 21 MB for tiny.en, 28 MB for base). A greedy step at temperature 0 projects onto the copy.
# Then the logits that can decide the step are recomputed from the f16 rows exactly as ggml's f16 product computes a
# one-column product (its conversion of the hidden state, its f16 dot product; llamafile's tiles take no single
# column on x86 and arm64):
# - right after the pass, every token from the end of text on (end of text, the special tokens, every timestamp: the
#   timestamp rule sums them all); the largest difference seen there is the step's measured error;
# - in whisper_process_logits, once its rules have suppressed what they suppress (blank, non-speech tokens, regex,
#   timestamp pairing), every text token left whose q8_0 logit lies within VOXMILL_DECIDE_MARGIN (4, or 4 times the
#   measured error if more) of the best one left, however many; and for the softmax's normalizer the highest of those
#   within VOXMILL_RESCORE_MARGIN (8), up to VOXMILL_RESCORE_MAX (512) in all.
# So the argmax and the timestamp rule compare f16 values as long as no q8_0 logit is off by more than half the
# deciding margin. Measured on gb0 (BENCHMARKS.md): at most 0.46 (tiny.en) and 0.89 (base); whisper-cli's 12 greedy
# cases keep every token id and timestamp. The normalizer still sums q8_0 logits for the unlikely tokens: its log moved
# by up to 0.004 and the tokens' probabilities by up to 0.0023, so a window whose mean log probability lies that close
# to logprob_thold could take the other side of the temperature fallback. Beam search and sampling at a temperature
# draw from the whole distribution and keep the f16 projection, as do the prompt pass (no_speech_prob) and language
# detection. Per loading thread: voxmill_whisper_vocab_q8(false) before loading keeps the f16 projection alone
# (voxmill's greedyInt8Vocabulary: false); on by default, as whisper-cli built with this patch set runs.
voxmill_edit(0019 1
  [=[    // decoder.token_embedding
    struct ggml_tensor * d_te;
]=]
  [=[    // decoder.token_embedding
    struct ggml_tensor * d_te;

    // voxmill patch 0019: a q8_0 copy of d_te for greedy steps (null when not made)
    struct ggml_tensor * voxmill_d_te_q8 = nullptr;
]=])
voxmill_edit(0019 1
  [=[    bool voxmill_decoder_flash_attn = false;
]=]
  [=[    bool voxmill_decoder_flash_attn = false;

    // voxmill patch 0019: whether the next decoder pass may project onto the q8_0 copy (a greedy step at t = 0),
    // and the buffers of the exact logits it then recomputes
    bool voxmill_vocab_q8_pass = false;
    bool voxmill_q8_pending = false;  // the last pass's text logits are q8_0 values still to recompute
    float voxmill_q8_error = 0.0f;     // the largest error seen on its recomputed special tokens
    std::vector<float> voxmill_hidden;
    std::vector<ggml_fp16_t> voxmill_hidden_f16;
    std::vector<int> voxmill_rescored;
]=])
voxmill_edit(0019 1
  "static bool whisper_model_load(struct whisper_model_loader * loader, whisper_context & wctx) {"
  [=[// voxmill patch 0019: whether a model loaded on this thread makes the q8_0 copy of its vocabulary projection
static thread_local bool voxmill_vocab_q8 = true;

void voxmill_whisper_vocab_q8(bool on) {
    voxmill_vocab_q8 = on;
}

// voxmill patch 0019: whether the context projects greedy steps onto a q8_0 copy
bool voxmill_whisper_has_vocab_q8(struct whisper_context * ctx) {
    return ctx->model.voxmill_d_te_q8 != nullptr;
}

static bool whisper_model_load(struct whisper_model_loader * loader, whisper_context & wctx) {]=])
voxmill_edit(0019 1
  "        model.d_te = create_tensor(ASR_TENSOR_DEC_TOKEN_EMBD_WEIGHT, ASR_SYSTEM_DECODER, ggml_new_tensor_2d(ctx, dtype, n_text_state, n_vocab));"
  [=[        model.d_te = create_tensor(ASR_TENSOR_DEC_TOKEN_EMBD_WEIGHT, ASR_SYSTEM_DECODER, ggml_new_tensor_2d(ctx, dtype, n_text_state, n_vocab));

        // voxmill patch 0019: the q8_0 copy, where the projection's f16 rows and the copy are the CPU's
        if (voxmill_vocab_q8 && model.d_te->type == GGML_TYPE_F16 && n_text_state % 32 == 0) {
            ggml_tensor * meta = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, n_text_state, n_vocab);
            ggml_backend_buffer_type_t f16_buft = select_weight_buft(hparams, model.d_te, GGML_OP_MUL_MAT, buft_list);
            ggml_backend_buffer_type_t buft = select_weight_buft(hparams, meta, GGML_OP_MUL_MAT, buft_list);
            // The CPU's own buffer type names no device; its extra ones (repacking) name the CPU.
            const auto on_cpu = [](ggml_backend_buffer_type_t t) {
                ggml_backend_dev_t dev = ggml_backend_buft_get_device(t);
                return dev ? ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU : ggml_backend_buft_is_host(t);
            };
            if (buft && f16_buft && ggml_backend_buft_is_host(f16_buft) && on_cpu(f16_buft) && on_cpu(buft)) {
                model.voxmill_d_te_q8 = ggml_dup_tensor(get_ctx(buft), meta);
            }
        }]=])
# The weight contexts hold one tensor more.
voxmill_edit(0019 1
  "    const size_t n_tensors = 10 /* input */ + 15 + 15*n_audio_layer + 24*n_text_layer;"
  "    const size_t n_tensors = 10 /* input */ + 15 + 15*n_audio_layer + 24*n_text_layer + 1 /* voxmill patch 0019 */;")
voxmill_edit(0019 1
  [=[    for (auto & buf : model.buffers) {
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }
]=]
  [=[    // voxmill patch 0019: the q8_0 copy from the loaded f16 rows
    if (model.voxmill_d_te_q8) {
        if (ggml_backend_buffer_is_host(model.d_te->buffer)) {
            // 0013's quantizer, from the loaded f16 rows in place
            const ggml_tensor * f16 = model.d_te;
            voxmill_store_f16_as_q8_0(model.voxmill_d_te_q8, [&](int64_t first, int64_t, ggml_fp16_t *) {
                return (const ggml_fp16_t *) ((const char *) f16->data + first*f16->nb[1]);
            });
        } else {
            model.voxmill_d_te_q8 = nullptr; // the f16 rows are not in host memory to recompute from: not used
        }
    }

    for (auto & buf : model.buffers) {
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }
]=])
voxmill_edit(0019 1
  "    struct ggml_tensor * logits = ggml_mul_mat(ctx0, model.d_te, cur);\n"
  [=[    // voxmill patch 0019: a greedy step projects onto the q8_0 copy; the hidden state is kept for the exact logits
    const bool voxmill_q8 = !worst_case && wstate.voxmill_vocab_q8_pass && model.voxmill_d_te_q8 && cur->ne[1] == 1;
    if (voxmill_q8) {
        ggml_set_output(cur);
    }
    struct ggml_tensor * logits = ggml_mul_mat(ctx0, voxmill_q8 ? model.voxmill_d_te_q8 : model.d_te, cur);
]=])
voxmill_edit(0019 1
  "static bool whisper_decode_internal("
  [=[// voxmill patch 0019: after a step projected onto the q8_0 copy, its logits from the end of text on (end of text, the
// special tokens, every timestamp) recomputed from the f16 rows as ggml's f16 product computes them (its conversion of
// the hidden state, its f16 dot product); the hidden state kept for the text tokens, which whisper_process_logits
// recomputes once its rules have suppressed what they suppress (voxmill_rescore_text).
// voxmill patch 0019: token `id`'s logit from the f16 projection and the f16 hidden state, as ggml's f16 product
// computes it
static float voxmill_f16_logit(const whisper_model & model, const std::vector<ggml_fp16_t> & hidden_f16, int id) {
    float logit;
    ggml_get_type_traits_cpu(GGML_TYPE_F16)->vec_dot((int) hidden_f16.size(), &logit, 0,
        (const char *) model.d_te->data + (size_t) id*model.d_te->nb[1], 0, hidden_f16.data(), 0, 1);
    return logit;
}

static void voxmill_rescore_specials(const whisper_context & wctx, whisper_state & wstate, struct ggml_tensor * hidden,
                                     float * logits) {
    const auto & model = wctx.model;
    const int n_state = (int) hidden->ne[0];
    const int n_vocab = (int) model.d_te->ne[1];
    const int n_text = std::max(0, std::min(wctx.vocab.token_eot, n_vocab));
    const auto * f16 = ggml_get_type_traits_cpu(GGML_TYPE_F16);

    wstate.voxmill_hidden.resize(n_state);
    wstate.voxmill_hidden_f16.resize(n_state);
    ggml_backend_tensor_get(hidden, wstate.voxmill_hidden.data(), 0, n_state*sizeof(float));
    f16->from_float(wstate.voxmill_hidden.data(), wstate.voxmill_hidden_f16.data(), n_state);

    float largest_error = 0.0f;
    for (int id = n_text; id < n_vocab; ++id) {
        const float exact = voxmill_f16_logit(model, wstate.voxmill_hidden_f16, id);
        largest_error = std::max(largest_error, std::fabs(exact - logits[id]));
        logits[id] = exact;
    }
    wstate.voxmill_q8_error = largest_error;
    wstate.voxmill_q8_pending = true;
}

static bool whisper_decode_internal(]=])
voxmill_edit(0019 1
  [=[        ggml_backend_tensor_get(logits, logits_out.data() + (n_vocab*i), sizeof(float)*(n_vocab*row), sizeof(float)*n_vocab);
]=]
  [=[        ggml_backend_tensor_get(logits, logits_out.data() + (n_vocab*i), sizeof(float)*(n_vocab*row), sizeof(float)*n_vocab);
        // voxmill patch 0019: a step projected onto the q8_0 copy (one row): its special tokens made exact
        if (model.voxmill_d_te_q8 && logits->src[0] == model.voxmill_d_te_q8) {
            voxmill_rescore_specials(wctx, wstate, logits->src[1], logits_out.data() + (n_vocab*i));
        }
]=])
voxmill_edit(0019 1
  [=[    logits_out.resize(n_tokens*n_vocab);
    for (int i = 0; i < n_tokens; i++) {
]=]
  [=[    logits_out.resize(n_tokens*n_vocab);
    wstate.voxmill_q8_pending = false; // voxmill patch 0019: set again below by a pass on the q8_0 copy
    for (int i = 0; i < n_tokens; i++) {
]=])
voxmill_edit(0019 1
  [=[        // populate the logprobs array (log_softmax)
        whisper_compute_logprobs(logits, n_logits, logprobs);
]=]
  [=[        // voxmill patch 0019: after a pass on the q8_0 copy, the text tokens that can decide, now that the rules
        // above have suppressed what they suppress
        if (state.voxmill_q8_pending) {
            state.voxmill_q8_pending = false;
            voxmill_rescore_text(ctx, state, logits.data());
        }

        // populate the logprobs array (log_softmax)
        whisper_compute_logprobs(logits, n_logits, logprobs);
]=])
voxmill_edit(0019 1
  "static void whisper_process_logits("
  [=[// voxmill patch 0019: the text tokens recomputed after a pass on the q8_0 copy: every token not suppressed whose q8_0
// logit lies within VOXMILL_DECIDE_MARGIN (or 4 times the step's largest error on the special tokens, if more) of the
// best such logit, so the argmax and the timestamp rule compare f16 values as long as no q8_0 logit is off by half
// that; and, for the softmax's normalizer, the highest of those within VOXMILL_RESCORE_MARGIN, up to
// VOXMILL_RESCORE_MAX tokens in all.
#define VOXMILL_DECIDE_MARGIN 4.0f
#define VOXMILL_RESCORE_MARGIN 8.0f
#define VOXMILL_RESCORE_MAX 512

static void voxmill_rescore_text(const whisper_context & ctx, whisper_state & state, float * logits) {
    const int n_text = std::max(0, std::min(ctx.vocab.token_eot, (int) ctx.model.d_te->ne[1]));

    float best = -INFINITY;
    for (int id = 0; id < n_text; ++id) {
        best = std::max(best, logits[id]);
    }
    if (best == -INFINITY) {
        return;
    }
    const float decide = std::max(VOXMILL_DECIDE_MARGIN, 4.0f*state.voxmill_q8_error);
    const float wide = std::max(VOXMILL_RESCORE_MARGIN, decide);
    auto & ids = state.voxmill_rescored;
    ids.clear();
    for (int id = 0; id < n_text; ++id) {
        if (logits[id] >= best - wide) {
            ids.push_back(id);
        }
    }
    if (ids.size() > VOXMILL_RESCORE_MAX) {
        // Every deciding token, then the highest of the others up to the limit.
        const auto deciding = std::partition(ids.begin(), ids.end(), [&](int id) { return logits[id] >= best - decide; });
        const size_t keep = std::max<size_t>(deciding - ids.begin(), VOXMILL_RESCORE_MAX);
        std::nth_element(deciding, ids.begin() + keep, ids.end(),
                         [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
        ids.resize(keep);
    }
    for (const int id : ids) {
        logits[id] = voxmill_f16_logit(ctx.model, state.voxmill_hidden_f16, id);
    }
}

static void whisper_process_logits(]=])
voxmill_edit(0019 1
  [=[                    assert(batch.n_tokens > 0);

                    if (!whisper_decode_internal(*ctx, *state, state->batch, voxmill_threads(state, params.n_threads), false, params.abort_callback, params.abort_callback_user_data)) {
                        WHISPER_LOG_ERROR("%s: failed to decode\n", __func__);
                        return -9;
                    }
]=]
  [=[                    assert(batch.n_tokens > 0);

                    // voxmill patch 0019: a greedy step at temperature 0 (one decoder, the argmax) may use the q8_0 copy.
                    // Exactly 0: above it the logits are divided by the temperature before the f16 logits recomputed
                    // in whisper_process_logits would land among them unscaled (and greedy runs best_of decoders).
                    state->voxmill_vocab_q8_pass = params.strategy == WHISPER_SAMPLING_GREEDY && t_cur == 0.0f;
                    const bool voxmill_decoded = whisper_decode_internal(*ctx, *state, state->batch, voxmill_threads(state, params.n_threads), false, params.abort_callback, params.abort_callback_user_data);
                    state->voxmill_vocab_q8_pass = false;
                    if (!voxmill_decoded) {
                        WHISPER_LOG_ERROR("%s: failed to decode\n", __func__);
                        return -9;
                    }
]=])

# --- 0020 The log-softmax and the probabilities eight or four values at a time ------------------------------------
# Each decoder and step, whisper_compute_logprobs takes the vocabulary's largest logit, sums expf(logit - max) over it
# and subtracts the log of the sum from every logit; whisper_compute_probs takes expf of every log probability: 2 x
# 51,864 scalar expf calls and three more scalar passes per beam, on the main thread between a greedy step's graph
# passes and on the sampling threads of a beam-5 step. Here both run through native/voxmill_expf.h: the maximum and
# the last pass eight at a time (std::max_element's own loop where the vector maximum could differ from its value: a
# NaN, or a largest logit of zero), the exponentials with glibc's expf algorithm on four doubles at once, with the
# fused multiply-adds of glibc's FMA build (which glibc itself runs on a CPU with AVX2 and FMA), values it treats
# specially (|x| >= 88, the infinities, NaN) through expf itself, and the sum in upstream's order in float, each
# addition overlapping the next values' arithmetic. The same bits as upstream wherever the path runs: all 2^32 inputs
# of the exponential, and the log-softmax on logits with -inf, NaN and signed zeros, against the C library
# (bench/native/expf-check.cc, run by test/soak/expf-exhaustive.test.ts); whisper-cli's 24 -ojf outputs byte for
# byte. Elsewhere (no AVX2 and FMA, arm64) upstream's loops run. The CPU's features are ggml's reading (each of
# voxmill's builds runs only where its own flags hold). Measured (BENCHMARKS.md): beam search's bookkeeping 0.43-0.48
# -> 0.29-0.32 ms per decoder and step, a greedy call's 258-270 -> 136-143 ms on gb0.
voxmill_edit(0020 1
  [=[static void whisper_compute_logprobs(
                const std::vector<float> & logits,
                              const int    n_logits,
                      std::vector<float> & logprobs) {
    const float logit_max = *std::max_element(logits.begin(), logits.end());
    float logsumexp = 0.0f;
    for (int i = 0; i < n_logits; ++i) {
        if (logits[i] > -INFINITY) {
            logsumexp += expf(logits[i] - logit_max);
        }
    }
    logsumexp = logf(logsumexp) + logit_max;
]=]
  [=[// voxmill patch 0020: whether expf over arrays takes native/voxmill_expf.h's four-wide path (bit for bit glibc's
// expf on a CPU with AVX2 and FMA)
#include "voxmill_expf.h"

static bool voxmill_expf_four_wide() {
    static const bool four_wide = voxmill_expf_vectorized(ggml_cpu_has_avx2() && ggml_cpu_has_fma());
    return four_wide;
}

static void whisper_compute_logprobs(
                const std::vector<float> & logits,
                              const int    n_logits,
                      std::vector<float> & logprobs) {
    if (voxmill_expf_four_wide()) {
        // voxmill patch 0020: the same maximum, exponentials, sum (in order) and differences, eight or four at a time
        voxmill_log_softmax(logits.data(), (int) logits.size(), logprobs.data(), n_logits, true);
        return;
    }
    const float logit_max = *std::max_element(logits.begin(), logits.end());
    float logsumexp = 0.0f;
    for (int i = 0; i < n_logits; ++i) {
        if (logits[i] > -INFINITY) {
            logsumexp += expf(logits[i] - logit_max);
        }
    }
    logsumexp = logf(logsumexp) + logit_max;
]=])
voxmill_edit(0020 1
  [=[          std::vector<float> & probs)     {
    for (int i = 0; i < n_logits; ++i) {
        if (logits[i] == -INFINITY) {
            probs[i] = 0.0f;
        } else {
            probs[i] = expf(logprobs[i]);
        }
    }
}
]=]
  [=[          std::vector<float> & probs)     {
    if (voxmill_expf_four_wide()) {
        // voxmill patch 0020: a logit of -inf has a log probability of -inf, whose expf is 0
        voxmill_expf_array(logprobs.data(), probs.data(), n_logits, true);
        return;
    }
    for (int i = 0; i < n_logits; ++i) {
        if (logits[i] == -INFINITY) {
            probs[i] = 0.0f;
        } else {
            probs[i] = expf(logprobs[i]);
        }
    }
}
]=])

# --- 0025 A greedy step's probabilities only where its token is chosen ----------------------------------------------
# A greedy step at temperature 0 (one decoder; whisper_sample_token with best) reads the probabilities for two things only: the
# timestamp tokens' sum and largest, and the first token of the largest probability. Upstream fills all 51,864 (0020's
# expf pass) and scans them all. Here, where 0020's path runs, the step takes expf of the timestamp tokens alone (what
# the sum reads), the largest log probability eight at a time, and expf only of the tokens whose log probability lies
# within 1e-3 of it: any other's probability is below the largest by a factor of e^-0.001 or less, far more than
# expf's rounding (the largest log probability of a softmax over 51,864 tokens is at least -ln 51,864, so its expf is
# a normal float and the gap is thousands of ulps), so it can neither be the largest nor tie with it. Each probability computed is expf of the same log probability, as before, so the
# token, its probability and log probability and the timestamp figures are the same bits. Where the vector maximum
# cannot tell its value (a NaN, or a largest log probability of 0) the step fills every probability as before, and so
# does every other decoding (beam search, sampling at a temperature: they draw from all of them).
voxmill_edit(0025 1
  [=[    // voxmill patch 0016: the cumulative probabilities of a draw, kept to avoid an allocation per step
    mutable std::vector<double> voxmill_cdf;
]=]
  [=[    // voxmill patch 0016: the cumulative probabilities of a draw, kept to avoid an allocation per step
    mutable std::vector<double> voxmill_cdf;

    // voxmill patch 0025: whether probs holds only the timestamp tokens' (a greedy step at temperature 0), and the
    // largest log probability
    bool voxmill_text_probs_deferred = false;
    float voxmill_logprob_max = 0.0f;
]=])
voxmill_edit(0025 1
  [=[    // compute probs
    whisper_compute_probs(logits, n_logits, logprobs, probs);
]=]
  [=[    // compute probs
    // voxmill patch 0025: a greedy step at temperature exactly 0 takes the text tokens' when it chooses. Exactly 0,
    // not the sampler's `< 1e-6f`: above 0 greedy runs best_of decoders, which take a copy of the first one's
    // probabilities after the prompt pass (all of them must be there).
    decoder.voxmill_text_probs_deferred = false;
    if (params.strategy == WHISPER_SAMPLING_GREEDY && temperature == 0.0f && voxmill_expf_four_wide()) {
        decoder.voxmill_logprob_max = voxmill_max_or_nan(logprobs.data(), n_logits, true);
        decoder.voxmill_text_probs_deferred = decoder.voxmill_logprob_max == decoder.voxmill_logprob_max;
    }
    if (decoder.voxmill_text_probs_deferred) {
        const int voxmill_beg = std::min(std::max(vocab.token_beg, 0), n_logits);
        voxmill_expf_array(logprobs.data() + voxmill_beg, probs.data() + voxmill_beg, n_logits - voxmill_beg, true);
    } else {
        whisper_compute_probs(logits, n_logits, logprobs, probs);
    }
]=])
voxmill_edit(0025 1
  [=[    if (best) {
        for (int i = 0; i < n_logits; ++i) {
            if (result.p < probs[i]) {
                result.id   = i;
                result.p    = probs[i];
                result.plog = logprobs[i];
            }
        }
    } else {]=]
  [=[    if (best && decoder.voxmill_text_probs_deferred) {
        // voxmill patch 0025: upstream's loop below over the tokens that can hold the largest probability
        const float floor = decoder.voxmill_logprob_max - 1e-3f;
        for (int i = voxmill_find_at_least(logprobs.data(), 0, n_logits, floor, true); i < n_logits;
             i = voxmill_find_at_least(logprobs.data(), i + 1, n_logits, floor, true)) {
            const float p = expf(logprobs[i]);
            if (result.p < p) {
                result.id   = i;
                result.p    = p;
                result.plog = logprobs[i];
            }
        }
    } else if (best) {
        for (int i = 0; i < n_logits; ++i) {
            if (result.p < probs[i]) {
                result.id   = i;
                result.p    = probs[i];
                result.plog = logprobs[i];
            }
        }
    } else {]=])

# --- 0026 The largest text logit, and the tokens near it, eight at a time -----------------------------------------
# Three scalar passes over the ~50,000 text tokens were most of whisper_process_logits' own time (perf annotate on a
# greedy tiny.en call): the timestamp rule's largest text log probability (std::max_element, every decoder and step)
# and, after a pass on 0019's q8_0 copy, the largest text logit and the scan for the tokens within the rescoring
# margin of it. Each maximum now comes from native/voxmill_expf.h's eight-wide maximum, which answers only where its
# value is std::max_element's (no NaN among them, a largest value that is not zero; else the scalar pass runs), and the
# scan compares eight at a time and takes the same tokens in the same order. Bit-identical; on 0020's path only.
voxmill_edit(0026 1
  [=[    float best = -INFINITY;
    for (int id = 0; id < n_text; ++id) {
        best = std::max(best, logits[id]);
    }
    if (best == -INFINITY) {]=]
  [=[    // voxmill patch 0026: eight at a time where that gives the scalar pass's value
    const bool voxmill_wide = voxmill_expf_four_wide();
    float best = voxmill_max_or_nan(logits, n_text, voxmill_wide);
    if (best != best) {
        best = -INFINITY;
        for (int id = 0; id < n_text; ++id) {
            best = std::max(best, logits[id]);
        }
    }
    if (best == -INFINITY) {]=])
voxmill_edit(0026 1
  [=[    for (int id = 0; id < n_text; ++id) {
        if (logits[id] >= best - wide) {
            ids.push_back(id);
        }
    }]=]
  [=[    // voxmill patch 0026: the same tokens in the same order, found eight at a time
    for (int id = voxmill_find_at_least(logits, 0, n_text, best - wide, voxmill_wide); id < n_text;
         id = voxmill_find_at_least(logits, id + 1, n_text, best - wide, voxmill_wide)) {
        ids.push_back(id);
    }]=])
voxmill_edit(0026 1
  [=[            const float max_text_token_logprob = *std::max_element(logprobs.begin(), logprobs.begin() + vocab.token_beg);
]=]
  [=[            // voxmill patch 0026: std::max_element's value, eight at a time where the vector maximum tells it
            const float max_text_token_logprob = voxmill_max_element(logprobs.data(), vocab.token_beg, voxmill_expf_four_wide());
]=])

# --- 0027 Beam search as openai-whisper and CTranslate2 run it ---------------------------------------------------
# Upstream's beam search differs from the reference in two ways, which bench/stt-wer.mjs's 4,160 words showed as
# voxmill's beam 5 scoring 0.46 point over faster-whisper's (tiny.en; at beam 8, where whisper.cpp's loss of width
# matters less, +0.07):
# - Each beam's candidates were k draws from its token distribution (a seeded generator), even at temperature 0, so a
#   confident step gave k copies of one token and a beam few real alternatives. At temperature 0 each beam now
#   proposes its k + 1 most probable tokens (log probability, then the lower id), as openai-whisper's
#   `topk(beam_size + 1)` does, and the first step's identical beams are deduplicated like the later ones. At a
#   fallback temperature the draws stay (they are the sampling asked for).
# - A candidate ending in end-of-text took a live beam, which stopped: the search narrowed as hypotheses finished.
#   Now such candidates that rank ahead of the last live beam's are set aside as finished hypotheses (upstream's
#   end-of-segment rule applied to each: no timestamp yet and not at the end of the audio drops it, as upstream
#   fails that decoder), beams that complete on their own (the end of the audio, the token cap) join them in the
#   order they finish, at most as many as there are beams, duplicates once; live beams never get an end-of-text
#   candidate unless none other is left; the window ends when that many have finished or no beam is live; the
#   finished hypotheses then take the stopped beams' places, and the live ones' from the last ranked up (a live beam
#   left over, at the token limit, is ranked with them, as openai-whisper tops up with unfinished beams), and
#   upstream's ranking chooses. Greedy decoding is untouched.
# Measured (bench/stt-wer.mjs, the perturbed set, beam 5, 2 threads, an AVX-512 Xeon): tiny.en 5.96 -> 5.72 % WER,
# base 4.54 -> 4.42 % (faster-whisper int8 5.50 and 4.64 %); the ten-minute file's beam-5 calls within the run-to-run
# spread (-3 % and +2 %).
voxmill_edit(0027 1
  [=[            whisper_decoder & decoder,
                        int   k) {]=]
  [=[            whisper_decoder & decoder,
                        int   k,
                        bool  voxmill_top) {]=])
voxmill_edit(0027 1
  [=[    // voxmill patch 0016: one table for the k draws
    voxmill_fill_cdf(probs, decoder.voxmill_cdf);
]=]
  [=[    // voxmill patch 0027: at temperature 0, the k + 1 most probable tokens, best first (ties: the lower id)
    if (voxmill_top) {
        std::vector<std::pair<float, int>> best;
        best.reserve(k + 2);
        for (int id = 0; id < n_logits; ++id) {
            const float lp = logprobs[id];
            if (!(lp > -INFINITY) || ((int) best.size() == k + 1 && !(lp > best.back().first))) {
                continue;
            }
            const auto at = std::upper_bound(best.begin(), best.end(), lp,
                                             [](float v, const std::pair<float, int> & e) { return v > e.first; });
            best.insert(at, { lp, id });
            if ((int) best.size() > k + 1) {
                best.pop_back();
            }
        }
        for (const auto & candidate : best) {
            const int id = candidate.second;
            result.push_back({ id, tid, probs[id], logprobs[id], pt, ptsum, -1, -1, -1, 0.0f, });
            if (id >= vocab.token_beg) {
                result.back().tid = id;
                result.back().pt  = result.back().p;
            }
        }
        return result;
    }

    // voxmill patch 0016: one table for the k draws
    voxmill_fill_cdf(probs, decoder.voxmill_cdf);
]=])
voxmill_edit(0027 1
  [=[whisper_sample_token_topk(*ctx, decoder, params.beam_search.beam_size);]=]
  [=[whisper_sample_token_topk(*ctx, decoder, params.beam_search.beam_size, t_cur == 0.0f);]=])
voxmill_edit(0027 1
  [=[    std::vector<beam_candidate> beam_candidates;
]=]
  [=[    std::vector<beam_candidate> beam_candidates;
    // voxmill patch 0027: the window's finished hypotheses, kept apart from the live beams
    std::vector<beam_candidate> voxmill_finished;
]=])
voxmill_edit(0027 1
  [=[            for (int i = 0, n_max = whisper_n_text_ctx(ctx)/2 - 4; i < n_max; ++i) {
]=]
  [=[            voxmill_finished.clear();

            for (int i = 0, n_max = whisper_n_text_ctx(ctx)/2 - 4; i < n_max; ++i) {
]=])
voxmill_edit(0027 1
  [=[                    uint32_t cur_c = 0;

                    for (int j = 0; j < n_decoders_cur; ++j) {
                        auto & decoder = state->decoders[j];

                        if (decoder.completed || decoder.failed) {
                            continue;
                        }

                        if (cur_c >= beam_candidates.size()) {
                            cur_c = 0;
                        }
]=]
  [=[                    uint32_t cur_c = 0;

                    const auto voxmill_is_eot = [&](const beam_candidate & c) {
                        return !c.sequence.tokens.empty() && c.sequence.tokens.back().id == whisper_token_eot(ctx);
                    };
                    // voxmill patch 0027: true when `c` ends in end-of-text; it is then kept as a finished hypothesis
                    // (upstream's end-of-segment rule applied) unless upstream would fail it, it repeats one, or as
                    // many as there are beams have finished
                    const auto voxmill_finish = [&](const beam_candidate & c) {
                        if (!voxmill_is_eot(c)) {
                            return false;
                        }
                        for (const auto & other : voxmill_finished) {
                            if (whisper_sequence_tokens_equal(other.sequence, c.sequence)) {
                                return true;
                            }
                        }
                        if (voxmill_finished.size() >= (size_t) n_decoders_cur) {
                            return true;
                        }
                        beam_candidate done = c;
                        if (done.sequence.result_len == 0 && !params.no_timestamps) {
                            if (seek + done.seek_delta + delta_min >= seek_end) {
                                done.sequence.result_len = i + 1;
                            } else {
                                return true;
                            }
                        }
                        if (params.single_segment || params.no_timestamps) {
                            done.sequence.result_len = i + 1;
                            done.seek_delta = 100*WHISPER_CHUNK_SIZE;
                        }
                        voxmill_finished.push_back(std::move(done));
                        return true;
                    };

                    for (int j = 0; j < n_decoders_cur; ++j) {
                        auto & decoder = state->decoders[j];

                        if (decoder.completed || decoder.failed) {
                            continue;
                        }

                        while (cur_c < beam_candidates.size() && voxmill_finish(beam_candidates[cur_c])) {
                            ++cur_c;
                        }

                        if (cur_c >= beam_candidates.size()) {
                            // voxmill patch 0027: wrap to the best candidate that goes on; with none, this beam stops
                            cur_c = 0;
                            while (cur_c < beam_candidates.size() && voxmill_is_eot(beam_candidates[cur_c])) {
                                ++cur_c;
                            }
                            if (cur_c >= beam_candidates.size()) {
                                cur_c = 0;
                                decoder.failed = true;
                                continue;
                            }
                        }
]=])
voxmill_edit(0027 1
  [=[&& i > 0) {]=]
  [=[&& (i > 0 || t_cur == 0.0f)) {]=])
voxmill_edit(0027 1
  [=[                // check if all decoders have finished (i.e. completed or failed)
]=]
  [=[                // voxmill patch 0027: in beam search a beam that completed (the end of the audio reached, the token
                // cap, an end-of-text candidate it was left with) joins the finished hypotheses in the order they
                // finished, repeats and those past the count of beams dropped, and its place is freed for the merge
                if (params.strategy == whisper_sampling_strategy::WHISPER_SAMPLING_BEAM_SEARCH) {
                    for (int j = 0; j < n_decoders_cur; ++j) {
                        auto & decoder = state->decoders[j];
                        if (!decoder.completed || decoder.failed) {
                            continue;
                        }
                        bool voxmill_seen = voxmill_finished.size() >= (size_t) n_decoders_cur;
                        for (const auto & other : voxmill_finished) {
                            voxmill_seen = voxmill_seen || whisper_sequence_tokens_equal(other.sequence, decoder.sequence);
                        }
                        if (!voxmill_seen) {
                            voxmill_finished.push_back({ j, decoder.seek_delta, decoder.has_ts, decoder.sequence, decoder.grammar, });
                        }
                        decoder.completed = false;
                        decoder.failed    = true;
                    }
                }

                // check if all decoders have finished (i.e. completed or failed)
]=])
voxmill_edit(0027 1
  [=[                    if (completed_all) {
                        break;
                    }]=]
  [=[                    // voxmill patch 0027: or as many hypotheses have finished as there are beams
                    if (completed_all || voxmill_finished.size() >= (size_t) n_decoders_cur) {
                        break;
                    }]=])
voxmill_edit(0027 1
  [=[            // rank the resulting sequences and select the best one
]=]
  [=[            // voxmill patch 0027: the finished hypotheses take the stopped beams' places first, then the live ones' from
            // the last ranked up; a live beam left over (the token limit reached first) is ranked with them
            {
                size_t next = 0;
                for (const bool take_live : { false, true }) {
                    for (int j = n_decoders_cur - 1; j >= 0 && next < voxmill_finished.size(); --j) {
                        auto & decoder = state->decoders[j];
                        if (decoder.completed || decoder.failed != !take_live) {
                            continue;
                        }
                        const auto & done = voxmill_finished[next++];
                        decoder.sequence   = done.sequence;
                        decoder.seek_delta = done.seek_delta;
                        decoder.has_ts     = done.has_ts;
                        decoder.completed  = true;
                        decoder.failed     = false;
                    }
                }
            }

            // rank the resulting sequences and select the best one
]=])
voxmill_patch_end(whisper whisper.cpp src/whisper.cpp)
# Patch 0020's header, beside the patched whisper.cpp, whose #include finds it there (in this build and in a tree the
# patched copies are laid over: bench/build-whisper-cli.mjs --patched).
voxmill_patch_add_file(whisper native/voxmill_expf.h src/voxmill_expf.h)

voxmill_patch_begin(ggml/src/ggml-cpu/ops.cpp)

# --- 0004 Flash attention's keys and values converted once per head -------------------------------
# ggml's tiled CPU flash attention (every encoder pass of a call without word times) takes 64 queries at a time and,
# for each such tile, converts the head's whole f16 keys (transposed, one scalar at a time) and values to f32 again:
# 24 times per head in a 1500-position window. perf on whisper-cli (tiny.en, jfk, 1 thread): the tiled kernel 25.7 %
# of all cycles, the f16 -> f32 row conversion under it another 8.9 %. Here a chunk of queries converts each head it
# meets once, into one buffer laid out tile by tile exactly as the kernel packed them, and every query tile reads it.
# The same values meet the same arithmetic in the same order, so results are bit-identical (whisper-cli parity holds)
# for finite keys and values without a logit softcap, which whisper never uses. One difference by design: the last
# partial tile's padding is zeros, where upstream reads the previous tile's values; their weight is exactly zero, so
# only an infinite stale value (upstream: 0 x inf = NaN) or a softcap (which gives the padding a weight upstream) can
# tell them apart. The buffer is nek1 x (DK + DV) floats per thread (768 KB for a 1500-position whisper window) and
# lives for one call of the kernel; when it cannot be had (malloc fails) the kernel packs per tile as upstream does.
voxmill_edit(0004 1
  [=[    static constexpr int Q_TILE_SZ  = ggml_fa_tile_config::Q;
    static constexpr int KV_TILE_SZ = ggml_fa_tile_config::KV;

    int ir = ir0;
    while (ir < ir1) {]=]
  [=[    static constexpr int Q_TILE_SZ  = ggml_fa_tile_config::Q;
    static constexpr int KV_TILE_SZ = ggml_fa_tile_config::KV;

    // voxmill patch 0004: one head's keys and values in f32, tile by tile: for KV tile t, its keys transposed
    // (DK x KV_TILE_SZ) then its values (KV_TILE_SZ x DV), zero-padded; converted when a query tile's head changes.
    const int64_t voxmill_kv_tile_floats = (int64_t) KV_TILE_SZ*(DK + DV);
    float * voxmill_kv = (float *) malloc(sizeof(float)*voxmill_kv_tile_floats*((nek1 + KV_TILE_SZ - 1)/KV_TILE_SZ));
    int64_t voxmill_kv_of[4] = {-1, -1, -1, -1}; // ik2, ik3, iv2, iv3 of the head in voxmill_kv

    int ir = ir0;
    while (ir < ir1) {]=])
voxmill_edit(0004 1
  [=[        memset(K_f32, 0, DK * KV_TILE_SZ * sizeof(float));
        memset(V32,   0, KV_TILE_SZ * DV * sizeof(float));
]=]
  [=[        if (!voxmill_kv) {
            memset(K_f32, 0, DK * KV_TILE_SZ * sizeof(float));
            memset(V32,   0, KV_TILE_SZ * DV * sizeof(float));
        }

        if (voxmill_kv && (voxmill_kv_of[0] != ik2 || voxmill_kv_of[1] != ik3 || voxmill_kv_of[2] != iv2 || voxmill_kv_of[3] != iv3)) {
            for (int64_t ic = 0; ic < nek1; ic += KV_TILE_SZ) {
                const int kv_tile = (int)std::min((int64_t)KV_TILE_SZ, nek1 - ic);
                float * K_tile = voxmill_kv + (ic/KV_TILE_SZ)*voxmill_kv_tile_floats;
                float * V_tile = K_tile + DK*KV_TILE_SZ;
                memset(K_tile, 0, voxmill_kv_tile_floats*sizeof(float));
                for (int tk = 0; tk < kv_tile; tk++) {
                    const char * k_data = (const char *)k->data + (ic + tk)*nbk1 + ik2*nbk2 + ik3*nbk3;
                    const char * v_data = (const char *)v->data + (ic + tk)*nbv1 + iv2*nbv2 + iv3*nbv3;
                    if (kv_type == GGML_TYPE_F16) {
                        const ggml_fp16_t * k_f16 = (const ggml_fp16_t *)k_data;
                        for (int64_t dk = 0; dk < DK; dk++) {
                            K_tile[dk * KV_TILE_SZ + tk] = GGML_CPU_FP16_TO_FP32(k_f16[dk]);
                        }
                        ggml_fp16_to_fp32_row((const ggml_fp16_t *)v_data, V_tile + tk * DV, DV);
                    } else {
                        const float * k_f32_src = (const float *)k_data;
                        for (int64_t dk = 0; dk < DK; dk++) {
                            K_tile[dk * KV_TILE_SZ + tk] = k_f32_src[dk];
                        }
                        memcpy(V_tile + tk * DV, v_data, DV * sizeof(float));
                    }
                }
            }
            voxmill_kv_of[0] = ik2;
            voxmill_kv_of[1] = ik3;
            voxmill_kv_of[2] = iv2;
            voxmill_kv_of[3] = iv3;
        }
]=])
# Each KV tile reads the head's converted keys and values when there are some, and packs its own only when not.
voxmill_edit(0004 1
  [=[            for (int tk = 0; tk < kv_tile; tk++) {
                const char * k_data = (const char *)k->data + (ic + tk)*nbk1 + ik2*nbk2 + ik3*nbk3;]=]
  [=[            const float * K_tile = voxmill_kv ? voxmill_kv + (ic/KV_TILE_SZ)*voxmill_kv_tile_floats : K_f32;
            const float * V_tile = voxmill_kv ? K_tile + DK*KV_TILE_SZ : V32;
            for (int tk = 0; !voxmill_kv && tk < kv_tile; tk++) {
                const char * k_data = (const char *)k->data + (ic + tk)*nbk1 + ik2*nbk2 + ik3*nbk3;]=])
voxmill_edit(0004 1
  "simd_gemm(KQ, (const float *)Q_q, K_f32, Q_TILE_SZ, DK, KV_TILE_SZ);"
  "simd_gemm(KQ, (const float *)Q_q, K_tile, Q_TILE_SZ, DK, KV_TILE_SZ);")
voxmill_edit(0004 1
  [=[            for (int tk = 0; tk < kv_tile; tk++) {
                const char * v_data = (const char *)v->data + (ic + tk)*nbv1 + iv2*nbv2 + iv3*nbv3;]=]
  [=[            for (int tk = 0; !voxmill_kv && tk < kv_tile; tk++) {
                const char * v_data = (const char *)v->data + (ic + tk)*nbv1 + iv2*nbv2 + iv3*nbv3;]=])
voxmill_edit(0004 1
  "simd_gemm(VKQ32, KQ, V32, Q_TILE_SZ, KV_TILE_SZ, DV);"
  "simd_gemm(VKQ32, KQ, V_tile, Q_TILE_SZ, KV_TILE_SZ, DV);")
voxmill_edit(0004 1
  [=[        ir += tile_rows;
    }
}

// Reduction function]=]
  [=[        ir += tile_rows;
    }

    free(voxmill_kv);
}

// Reduction function]=])

# --- 0006 The largest of a row over 16 running maxima ---------------------------------------------------------------
# Softmax finds each row's largest score first. ggml's ggml_vec_max_f32 is one scalar chain (each step waits for the
# last: a 4-cycle latency per score), which the compiler cannot split because it may not reorder float comparisons on
# its own. In the tiled flash attention (every encoder pass of a call without word times) that chain ran over every
# 64-score row of every tile, and in the softmax operator (calls with word times, the decoder) over every 1500-score
# row. perf after patch 0005 (tiny.en, one 30 s window, 1 thread): the tiled kernel 37 % of the encoder's cycles.
# Here the row is read 16 floats at a time into two 8-wide vectors of running maxima (GCC/Clang vector extensions:
# AVX/AVX-512 or NEON registers where the target has them, plain scalars elsewhere), folded at the end. The maximum
# of finite numbers does not depend on the order it is taken in (only the sign of a zero maximum can differ, which
# x - max cannot tell), so results are bit-identical; the five callers in ops.cpp (softmax, the tiled flash attention,
# flash attention's backward pass, the cross-entropy loss and its backward pass) all use it.
voxmill_edit(0006 1
  [=[#include <cmath>

// ggml_compute_forward_dup
]=]
  [=[#include <cmath>
#include <cstring>

// voxmill patch 0006: the largest of n floats over 16 running maxima (two 8-wide vectors), not one scalar chain.
static inline void voxmill_vec_max_f32(const int n, float * s, const float * x) {
    typedef float voxmill_v8 __attribute__((vector_size(32)));
    voxmill_v8 a = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    voxmill_v8 b = a;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        voxmill_v8 u;
        voxmill_v8 w;
        memcpy(&u, x + i, sizeof u);
        memcpy(&w, x + i + 8, sizeof w);
        a = u > a ? u : a;
        b = w > b ? w : b;
    }
    a = b > a ? b : a;
    float max = -INFINITY;
    for (int j = 0; j < 8; j++) max = MAX(max, a[j]);
    for (; i < n; i++) max = MAX(max, x[i]);
    *s = max;
}

// ggml_compute_forward_dup
]=])
voxmill_edit(0006 5 "ggml_vec_max_f32(" "voxmill_vec_max_f32(")

# --- 0015 ggml's pad copies whole rows when only the first dimension grows at its end --------------------------------
# ggml_compute_forward_pad_f32 wrote one value at a time, testing each index against every pad and with the outermost
# dimension innermost. 0008 pads the cross-attention's softmax (1,500 -> 1,504 keys) in every decoder layer and step:
# 3.2 % of a tiny.en beam-5 call on gb0 (perf, Zen 3). That case (no circular padding, nothing added before any
# dimension or after the other three, no crop, rows contiguous) copies each row and zeroes its tail; the same values,
# the same rows per thread.
voxmill_edit(0015 1
  [=[    // TODO: optimize

    for (int64_t i2 = 0; i2 < ne2; ++i2) {
        for (int64_t i1 = ith; i1 < ne1; i1 += nth) {
            for (int64_t i0 = 0; i0 < ne0; ++i0) {
                for (int64_t i3 = 0; i3 < ne3; ++i3) {
                    // circular means]=]
  [=[    // voxmill patch 0015: rows copied whole when only dimension 0 grows, at its end
    if constexpr (!circular_t) {
        if (lp0 == 0 && rp0 >= 0 && lp1 == 0 && rp1 == 0 && lp2 == 0 && rp2 == 0 && lp3 == 0 && rp3 == 0 &&
            nb00 == sizeof(float) && ne0 == ne00 + rp0) {
            for (int64_t i3 = 0; i3 < ne3; ++i3) {
                for (int64_t i2 = 0; i2 < ne2; ++i2) {
                    for (int64_t i1 = ith; i1 < ne1; i1 += nth) {
                        float * row = dst_ptr + i3*(ne0*ne1*ne2) + i2*(ne0*ne1) + i1*ne0;
                        memcpy(row, (const char *) src0->data + i3*nb03 + i2*nb02 + i1*nb01, ne00*sizeof(float));
                        memset(row + ne00, 0, (ne0 - ne00)*sizeof(float));
                    }
                }
            }
            return;
        }
    }

    for (int64_t i2 = 0; i2 < ne2; ++i2) {
        for (int64_t i1 = ith; i1 < ne1; i1 += nth) {
            for (int64_t i0 = 0; i0 < ne0; ++i0) {
                for (int64_t i3 = 0; i3 < ne3; ++i3) {
                    // circular means]=])

# --- 0021 The tiled flash attention's products over a tile's own rows, the last few rows in one block ------------
# ggml's tiled CPU flash attention (every encoder pass of a call without word times) multiplies each 64-query tile by
# a 64-key tile with simd_gemm, whose micro-kernel takes GEMM_RM rows at a time (6 with AVX2) and every row past the
# last whole block alone: 64 = 10 x 6 + 4, so 4 rows of every tile ran a one-row kernel whose one accumulator chain
# waits on each FMA's latency (about 4 times the cost of a row in a block), in both of a tile's products. A tile cut
# short by the end of a head or of a thread's chunk was also multiplied, scaled and soft-maxed over all 64 rows,
# zeros included. Here the products run over the tile's own rows, and the rows past the last whole block run as one
# block of their height (the same micro-kernel with RM = 1..GEMM_RM - 1); the scaling and the online softmax skip
# the rows past the tile's end. Each output element is the same chain of FMAs over k in the same order, from the same
# inputs, and the rows dropped were never written out: bit-identical.
voxmill_edit(0021 1
  [=[    *s = max;
}

// ggml_compute_forward_dup
]=]
  [=[    *s = max;
}

// voxmill patch 0021: C[M x N] += A[M x K] * B[K x N] for the tiled flash attention, as simd_gemm computes each
// element, with the rows past the last whole block of GEMM_RM in one block of their own height.
#if defined(GGML_SIMD) && !defined(__ARM_FEATURE_SVE) && !defined(__riscv_v_intrinsic)
template <int RM>
static inline void voxmill_fa_gemm_block(float * GGML_RESTRICT C, const float * GGML_RESTRICT A,
        const float * GGML_RESTRICT B, int K, int N) {
    static constexpr int KN = GGML_F32_EPR;
    int64_t jj = 0;
    for (; jj + GEMM_RN * KN <= N; jj += GEMM_RN * KN) {
        simd_gemm_ukernel<RM, GEMM_RN>(C + jj, A, B + jj, K, N);
    }
    for (; jj + KN <= N; jj += KN) {
        simd_gemm_ukernel<RM, 1>(C + jj, A, B + jj, K, N);
    }
}

template <int RM>
static inline void voxmill_fa_gemm_rows(int rows, float * C, const float * A, const float * B, int K, int N) {
    if constexpr (RM > 0) {
        if (rows == RM) {
            voxmill_fa_gemm_block<RM>(C, A, B, K, N);
        } else {
            voxmill_fa_gemm_rows<RM - 1>(rows, C, A, B, K, N);
        }
    }
}

static void voxmill_fa_gemm(float * C, const float * A, const float * B, int M, int K, int N) {
    if (N % GGML_F32_EPR != 0) {
        // simd_gemm's scalar columns (never taken here: the tiled kernel needs whole vectors of values and keys)
        simd_gemm(C, A, B, M, K, N);
        return;
    }
    int ii = 0;
    for (; ii + GEMM_RM <= M; ii += GEMM_RM) {
        voxmill_fa_gemm_block<GEMM_RM>(C + (int64_t) ii*N, A + (int64_t) ii*K, B, K, N);
    }
    voxmill_fa_gemm_rows<GEMM_RM - 1>(M - ii, C + (int64_t) ii*N, A + (int64_t) ii*K, B, K, N);
}
#else
static void voxmill_fa_gemm(float * C, const float * A, const float * B, int M, int K, int N) {
    simd_gemm(C, A, B, M, K, N);
}
#endif

// ggml_compute_forward_dup
]=])
voxmill_edit(0021 1
  "simd_gemm(KQ, (const float *)Q_q, K_tile, Q_TILE_SZ, DK, KV_TILE_SZ);"
  "voxmill_fa_gemm(KQ, (const float *)Q_q, K_tile, tile_rows, DK, KV_TILE_SZ);")
voxmill_edit(0021 1
  "ggml_vec_scale_f32(Q_TILE_SZ * KV_TILE_SZ, KQ, scale);"
  "ggml_vec_scale_f32(tile_rows * KV_TILE_SZ, KQ, scale);")
voxmill_edit(0021 1
  [=[            for (int tq = 0; tq < Q_TILE_SZ; tq++) {
                float * kq_row = KQ + tq * KV_TILE_SZ;

                float tile_max;]=]
  [=[            for (int tq = 0; tq < tile_rows; tq++) {
                float * kq_row = KQ + tq * KV_TILE_SZ;

                float tile_max;]=])
voxmill_edit(0021 1
  "simd_gemm(VKQ32, KQ, V_tile, Q_TILE_SZ, KV_TILE_SZ, DV);"
  "voxmill_fa_gemm(VKQ32, KQ, V_tile, tile_rows, KV_TILE_SZ, DV);")

# --- 0022 GELU through its f16 table eight values at a time ---------------------------------------------------------
# The encoder's GELU (1,500 x 4 x n_state values a layer) takes each value through ggml's f16 table: round it to f16
# (on x86 ggml's portable bit-twiddling conversion, a dozen operations), look the f16 GELU up, widen it (a second
# table). One value at a time, that was 3.6-3.9 % of a tiny.en or base call's samples (perf, Zen 3). With AVX2 and
# F16C, eight values are rounded at once (vcvtps2ph, round to nearest even: the same f16 as ggml's conversion for
# every float that is not a NaN), looked up with one gather (each lane reads the aligned pair of table entries holding
# its own, so no read leaves the table) and widened exactly (vcvtph2ps), with the same -10 / 10 cut-offs: the kernel is
# in native/voxmill_f16.h, copied beside the patched file. A block of eight holding a NaN, and the last n % 8 values,
# run upstream's scalar loop. Bit-identical: bench/native/f16-check.cc compares the kernel with upstream's arithmetic
# over all 2^32 floats.
voxmill_edit(0022 1
  [=[// voxmill patch 0021: C[M x N] += A[M x K] * B[K x N]]=]
  [=[// voxmill patch 0022: ggml_vec_gelu_f32 (its f16-table form) eight values at a time, the same bits.
#include "voxmill_f16.h"
static void voxmill_vec_gelu_f32(const int n, float * y, const float * x) {
#if defined(GGML_GELU_FP16) && defined(VOXMILL_F16_VECTORIZED)
    voxmill_gelu_f16_table(n, y, x, (const uint16_t *) ggml_table_gelu_f16, ggml_vec_gelu_f32);
#else
    ggml_vec_gelu_f32(n, y, x);
#endif
}

// voxmill patch 0021: C[M x N] += A[M x K] * B[K x N]]=])
voxmill_edit(0022 1 "        ggml_vec_gelu_f32(nc," "        voxmill_vec_gelu_f32(nc,")

# --- 0023 The copy of f32 rows into f16 eight values at a time ------------------------------------------------------
# With flash attention the encoder copies each layer's keys and values (1,500 x n_state each) into f16 (ggml_cpy into
# a 1-D view of the padded cache, ops.cpp's dup, "casting between non-quantized types"), one value at a time through
# ggml's portable f32 -> f16 conversion: 2.2-2.7 % of a tiny.en or base call's samples (perf, Zen 3). With AVX2 and
# F16C the rows are rounded eight at a time (native/voxmill_f16.h: vcvtps2ph, round to nearest even, the same bits as
# ggml's conversion for every float that is not a NaN); a block of eight holding a NaN and the last n % 8 values run
# the scalar loop. Bit-identical: bench/native/f16-check.cc compares all 2^32 floats.
voxmill_edit(0023 1
  [=[                        for (int i01 = ir0; i01 < ir1; i01++) {
                            const src_t * src0_ptr = (src_t *) ((char *) src0->data + i01*nb01 + i02*nb02 + i03*nb03);
                            for (int i00 = 0; i00 < ne00; i00++) {
                                float tmp = type_conversion_table<src_t>::to_f32(src0_ptr[i00]);
                                dst_ptr[id] = type_conversion_table<dst_t>::from_f32(tmp);
                                id++;
                            }
                        }]=]
  [=[                        for (int i01 = ir0; i01 < ir1; i01++) {
                            const src_t * src0_ptr = (src_t *) ((char *) src0->data + i01*nb01 + i02*nb02 + i03*nb03);
#if defined(VOXMILL_F16_VECTORIZED)
                            // voxmill patch 0023: f32 -> f16 rows eight values at a time, the same bits
                            if constexpr (std::is_same_v<src_t, float> && std::is_same_v<dst_t, ggml_fp16_t>) {
                                voxmill_fp32_to_fp16_row((int) ne00, (uint16_t *) (dst_ptr + id), src0_ptr,
                                    [](const int n, uint16_t * y, const float * x) {
                                        for (int i = 0; i < n; i++) {
                                            y[i] = type_conversion_table<ggml_fp16_t>::from_f32(x[i]);
                                        }
                                    });
                                id += ne00;
                                continue;
                            }
#endif
                            for (int i00 = 0; i00 < ne00; i00++) {
                                float tmp = type_conversion_table<src_t>::to_f32(src0_ptr[i00]);
                                dst_ptr[id] = type_conversion_table<dst_t>::from_f32(tmp);
                                id++;
                            }
                        }]=])

voxmill_patch_end(ggml-cpu ggml-cpu/ops.cpp ggml/src/ggml-cpu/ops.cpp)
voxmill_patch_add_file(ggml-cpu native/voxmill_f16.h ggml/src/ggml-cpu/voxmill_f16.h)

voxmill_patch_begin(ggml/src/ggml-cpu/ggml-cpu.c)

# --- 0009 A barrier that yields its core after a short spin ---------------------------------------------------------
# ggml (without OpenMP, as voxmill builds it) ends every operator of a graph with a barrier whose waiting threads spin
# on an atomic with only a pause instruction between reads. On a machine with more runnable threads than cores (two
# processes each computing with every core, a host's own work beside a transcription) a spinning thread keeps its core
# for its whole time slice while the thread it waits for is not running, once per operator: measured here (2 vCPUs,
# two vitest files at once, each transcribing with 2 threads), a test of random-weight transcriptions took 75 s
# instead of 4 s alone, and two processes' calls 15 times longer than one after another. Here a waiting thread spins
# as upstream for VOXMILL_BARRIER_SPINS rounds (tens of microseconds of x86 `pause`; about a microsecond of arm64
# `yield`), then yields its core between reads (sched_yield, which ggml-cpu.c maps to Sleep(0) on Windows), so a
# thread with work runs first. With a core for every thread the yield returns at once (one system call), so a lone
# call runs as before. Results are unchanged: only how a thread waits.
voxmill_edit(0009 1
  [=[    // wait for other threads
    while (atomic_load_explicit(&tp->n_barrier_passed, memory_order_relaxed) == n_passed) {
        ggml_thread_cpu_relax();
    }]=]
  [=[    // wait for other threads (voxmill patch 0009: spin a little, then yield the core between reads)
    for (int voxmill_spins = 0; atomic_load_explicit(&tp->n_barrier_passed, memory_order_relaxed) == n_passed;) {
        if (voxmill_spins < VOXMILL_BARRIER_SPINS) {
            voxmill_spins++;
            ggml_thread_cpu_relax();
        } else {
            sched_yield();
        }
    }]=])
voxmill_edit(0009 1
  [=[void ggml_barrier(struct ggml_threadpool * tp) {]=]
  [=[// voxmill patch 0009: how long a barrier's waiting thread spins before it starts yielding its core.
#define VOXMILL_BARRIER_SPINS 1024

void ggml_barrier(struct ggml_threadpool * tp) {]=])

voxmill_patch_end(ggml-cpu ggml-cpu/ggml-cpu.c ggml/src/ggml-cpu/ggml-cpu.c)

voxmill_patch_begin(ggml/src/ggml-cpu/vec.cpp)

# --- 0012 f16 dot products: single precision sums, leftovers in whole vectors -------------------------------------
# ggml_vec_dot_f16 runs blocks of GGML_F16_STEP values (four vectors), then the rest one value at a time in scalar
# code. With AVX512-FP16 (Sapphire Rapids and later, a native build) the step is 128 halves and the blocks multiply
# and sum in half precision: the decoder's attention scores, dot products of a head's 64 values (1,500 per head,
# layer and token against the cross-attention cache), ran wholly in the scalar loop, and each 1,504-long row of the
# values products ran its last 96 that way. perf on whisper-cli (tiny.en, greedy, gb0, 1 thread) put ggml_vec_dot_f16
# at 54 % of all cycles, a third of that in the scalar loop. Moving those leftovers into the half-precision vectors
# made the step 1.7 times faster but cost words: on bench/stt-sets.mjs's 10-minute file base's greedy transcript lost
# two more stretches of 14-23 s (WER 3.4 -> 13.8 %), the sums of 64 scores rounded to 11 bits. So with AVX512-FP16
# the products here convert the halves to single precision and sum in it (_mm512_cvtph_ps and FMA, as ggml's AVX-512
# build without FP16 does), 16 values per vector, four vectors per block, then whole vectors, then the scalar rest.
# Other builds keep their code, with the leftovers in whole vectors before the scalar loop (AVX-512 without FP16 steps
# 64, leaving the values rows' last 32; AVX2 steps 32, leaving none at these lengths). Not bit-identical where it
# applies (another summation order; with AVX512-FP16, single instead of half precision).
voxmill_edit(0012 1
  [=[        #endif // __riscv_zvfh
    #else
        const int np = (n & ~(GGML_F16_STEP - 1));
]=]
  [=[        #endif // __riscv_zvfh
    #elif defined(__AVX512FP16__)
        // voxmill patch 0012: single-precision sums (the FP16 path sums in half precision)
        __m512 acc0 = _mm512_setzero_ps();
        __m512 acc1 = _mm512_setzero_ps();
        __m512 acc2 = _mm512_setzero_ps();
        __m512 acc3 = _mm512_setzero_ps();
        const auto half16 = [](const ggml_fp16_t * p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) p)); };
        int i = 0;
        for (; i + 64 <= n; i += 64) {
            acc0 = _mm512_fmadd_ps(half16(x + i +  0), half16(y + i +  0), acc0);
            acc1 = _mm512_fmadd_ps(half16(x + i + 16), half16(y + i + 16), acc1);
            acc2 = _mm512_fmadd_ps(half16(x + i + 32), half16(y + i + 32), acc2);
            acc3 = _mm512_fmadd_ps(half16(x + i + 48), half16(y + i + 48), acc3);
        }
        for (; i + 16 <= n; i += 16) {
            acc0 = _mm512_fmadd_ps(half16(x + i), half16(y + i), acc0);
        }
        sumf = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
        for (; i < n; ++i) {
            sumf += (ggml_float)(GGML_CPU_FP16_TO_FP32(x[i])*GGML_CPU_FP16_TO_FP32(y[i]));
        }
    #else
        const int np = (n & ~(GGML_F16_STEP - 1));
]=])
voxmill_edit(0012 1
  [=[        // reduce sum0..sum3 to sum0
        GGML_F16_VEC_REDUCE(sumf, sum);

        // leftovers
        for (int i = np; i < n; ++i) {
            sumf += (ggml_float)(GGML_CPU_FP16_TO_FP32(x[i])*GGML_CPU_FP16_TO_FP32(y[i]));
        }]=]
  [=[        // voxmill patch 0012: the leftovers in whole vectors first
        const int voxmill_np2 = (n & ~(GGML_F16_EPR - 1));
        for (int i = np; i < voxmill_np2; i += GGML_F16_EPR) {
            ax[0] = GGML_F16_VEC_LOAD(x + i, 0);
            ay[0] = GGML_F16_VEC_LOAD(y + i, 0);

            sum[0] = GGML_F16_VEC_FMA(sum[0], ax[0], ay[0]);
        }

        // reduce sum0..sum3 to sum0
        GGML_F16_VEC_REDUCE(sumf, sum);

        // leftovers
        for (int i = voxmill_np2; i < n; ++i) {
            sumf += (ggml_float)(GGML_CPU_FP16_TO_FP32(x[i])*GGML_CPU_FP16_TO_FP32(y[i]));
        }]=])

voxmill_patch_end(ggml-cpu ggml-cpu/vec.cpp ggml/src/ggml-cpu/vec.cpp)

voxmill_patch_begin(ggml/src/ggml-blas/ggml-blas.cpp)

# --- 0014 The BLAS backend only for the encoder's products ------------------------------------------------------------
# ggml's BLAS backend takes every f16 matrix product with 32 rows or more: it converts the whole f16 matrix to f32
# (spawning a std::async task per extra thread) and calls sgemm. The encoder's products (768-3000 rows) gain from
# that, measured in issue 23; the library floors the encoder's context at 768 positions (src/stt/fitted-context.ts),
# and a smaller audio context given to the addon directly only moves the encoder off BLAS, a cost in speed. But the
# decoder's prompt pass (each window's previous text, up to 224 tokens, and the start-of-transcript tokens) crossed
# the line too, so every decoder matrix was converted again on every window for a product of a few hundred rows.
# llamafile's sgemm on ggml's CPU backend reads the f16 weights as they are. Here the BLAS backend takes a product
# only when it has more rows than whisper's whole text context (448 tokens), so no decoder pass reaches it and every
# encoder product does. Measured with whisper-cli (tiny.en, gb0, greedy, 2 threads, the prompt pass run 10 extra
# times per window so it dominates, the line at 512 rows, which leaves out the same passes): prompt passes 7.44-7.52 s
# -> 3.45-3.60 s, encoder unchanged; whole calls 3.4-8.5 % faster (BENCHMARKS.md, "Patch 0014"). Not bit-identical
# (another kernel sums in another order), so whisper-cli carries it too (bench/build-whisper-cli.mjs --patched).
voxmill_edit(0014 1
  "                   (ne0 >= min_batch && ne1 >= min_batch && ne10 >= min_batch) &&"
  "                   (ne0 >= min_batch && ne1 > 448 && ne10 >= min_batch) && // voxmill patch 0014")

voxmill_patch_end(ggml-blas ggml-blas.cpp ggml/src/ggml-blas/ggml-blas.cpp)

voxmill_patch_begin(ggml/src/ggml-cpu/llamafile/sgemm.cpp)

# --- 0017 Beam search's f16 products in one pass of single-row tiles (16-register x64) -----------------------------
# A beam-5 decoder step multiplies every f16 weight matrix by 5 columns (one per beam). With 16 vector registers (AVX2
# or AVX with F16C, no AVX-512), tinyBLAS covers 4, 5 or 6 columns as two tiles per 4 rows (4x2 + 4x2, 4x3 + 4x2, 4x3 +
# 4x3) and takes only row counts that are a multiple of 4, so a multilingual model's vocabulary projection (51,865 rows,
# the largest product of a step) went to ggml_vec_dot_f16, one row and one column at a time (19 % of a base beam-5 call
# on gb0, perf). A decoder step reads all its weights (56 MB for tiny.en, 97 MB for base, more than the L3) from memory,
# and there one row against all the columns at a time is faster. Measured on a Zen 3 EPYC (2 threads, f16 matrices
# streamed from memory, bench/native/sgemm-tiles.cc): 5 columns, vocabulary 51,864 x 384 3.81 -> 2.75 ms, 51,864 x 512
# 5.16 -> 3.83 ms; 36 streamed 512 x 512 matrices 2.35 -> 1.58 ms; 4 columns 4.17 -> 3.09 ms. With an inner dimension
# under 256 (the attention scores' 64 per head) the 4-row tiles stay faster (64: 2.35-2.71 against 4.96-5.15 ms), so
# those products keep them. whisper-cli, gb0, beam 5, 2 threads, 3 interleaved rounds: batched decoder steps tiny.en
# 1.71-1.87 -> 1.35-1.38 ms, base 3.18-3.69 -> 2.58-2.81 ms. Each output is the sum over the inner dimension, vector by
# vector with the same fused multiply-adds, reduced by the same hsum: bit-identical where upstream's tiles took the
# product (tiny.en: every beam-5 output of the 24-case comparison identical, token probabilities included). A vocabulary
# of a row count not a multiple of 4 is now summed in tinyBLAS's order instead of ggml_vec_dot_f16's (base: the same
# tokens, text and timestamps on those cases, probabilities within 4e-6), so whisper-cli carries this patch too. Rows
# are claimed in chunks from the thread pool's counter, as upstream's jobs. Measured on AVX2 only (an AVX-only CPU runs
# the same tiles with separate multiplies and adds, as upstream there).
voxmill_edit(0017 1
  "#include \"sgemm.h\""
  "#include \"llamafile/sgemm.h\" // voxmill: this copy is compiled from the build tree\n#include <algorithm>")
voxmill_edit(0017 1
  [=[#else  // VECTOR_REGISTERS == 16
        if (m % 16 == 0 && (m/16 >= params->nth)) {
            const int64_t SIZE_N = BLOCK_SIZE<3>(n);
            mnpack<4, 3, 4>(m, n, SIZE_N, 24);
            return true;
        }]=]
  [=[#else  // VECTOR_REGISTERS == 16
        // voxmill patch 0017: 4-6 f16 columns in one pass of single-row tiles
        if constexpr (std::is_same_v<TA, ggml_fp16_t>) {
            if (n >= 4 && n <= 6 && k >= 256) {
                if (n == 4) { voxmill_rows<1, 4>(m); }
                if (n == 5) { voxmill_rows<1, 5>(m); }
                if (n == 6) { voxmill_rows<1, 6>(m); }
                return true;
            }
        }
        if (m % 16 == 0 && (m/16 >= params->nth)) {
            const int64_t SIZE_N = BLOCK_SIZE<3>(n);
            mnpack<4, 3, 4>(m, n, SIZE_N, 24);
            return true;
        }]=])
voxmill_edit(0017 1
  [=[  private:
    template <int RM, int RN, int BM>
    inline void mnpack(int64_t m, int64_t n, int64_t SIZE_N, int64_t BN) {
        if (SIZE_N == RN) {
            return gemm<RM, RN, BM>(m, n, BN);
        }]=]
  [=[  private:
    // voxmill patch 0017: every row against all RN columns in tiles of RM rows (1 here, 4 with AVX-512: 0029), rows
    // claimed in chunks (about 16 per thread, at least 4 rows each, so a 64-row product still feeds 16 threads, and a
    // whole number of tiles) from the thread pool's counter, as gemm() claims its jobs; a chunk's last rows in 1-row
    // tiles.
    template <int RM, int RN>
    NOINLINE void voxmill_rows(int64_t m) {
        const int64_t chunk = (std::max<int64_t>(4, m / (16 * params->nth)) + RM - 1) / RM * RM;
        const int64_t nchunks = (m + chunk - 1) / chunk;
        if (params->ith == 0) {
            ggml_threadpool_chunk_set(params->threadpool, params->nth);
        }
        ggml_barrier(params->threadpool);
        for (int64_t job = params->ith; job < nchunks; job = ggml_threadpool_chunk_add(params->threadpool, 1)) {
            const int64_t end = std::min(m, (job + 1) * chunk);
            int64_t ii = job * chunk;
            for (; ii + RM <= end; ii += RM) {
                gemm_bloc<RM, RN>(ii, 0);
            }
            for (; ii < end; ++ii) {
                gemm_bloc<1, RN>(ii, 0);
            }
        }
        ggml_barrier(params->threadpool);
    }

    template <int RM, int RN, int BM>
    inline void mnpack(int64_t m, int64_t n, int64_t SIZE_N, int64_t BN) {
        if (SIZE_N == RN) {
            return gemm<RM, RN, BM>(m, n, BN);
        }]=])

# --- 0028 Few-column products prefetch the weight rows ahead --------------------------------------------------------
# A decoder step (beam search: one column per beam) reads each weight row once, a tile of a few rows at a time, and the
# rows are short (768 bytes for tiny.en, 1,024 for base): the CPU's prefetchers see each tile's rows as short separate
# streams and the tile waits on memory. perf on a 2-vCPU AVX-512 Xeon, tiny.en beam 5: tinyBLAS's 4x5 tiles were 56 %
# of the call, their samples on the loads of the weight rows. Products of at most 6 columns (each weight row read once
# per product where the columns fit one tile) now prefetch into L2, once per 64-byte line, the rows 8 rows ahead of the
# tile, on x86-64 builds (AVX2 and AVX-512; arm64 was not measured and keeps upstream's loop). Measured first on that
# Xeon in a microbenchmark (bench/native/few-column-prefetch.cc; 2 threads, 4x5 tiles over three streamed copies of the
# 51,864 x 384 vocabulary): 15.3 -> 6.4 ms (7.8 -> 18.8 GB/s, into L1; a plain read of the same bytes reaches 26 GB/s);
# 4, 16 and 32 rows ahead within 10 % of 8. Into L2 (prefetcht1) rather than L1: level or faster in every case measured
# but one (BENCHMARKS.md). whisper-cli, 2 minutes of the ten-minute set, beam 5, 2 threads, with the first version's
# prefetch into L1: batched decoder steps tiny.en 4.62-4.70 -> 2.80-2.89 s. The arithmetic is unchanged:
# bit-identical.
voxmill_edit(0028 1
  [=[    bool matmul(int64_t m, int64_t n) {
        if (k % KN != 0)
            return false;]=]
  [=[    bool matmul(int64_t m, int64_t n) {
        if (k % KN != 0)
            return false;
        // voxmill patch 0028: each weight row is read once when the columns fit one tile (x86-64 only: measured
        // there, not on arm64)
#if defined(__x86_64__) || defined(_M_X64)
        voxmill_rows_ahead = n <= 6 ? 8 : 0;
#endif]=])
voxmill_edit(0028 1
  [=[    inline void gemm_bloc(int64_t ii, int64_t jj) {
        D Cv[RN][RM] = {};
        for (int64_t l = 0; l < k; l += KN) {]=]
  [=[    inline void gemm_bloc(int64_t ii, int64_t jj) {
        D Cv[RN][RM] = {};
        for (int64_t l = 0; l < k; l += KN) {
            // voxmill patch 0028: once per 64-byte line of each row, the same line voxmill_rows_ahead rows on
            if (voxmill_rows_ahead != 0 && l % (64 / (int64_t) sizeof(TA)) < KN) {
                for (int64_t i = 0; i < RM; ++i) {
                    __builtin_prefetch(A + lda * (ii + i + voxmill_rows_ahead) + l, 0, 2);
                }
            }]=])
voxmill_edit(0028 1
  [=[    const int64_t ldb;
    const int64_t ldc;
};

#if defined(__riscv_v_intrinsic)]=]
  [=[    const int64_t ldb;
    const int64_t ldc;
    int64_t voxmill_rows_ahead = 0; // voxmill patch 0028
};

#if defined(__riscv_v_intrinsic)]=])

# --- 0029 AVX-512: products of 2-6 f16 columns in 4-row tiles over row chunks, any row count -----------------------
# With 32 vector registers (AVX-512) upstream took f16 products of a few columns in 4-row tiles, one job of 4, 8 or 16
# rows from the thread pool's shared counter at a time, and only row counts that are a multiple of 4. perf, tiny.en beam
# 5 on a 2-vCPU AVX-512 Xeon after 0028: ggml_threadpool_chunk_add, the counter, 8 % of the call (the vocabulary
# projection alone is 6,483 jobs of 8 rows a step). A multilingual vocabulary (51,865 rows) fell to ggml_vec_dot_f16,
# one row and one column at a time, five passes over the largest matrix of a step. Now the rows are claimed in chunks by
# 0017's voxmill_rows (about a sixteenth of a thread's share, a whole number of tiles), covered by the same 4-row tiles
# and the last rows of a chunk by 1-row tiles. Each output is the same chain of fused multiply-adds and the same
# reduction as in upstream's tiles, so bit-identical wherever they took the product; a multilingual vocabulary is summed
# in tinyBLAS's order instead of ggml_vec_dot_f16's, as 0017 did on AVX2 (base: the same tokens and text on 12 cases of
# the shared clips, token probabilities within 4e-6). whisper-cli, 2 minutes of the ten-minute set, beam 5, 2 threads,
# batched decoder steps (0028 into L1 on both sides): tiny.en 2.92-3.02 -> 1.96-2.01 s, base 7.82 -> 5.18 s. AVX-512
# builds only: arm64's 32-register builds take f16 weights against f32 columns here and were not measured.
voxmill_edit(0029 1
  [=[#if VECTOR_REGISTERS == 32
        if (m % 16 == 0 && (m/16 >= params->nth)) {
            const int64_t SIZE_N = BLOCK_SIZE<6>(n);
            mnpack<4, 6, 4>(m, n, SIZE_N, 12);
            return true;
        }]=]
  [=[#if VECTOR_REGISTERS == 32
        // voxmill patch 0029: 2-6 f16 columns in 4-row tiles over row chunks, any row count (AVX-512 only: arm64's
        // 32-register builds multiply f16 by f32 columns here, and were not measured)
#if defined(__AVX512F__)
        if constexpr (std::is_same_v<TA, ggml_fp16_t>) {
            if (n >= 2 && n <= 6) {
                if (n == 2) { voxmill_rows<4, 2>(m); }
                if (n == 3) { voxmill_rows<4, 3>(m); }
                if (n == 4) { voxmill_rows<4, 4>(m); }
                if (n == 5) { voxmill_rows<4, 5>(m); }
                if (n == 6) { voxmill_rows<4, 6>(m); }
                return true;
            }
        }
#endif
        if (m % 16 == 0 && (m/16 >= params->nth)) {
            const int64_t SIZE_N = BLOCK_SIZE<6>(n);
            mnpack<4, 6, 4>(m, n, SIZE_N, 12);
            return true;
        }]=])

voxmill_patch_end(ggml-cpu ggml-cpu/llamafile/sgemm.cpp ggml/src/ggml-cpu/llamafile/sgemm.cpp)
