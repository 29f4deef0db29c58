#include "audio_encode.h"

#include "ffmpeg_compat.h"
#include "ffmpeg_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
}

namespace voxmill {
namespace {

// FFmpeg 7 (libavformat 61) made the AVIO write callback's buffer const.
#if LIBAVFORMAT_VERSION_MAJOR >= 61
using AvioWriteBuffer = const uint8_t*;
#else
using AvioWriteBuffer = uint8_t*;
#endif

constexpr int kIoBufferSize = 32 * 1024;
// Input is resampled in blocks of this many samples, which bounds the scratch buffers whatever the
// size of one encode() call.
constexpr int kInputBlock = 16384;
// Codecs without a fixed frame size (PCM) get frames of at most this many samples.
constexpr int kVariableFrameMax = 4096;
constexpr int kMinInputRate = 8000;
constexpr int kMaxInputRate = 192000;
// A plausibility bound only: each codec refuses what it cannot do itself (libopus: above 256 kb/s for
// mono), which reports AUDIO_ENCODE_FAILED; the TypeScript layer checks the exact ranges first.
constexpr int64_t kMinBitRate = 6000;
constexpr int64_t kMaxBitRate = 512000;
constexpr int kOutputRates[] = {8000, 16000, 22050, 24000, 44100, 48000};
// What libopus can encode at; it resamples nothing itself.
constexpr int kOpusRates[] = {8000, 12000, 16000, 24000, 48000};
// The muxer starts a new Ogg page after this much audio (microseconds). Every encode() call also
// flushes the page in progress, so this only bounds page size inside one call: 100 ms keeps the page
// overhead (27 bytes + lacing per page) near 5 % at 32 kb/s instead of over 30 % with one page per
// 20 ms packet, and still lets a client start playback within a tenth of a second of a page.
constexpr const char* kOggPageDuration = "100000";

template <size_t N>
bool OneOf(int value, const int (&list)[N]) {
  return std::find(std::begin(list), std::end(list), value) != std::end(list);
}

template <size_t N>
std::string ListOf(const int (&list)[N]) {
  std::string text;
  for (size_t i = 0; i < N; i++) text += (i == 0 ? "" : ", ") + std::to_string(list[i]);
  return text;
}

struct FormatSpec {
  const char* encoder;  // name for avcodec_find_encoder_by_name
  const char* muxer;
  AVSampleFormat sampleFormat;
  bool lossy;  // takes a bit rate (mp3, opus, aac); PCM and FLAC do not
};

// The sample formats are the codecs' native float input where they have one (no extra conversion
// step; lame and libopus quantise themselves) and s16 for PCM.
bool FindFormat(const std::string& name, FormatSpec& spec) {
  if (name == "mp3") {
    spec = {"libmp3lame", "mp3", AV_SAMPLE_FMT_FLTP, true};
  } else if (name == "opus") {
    spec = {"libopus", "ogg", AV_SAMPLE_FMT_FLT, true};
  } else if (name == "wav") {
    spec = {"pcm_s16le", "wav", AV_SAMPLE_FMT_S16, false};
  } else if (name == "pcm16") {
    spec = {"pcm_s16le", "s16le", AV_SAMPLE_FMT_S16, false};
  } else if (name == "aac") {
    // FFmpeg's own AAC-LC encoder (in every build, unlike libfdk), in ADTS frames: a plain .aac stream that
    // players start on any frame, as OpenAI's audio/aac is.
    spec = {"aac", "adts", AV_SAMPLE_FMT_FLTP, true};
  } else if (name == "flac") {
    // Streamed, the STREAMINFO header cannot be finalised (no seek): its length and MD5 stay 0, which FLAC
    // allows ("unknown"); whole files get them.
    spec = {"flac", "flac", AV_SAMPLE_FMT_S16, false};
  } else {
    return false;
  }
  return true;
}

// --- where the muxer's bytes go ------------------------------------------------------------------

// Streaming: bytes are appended and handed out after every call; there is no seek callback, so FFmpeg
// treats the output as a pipe (wav keeps its 0xFFFFFFFF sizes, mp3 gets no Xing frame). Whole: a
// growable in-memory file with seek, so muxers go back and finalise their headers (wav sizes, the
// mp3 Xing/LAME frame with encoder delay and padding).
struct ByteSink {
  std::vector<uint8_t> bytes;
  int64_t position = 0;
  bool outOfMemory = false;

  static int Write(void* opaque, AvioWriteBuffer buffer, int size) {
    auto* self = static_cast<ByteSink*>(opaque);
    if (size <= 0) return 0;
    // FFmpeg is C: an exception must not unwind through it.
    try {
      const size_t end = static_cast<size_t>(self->position) + static_cast<size_t>(size);
      if (end > self->bytes.size()) self->bytes.resize(end);
      std::memcpy(self->bytes.data() + self->position, buffer, static_cast<size_t>(size));
      self->position = static_cast<int64_t>(end);
      return size;
    } catch (...) {
      self->outOfMemory = true;
      return AVERROR(ENOMEM);
    }
  }

  static int64_t Seek(void* opaque, int64_t offset, int whence) {
    auto* self = static_cast<ByteSink*>(opaque);
    const int64_t size = static_cast<int64_t>(self->bytes.size());
    if (whence & AVSEEK_SIZE) return size;
    int64_t target;
    switch (whence & ~AVSEEK_FORCE) {
      case SEEK_SET:
        target = offset;
        break;
      case SEEK_CUR:
        target = self->position + offset;
        break;
      case SEEK_END:
        target = size + offset;
        break;
      default:
        return AVERROR(EINVAL);
    }
    if (target < 0 || target > size) return AVERROR(EINVAL);
    self->position = target;
    return target;
  }

  // Takes what was written so far (streaming: since the last call; whole: the finished file).
  void TakeInto(std::vector<uint8_t>& out) {
    if (out.empty()) {
      out.swap(bytes);
    } else {
      out.insert(out.end(), bytes.begin(), bytes.end());
    }
    bytes.clear();
    position = 0;
  }
};

// --- RAII for FFmpeg objects (the shared deleters are in ffmpeg_compat.h) --------------------------

struct OutputFormatDeleter {
  // The AVIOContext is ours (custom I/O), so only the context itself is freed.
  void operator()(AVFormatContext* ctx) const { avformat_free_context(ctx); }
};
struct FifoDeleter {
  void operator()(AVAudioFifo* f) const { av_audio_fifo_free(f); }
};

}  // namespace

// Members are destroyed in reverse order: the muxer before the AVIOContext it writes to, and that
// before the sink behind it.
struct AudioEncoder::State {
  ByteSink sink;
  std::unique_ptr<AVIOContext, IoContextDeleter> io;
  std::unique_ptr<AVFormatContext, OutputFormatDeleter> muxer;
  std::unique_ptr<AVCodecContext, CodecDeleter> codec;
  std::unique_ptr<SwrContext, SwrDeleter> swr;
  std::unique_ptr<AVAudioFifo, FifoDeleter> fifo;
  std::unique_ptr<AVFrame, FrameDeleter> frame;
  std::unique_ptr<AVPacket, PacketDeleter> packet;
  AVStream* stream = nullptr;
  int frameSize = 0;  // samples per codec frame; 0 = any
  bool smallLastFrame = false;
  bool canFlushMuxer = false;
  int64_t nextPts = 0;  // in samples at the output rate
  std::vector<float> clean;
  std::vector<uint8_t> converted;
};

namespace {

// Step-by-step failures carry the step and FFmpeg's text, and ENOMEM (from FFmpeg or from our sink)
// becomes OUT_OF_MEMORY.
class Steps {
 public:
  Steps(const EncodeOptions& options, const ByteSink* sink, EncodeFailure& failure)
      : options_(options), sink_(sink), failure_(failure) {}

  bool Fail(int ret, const std::string& step) {
    const bool memory = ret == AVERROR(ENOMEM) || (sink_ != nullptr && sink_->outOfMemory);
    failure_.code = memory ? "OUT_OF_MEMORY" : "AUDIO_ENCODE_FAILED";
    failure_.message = "cannot encode " + options_.format + ": " + step + " failed: " + AvError(ret);
    if (!LastFfmpegError().empty()) failure_.message += " (FFmpeg: " + LastFfmpegError() + ")";
    return false;
  }

  bool Fail(const std::string& code, const std::string& message) {
    failure_.code = code;
    failure_.message = message;
    return false;
  }

 private:
  const EncodeOptions& options_;
  const ByteSink* sink_;
  EncodeFailure& failure_;
};

#if VOXMILL_CH_LAYOUT
void SetMono(AVChannelLayout& layout) {
  av_channel_layout_uninit(&layout);
  layout = AV_CHANNEL_LAYOUT_MONO;
}
#endif

bool OpenCodec(AudioEncoder::State& s, const EncodeOptions& o, const FormatSpec& spec, Steps& steps) {
  const AVCodec* codec = avcodec_find_encoder_by_name(spec.encoder);
  if (codec == nullptr) {
    return steps.Fail("AUDIO_ENCODE_FAILED", std::string("cannot encode ") + o.format + ": this FFmpeg build has no " +
                                                 spec.encoder + " encoder");
  }
  s.codec.reset(avcodec_alloc_context3(codec));
  if (!s.codec) throw std::bad_alloc();
  AVCodecContext* c = s.codec.get();
  c->sample_rate = o.outputSampleRate;
  c->time_base = AVRational{1, o.outputSampleRate};
  c->sample_fmt = spec.sampleFormat;
  if (spec.lossy) c->bit_rate = o.bitRate;
  c->thread_count = 1;
#if VOXMILL_CH_LAYOUT
  SetMono(c->ch_layout);
#else
  c->channel_layout = AV_CH_LAYOUT_MONO;
  c->channels = 1;
#endif
  if (s.muxer->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  AVDictionary* codecOptions = nullptr;
  // "audio" rather than "voip": the input is clean synthesized speech, not a noisy microphone, and
  // voip's intelligibility tuning (which favours speech bands over fidelity) buys nothing for it.
  if (o.format == "opus") av_dict_set(&codecOptions, "application", "audio", 0);
  const int ret = avcodec_open2(c, codec, &codecOptions);
  av_dict_free(&codecOptions);
  if (ret < 0) return steps.Fail(ret, std::string("opening the ") + spec.encoder + " encoder");
  s.frameSize = (codec->capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE) ? 0 : c->frame_size;
  s.smallLastFrame = (codec->capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME) != 0;
  return true;
}

bool OpenResampler(AudioEncoder::State& s, const EncodeOptions& o, Steps& steps) {
  SwrContext* swr = nullptr;
  const AVSampleFormat outFormat = s.codec->sample_fmt;
#if VOXMILL_CH_LAYOUT
  AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
  int ret = swr_alloc_set_opts2(&swr, &mono, outFormat, o.outputSampleRate, &mono, AV_SAMPLE_FMT_FLT, o.inputSampleRate,
                                0, nullptr);
  if (ret < 0) return steps.Fail(ret, "allocating the resampler");
#else
  swr = swr_alloc_set_opts(nullptr, AV_CH_LAYOUT_MONO, outFormat, o.outputSampleRate, AV_CH_LAYOUT_MONO,
                           AV_SAMPLE_FMT_FLT, o.inputSampleRate, 0, nullptr);
  if (swr == nullptr) throw std::bad_alloc();
  int ret = 0;
#endif
  s.swr.reset(swr);
  // FFmpeg's own polyphase resampler, not soxr: it is in every build (soxr is optional) and its
  // output does not depend on how the input is split into calls. A 64-tap Kaiser-windowed sinc
  // (twice the default length: a steeper transition, so less imaging when 16/22.05 kHz voices go up
  // to 44.1/48 kHz) with 1024 interpolated phases is far below audibility for speech at a cost that
  // does not show next to the codecs. No dither: 16-bit quantisation of speech is inaudible anyway,
  // and dither noise would make the bytes depend on chunk sizes.
  const struct {
    const char* name;
    int64_t value;
  } settings[] = {
      {"resampler", SWR_ENGINE_SWR}, {"filter_size", 64},   {"phase_shift", 10},
      {"linear_interp", 1},          {"exact_rational", 1}, {"dither_method", SWR_DITHER_NONE},
  };
  for (const auto& setting : settings) {
    ret = av_opt_set_int(swr, setting.name, setting.value, 0);
    if (ret < 0) return steps.Fail(ret, std::string("setting the resampler's ") + setting.name);
  }
  ret = swr_init(swr);
  if (ret < 0) return steps.Fail(ret, "initialising the resampler");
  return true;
}

bool OpenMuxer(AudioEncoder::State& s, const EncodeOptions& o, const FormatSpec& spec, Steps& steps) {
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
  if (buffer == nullptr) throw std::bad_alloc();
  s.io.reset(avio_alloc_context(buffer, kIoBufferSize, 1, &s.sink, nullptr, &ByteSink::Write,
                                o.whole ? &ByteSink::Seek : nullptr));
  if (!s.io) {
    av_free(buffer);
    throw std::bad_alloc();
  }
  s.muxer->pb = s.io.get();
  s.stream = avformat_new_stream(s.muxer.get(), nullptr);
  if (s.stream == nullptr) throw std::bad_alloc();
  s.stream->time_base = s.codec->time_base;
  int ret = avcodec_parameters_from_context(s.stream->codecpar, s.codec.get());
  if (ret < 0) return steps.Fail(ret, "copying the codec parameters");

  AVDictionary* muxerOptions = nullptr;
  if (o.format == "opus") av_dict_set(&muxerOptions, "page_duration", kOggPageDuration, 0);
  // No ID3v2 tag: there is no metadata to carry, and a stream then starts with an MPEG frame.
  if (o.format == "mp3") av_dict_set(&muxerOptions, "id3v2_version", "0", 0);
  ret = avformat_write_header(s.muxer.get(), &muxerOptions);
  av_dict_free(&muxerOptions);
  if (ret < 0) return steps.Fail(ret, std::string("writing the ") + spec.muxer + " header");
  s.canFlushMuxer = (s.muxer->oformat->flags & AVFMT_ALLOW_FLUSH) != 0;
  return true;
}

bool Setup(AudioEncoder::State& s, const EncodeOptions& o, Steps& steps) {
  FormatSpec spec{};
  if (!FindFormat(o.format, spec)) return steps.Fail("INVALID_ARGUMENT", "unknown format " + o.format);
  AVFormatContext* muxer = nullptr;
  int ret = avformat_alloc_output_context2(&muxer, nullptr, spec.muxer, nullptr);
  if (ret < 0 || muxer == nullptr) return steps.Fail(ret < 0 ? ret : AVERROR_MUXER_NOT_FOUND, "creating the muxer");
  s.muxer.reset(muxer);
  // Bit-exact output: no "encoder" tag (wav keeps the canonical 44-byte header, with no LIST chunk),
  // and fixed Ogg serial numbers, so the same input always gives the same bytes.
  s.muxer->flags |= AVFMT_FLAG_BITEXACT;
  if (!OpenCodec(s, o, spec, steps)) return false;
  if (!OpenResampler(s, o, steps)) return false;
  s.fifo.reset(av_audio_fifo_alloc(s.codec->sample_fmt, 1, std::max(s.frameSize, kVariableFrameMax) * 2));
  s.frame.reset(av_frame_alloc());
  s.packet.reset(av_packet_alloc());
  if (!s.fifo || !s.frame || !s.packet) throw std::bad_alloc();
  return OpenMuxer(s, o, spec, steps);
}

bool WritePackets(AudioEncoder::State& s, Steps& steps) {
  while (true) {
    int ret = avcodec_receive_packet(s.codec.get(), s.packet.get());
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return true;
    if (ret < 0) return steps.Fail(ret, "encoding");
    s.packet->stream_index = s.stream->index;
    av_packet_rescale_ts(s.packet.get(), s.codec->time_base, s.stream->time_base);
    ret = av_write_frame(s.muxer.get(), s.packet.get());
    av_packet_unref(s.packet.get());
    if (ret < 0) return steps.Fail(ret, "muxing");
  }
}

// Sends `samples` from the FIFO as one frame, padded with silence to `frameSamples`.
bool SendFrame(AudioEncoder::State& s, int samples, int frameSamples, Steps& steps) {
  AVFrame* frame = s.frame.get();
  av_frame_unref(frame);
  frame->nb_samples = frameSamples;
  frame->format = s.codec->sample_fmt;
  frame->sample_rate = s.codec->sample_rate;
#if VOXMILL_CH_LAYOUT
  SetMono(frame->ch_layout);
#else
  frame->channel_layout = AV_CH_LAYOUT_MONO;
  frame->channels = 1;
#endif
  int ret = av_frame_get_buffer(frame, 0);
  if (ret < 0) return steps.Fail(ret, "allocating a frame");
  ret = av_audio_fifo_read(s.fifo.get(), reinterpret_cast<void**>(frame->data), samples);
  if (ret < samples) return steps.Fail(ret < 0 ? ret : AVERROR_BUG, "reading the sample queue");
  if (frameSamples > samples) {
    av_samples_set_silence(frame->data, samples, frameSamples - samples, 1, s.codec->sample_fmt);
  }
  frame->pts = s.nextPts;
  s.nextPts += frameSamples;
  ret = avcodec_send_frame(s.codec.get(), frame);
  av_frame_unref(frame);
  if (ret < 0) return steps.Fail(ret, "encoding");
  return WritePackets(s, steps);
}

// Feeds whole codec frames from the FIFO; at the end also the short remainder, as a small last
// frame where the codec takes one (lame and libopus do; they record the padding so decoders trim it),
// padded with silence otherwise.
bool EncodeQueued(AudioEncoder::State& s, bool last, Steps& steps) {
  AVAudioFifo* fifo = s.fifo.get();
  if (s.frameSize <= 0) {
    while (av_audio_fifo_size(fifo) > 0) {
      const int n = std::min(av_audio_fifo_size(fifo), kVariableFrameMax);
      if (!SendFrame(s, n, n, steps)) return false;
    }
    return true;
  }
  while (av_audio_fifo_size(fifo) >= s.frameSize) {
    if (!SendFrame(s, s.frameSize, s.frameSize, steps)) return false;
  }
  const int rest = av_audio_fifo_size(fifo);
  if (last && rest > 0) return SendFrame(s, rest, s.smallLastFrame ? rest : s.frameSize, steps);
  return true;
}

// Resamples `count` samples (nullptr: drains the resampler) into the FIFO.
bool Resample(AudioEncoder::State& s, const float* input, int count, Steps& steps) {
  const int bytesPerSample = av_get_bytes_per_sample(s.codec->sample_fmt);
  while (true) {
    const int capacity = swr_get_out_samples(s.swr.get(), count);
    if (capacity < 0) return steps.Fail(capacity, "resampling");
    if (capacity == 0) return true;
    s.converted.resize(static_cast<size_t>(capacity) * static_cast<size_t>(bytesPerSample));
    uint8_t* target = s.converted.data();
    const uint8_t* source = reinterpret_cast<const uint8_t*>(input);
    const int written = swr_convert(s.swr.get(), &target, capacity, input != nullptr ? &source : nullptr, count);
    if (written < 0) return steps.Fail(written, "resampling");
    if (written > 0) {
      const int queued = av_audio_fifo_write(s.fifo.get(), reinterpret_cast<void**>(&target), written);
      if (queued < written) return steps.Fail(queued < 0 ? queued : AVERROR(ENOMEM), "queueing samples");
    }
    // Input is consumed in one call; only draining may need several.
    if (input != nullptr || written == 0) return true;
  }
}

// Hands out what the muxer has written so far: completes the Ogg page in progress, then empties the
// AVIOContext's buffer into the sink.
bool Drain(AudioEncoder::State& s, std::vector<uint8_t>& out, Steps& steps) {
  if (s.canFlushMuxer) {
    const int ret = av_write_frame(s.muxer.get(), nullptr);
    if (ret < 0) return steps.Fail(ret, "flushing the muxer");
  }
  avio_flush(s.io.get());
  if (s.io->error < 0) return steps.Fail(s.io->error, "writing the output");
  s.sink.TakeInto(out);
  return true;
}

}  // namespace

bool ValidateEncodeOptions(EncodeOptions& options, EncodeFailure& failure) {
  FormatSpec spec{};
  if (!FindFormat(options.format, spec)) {
    failure = {"INVALID_ARGUMENT", "format must be one of mp3, wav, opus, pcm16; received \"" + options.format + "\""};
    return false;
  }
  if (options.inputSampleRate < kMinInputRate || options.inputSampleRate > kMaxInputRate) {
    failure = {"INVALID_ARGUMENT", "inputSampleRate must be an integer from " + std::to_string(kMinInputRate) + " to " +
                                       std::to_string(kMaxInputRate) + "; received " +
                                       std::to_string(options.inputSampleRate)};
    return false;
  }
  const int out = options.outputSampleRate;
  if (options.format == "opus") {
    if (!OneOf(out, kOpusRates)) {
      failure = {"ENCODE_UNSUPPORTED_RATE", "Opus cannot encode at " + std::to_string(out) +
                                                " Hz; outputSampleRate must be one of " + ListOf(kOpusRates)};
      return false;
    }
  } else if (!OneOf(out, kOutputRates)) {
    failure = {"INVALID_ARGUMENT",
               "outputSampleRate must be one of " + ListOf(kOutputRates) + "; received " + std::to_string(out)};
    return false;
  }
  // The bit rate's default and per-codec range live in TypeScript (src/audio/encode.ts); here only what the codecs
  // can take at all.
  if (!spec.lossy) {
    options.bitRate = 0;
  } else if (options.bitRate < kMinBitRate || options.bitRate > kMaxBitRate) {
    failure = {"INVALID_ARGUMENT", "bitRate must be from " + std::to_string(kMinBitRate) + " to " +
                                       std::to_string(kMaxBitRate) + " bits per second; received " +
                                       std::to_string(options.bitRate)};
    return false;
  }
  return true;
}

AudioEncoder::AudioEncoder(EncodeOptions options) : options_(std::move(options)) {}

AudioEncoder::~AudioEncoder() = default;

void AudioEncoder::Release() { state_.reset(); }

bool AudioEncoder::Closed(EncodeFailure& failure) {
  failure = {"ENCODER_CLOSED", "the encoder was finished, disposed, or failed earlier"};
  return false;
}

bool AudioEncoder::Encode(const float* samples, size_t count, std::vector<uint8_t>& out, EncodeFailure& failure) {
  // Each job runs on whichever pool thread is free: forget an error an earlier job left on this one, so a
  // failure message never quotes FFmpeg about something else.
  ClearFfmpegError();
  if (finished_) return Closed(failure);
  if (EncodeSamples(samples, count, out, failure)) return true;
  // A failed step leaves codec and muxer in an unknown state: the encoder stops here.
  finished_ = true;
  Release();
  return false;
}

bool AudioEncoder::Finish(std::vector<uint8_t>& out, EncodeFailure& failure) {
  ClearFfmpegError();
  if (finished_) return Closed(failure);
  // An encoder finished without any audio still produces a valid (empty) file.
  const bool ok = (state_ || EncodeSamples(nullptr, 0, out, failure)) && Flush(out, failure);
  finished_ = true;
  Release();
  return ok;
}

bool AudioEncoder::EncodeSamples(const float* samples, size_t count, std::vector<uint8_t>& out,
                                 EncodeFailure& failure) {
  if (!state_) {
    // Warnings lame and libopus print about routine events (frames still queued at dispose) stay quiet;
    // errors are kept for the failure message.
    InstallFfmpegLog();  // normally done already by the addon's Init
    state_ = std::make_unique<State>();
    Steps setup(options_, &state_->sink, failure);
    if (!Setup(*state_, options_, setup)) return false;
  }
  State& s = *state_;
  Steps steps(options_, &s.sink, failure);
  s.clean.resize(std::min<size_t>(count, kInputBlock));
  for (size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min<size_t>(count - done, kInputBlock));
    // Codecs are not required to survive NaN or huge values (and the s16 conversion of NaN is
    // undefined), so the input is made safe here: non-finite samples become silence, the rest is
    // clipped to full scale as any 16-bit output would be.
    for (int i = 0; i < n; i++) {
      const float v = samples[done + static_cast<size_t>(i)];
      s.clean[static_cast<size_t>(i)] = std::isfinite(v) ? std::min(1.0f, std::max(-1.0f, v)) : 0.0f;
    }
    if (!Resample(s, s.clean.data(), n, steps) || !EncodeQueued(s, false, steps)) return false;
    done += static_cast<size_t>(n);
  }
  if (options_.whole) return true;
  return Drain(s, out, steps);
}

bool AudioEncoder::Flush(std::vector<uint8_t>& out, EncodeFailure& failure) {
  State& s = *state_;
  Steps steps(options_, &s.sink, failure);
  if (!Resample(s, nullptr, 0, steps) || !EncodeQueued(s, true, steps)) return false;
  int ret = avcodec_send_frame(s.codec.get(), nullptr);
  if (ret < 0) return steps.Fail(ret, "flushing the encoder");
  if (!WritePackets(s, steps)) return false;
  ret = av_write_trailer(s.muxer.get());
  if (ret < 0) return steps.Fail(ret, "writing the trailer");
  avio_flush(s.io.get());
  if (s.io->error < 0) return steps.Fail(s.io->error, "writing the output");
  s.sink.TakeInto(out);
  return true;
}

}  // namespace voxmill
