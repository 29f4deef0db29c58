#include "audio_decode.h"

#include "ffmpeg_compat.h"
#include "ffmpeg_log.h"
#include "regular_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
}

namespace voxmill {
namespace {

// Only demuxers for audio containers we claim to accept; everything else is rejected after probing,
// which keeps FFmpeg's larger attack surface (images, playlists, network formats) out of reach.
constexpr const char* kFormatWhitelist = "wav,w64,mp3,ogg,flac,mov,matroska,webm,aac,aiff,caf,au";
constexpr int kIoBufferSize = 64 * 1024;
constexpr int kMaxChannels = 64;
// Corrupt packets are skipped like the ffmpeg CLI does, but a stream that is mostly garbage fails.
constexpr int kMaxDecodeErrors = 64;

// --- byte sources behind a custom AVIOContext: seekable, so an m4a whose index sits at the end
// decodes from memory, and no file name reaches FFmpeg (format comes from the bytes alone) ---------

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual int Read(uint8_t* buffer, int size) = 0;
  virtual int64_t Seek(int64_t offset, int whence) = 0;

  static int ReadPacket(void* opaque, uint8_t* buffer, int size) {
    return static_cast<ByteSource*>(opaque)->Read(buffer, size);
  }
  static int64_t SeekPacket(void* opaque, int64_t offset, int whence) {
    return static_cast<ByteSource*>(opaque)->Seek(offset, whence);
  }

 protected:
  static int64_t Resolve(int64_t offset, int whence, int64_t position, int64_t size) {
    switch (whence & ~AVSEEK_FORCE) {
      case SEEK_SET:
        return offset;
      case SEEK_CUR:
        return position + offset;
      case SEEK_END:
        return size + offset;
      default:
        return -1;
    }
  }
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size) : data_(data), size_(static_cast<int64_t>(size)) {}
  int Read(uint8_t* buffer, int size) override {
    if (position_ >= size_) return AVERROR_EOF;
    const int64_t n = std::min<int64_t>(size, size_ - position_);
    std::memcpy(buffer, data_ + position_, static_cast<size_t>(n));
    position_ += n;
    return static_cast<int>(n);
  }
  int64_t Seek(int64_t offset, int whence) override {
    if (whence & AVSEEK_SIZE) return size_;
    const int64_t target = Resolve(offset, whence, position_, size_);
    if (target < 0 || target > size_) return AVERROR(EINVAL);
    position_ = target;
    return position_;
  }

 private:
  const uint8_t* data_;
  int64_t size_;
  int64_t position_ = 0;
};

class FileSource final : public ByteSource {
 public:
  explicit FileSource(FILE* file, int64_t size) : file_(file), size_(size) {}
  ~FileSource() override { std::fclose(file_); }
  int Read(uint8_t* buffer, int size) override {
    const size_t n = std::fread(buffer, 1, static_cast<size_t>(size), file_);
    if (n == 0) return std::ferror(file_) ? AVERROR(EIO) : AVERROR_EOF;
    return static_cast<int>(n);
  }
  int64_t Seek(int64_t offset, int whence) override {
    if (whence & AVSEEK_SIZE) return size_;
    const int64_t target = Resolve(offset, whence, ftello(file_), size_);
    if (target < 0 || target > size_) return AVERROR(EINVAL);
    if (fseeko(file_, target, SEEK_SET) != 0) return AVERROR(EIO);
    return target;
  }

 private:
  FILE* file_;
  int64_t size_;
};

// --- RAII for FFmpeg objects (the shared deleters are in ffmpeg_compat.h) --------------------------

struct FormatDeleter {
  void operator()(AVFormatContext* ctx) const { avformat_close_input(&ctx); }
};

int ChannelCount(const AVCodecParameters* par) {
#if VOXMILL_CH_LAYOUT
  return par->ch_layout.nb_channels;
#else
  return par->channels;
#endif
}

// Converts decoded frames of any layout/format/rate to float at the target rate, mono (one output vector)
// or stereo (two: left, right), re-creating the resampler if a stream changes its parameters midway
// (chained Ogg, some broadcasts).
class Resampler {
 public:
  Resampler(const DecodeRequest& request, size_t maxSamples, std::vector<std::vector<float>*> outputs,
            uint64_t& nonFinite)
      : targetRate_(request.targetSampleRate),
        minRate_(request.minSampleRate),
        maxRate_(request.maxSampleRate),
        maxSamples_(maxSamples),
        outputs_(std::move(outputs)),
        nonFinite_(nonFinite) {}

  // Returns 0, or a negative AVERROR, or 1 when the maximum duration was reached.
  int Push(const AVFrame* frame) {
    if (!Matches(frame)) {
      const int flushed = Flush();
      if (flushed != 0) return flushed;
      const int created = Create(frame);
      if (created < 0) return created;
    }
    return Convert(const_cast<const uint8_t**>(frame->extended_data), frame->nb_samples);
  }

  int Flush() {
    if (!swr_) return 0;
    return Convert(nullptr, 0);
  }

 private:
  bool Stereo() const { return outputs_.size() == 2; }

  bool Matches(const AVFrame* frame) const {
    if (!swr_ || frame->format != format_ || frame->sample_rate != rate_) return false;
#if VOXMILL_CH_LAYOUT
    return frame->ch_layout.nb_channels == channels_;
#else
    return frame->channels == channels_;
#endif
  }

  int Create(const AVFrame* frame) {
    swr_.reset();
    format_ = frame->format;
    rate_ = frame->sample_rate;
    // A stream may change its rate midway (chained Ogg), so the header check alone is not enough.
    if (rate_ <= 0 || rate_ < minRate_ || rate_ > maxRate_) return AVERROR_INVALIDDATA;
    // Mono: packed float, as always. Stereo: planar, so each side lands in its own vector.
    const AVSampleFormat outFormat = Stereo() ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_FLT;
    SwrContext* swr = nullptr;
#if VOXMILL_CH_LAYOUT
    channels_ = frame->ch_layout.nb_channels;
    if (channels_ <= 0 || channels_ > kMaxChannels) return AVERROR_INVALIDDATA;
    AVChannelLayout inLayout = {};
    if (frame->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC) {
      av_channel_layout_default(&inLayout, channels_);
    } else if (av_channel_layout_copy(&inLayout, &frame->ch_layout) < 0) {
      return AVERROR(ENOMEM);
    }
    AVChannelLayout outLayout = AV_CHANNEL_LAYOUT_MONO;
    if (Stereo()) outLayout = AV_CHANNEL_LAYOUT_STEREO;
    int ret = swr_alloc_set_opts2(&swr, &outLayout, outFormat, targetRate_, &inLayout,
                                  static_cast<AVSampleFormat>(format_), rate_, 0, nullptr);
    av_channel_layout_uninit(&inLayout);
    if (ret < 0) return ret;
#else
    channels_ = frame->channels;
    if (channels_ <= 0 || channels_ > kMaxChannels) return AVERROR_INVALIDDATA;
    const int64_t inLayout = frame->channel_layout != 0 ? static_cast<int64_t>(frame->channel_layout)
                                                        : av_get_default_channel_layout(channels_);
    const int64_t outLayout = Stereo() ? AV_CH_LAYOUT_STEREO : AV_CH_LAYOUT_MONO;
    swr = swr_alloc_set_opts(nullptr, outLayout, outFormat, targetRate_, inLayout, static_cast<AVSampleFormat>(format_),
                             rate_, 0, nullptr);
    if (swr == nullptr) return AVERROR(ENOMEM);
#endif
    swr_.reset(swr);
    // Downmix gains normalized so no output sample can exceed the loudest input: stereo -> mono is (L + R) / 2.
    // libswresample normalizes only for integer output by default; for float output it mixed both sides at -3 dB
    // each, 3 dB louder than the source, and loud stereo clipped (93 samples of jfk.flac at exactly +-1). Whisper's
    // own loader (ffmpeg to s16), faster-whisper (PyAV) and whisper-cli (miniaudio) all average the channels.
    const int normalized = av_opt_set_double(swr, "rematrix_maxval", 1.0, 0);
    if (normalized < 0) return normalized;
    return swr_init(swr_.get());
  }

  int Convert(const uint8_t** input, int inputSamples) {
    const int capacity = swr_get_out_samples(swr_.get(), inputSamples);
    if (capacity < 0) return capacity;
    if (capacity == 0) return 0;
    const size_t before = outputs_[0]->size();
    uint8_t* targets[2] = {nullptr, nullptr};
    for (size_t c = 0; c < outputs_.size(); c++) {
      Grow(*outputs_[c], before + static_cast<size_t>(capacity));
      outputs_[c]->resize(before + static_cast<size_t>(capacity));
      targets[c] = reinterpret_cast<uint8_t*>(outputs_[c]->data() + before);
    }
    const int written = swr_convert(swr_.get(), targets, capacity, input, inputSamples);
    if (written < 0) {
      for (std::vector<float>* out : outputs_) out->resize(before);
      return written;
    }
    for (std::vector<float>* out : outputs_) {
      out->resize(before + static_cast<size_t>(written));
      nonFinite_ += SanitizeSamples(out->data() + before, static_cast<size_t>(written));
    }
    return outputs_[0]->size() > maxSamples_ ? 1 : 0;
  }

  // Doubling, as std::vector does, but never past the duration limit (plus the frame being converted): a vector
  // that doubled from 4,500 s to 9,000 s of capacity to hold a 7,200 s limit had both copies alive at once.
  void Grow(std::vector<float>& out, size_t needed) const {
    if (needed <= out.capacity()) return;
    out.reserve(std::max(needed, std::min(out.capacity() * 2, maxSamples_ + (needed - out.size()))));
  }

  int targetRate_;
  int minRate_;
  int maxRate_;
  size_t maxSamples_;
  std::vector<std::vector<float>*> outputs_;
  uint64_t& nonFinite_;
  std::unique_ptr<SwrContext, SwrDeleter> swr_;
  int format_ = -1;
  int rate_ = 0;
  int channels_ = 0;
};

std::unique_ptr<ByteSource> OpenSource(const DecodeRequest& request, DecodeFailure& failure) {
  if (request.path.empty()) return std::make_unique<MemorySource>(request.data, request.size);
  // Never fopen() the path: on a FIFO without a writer that blocks forever, out of reach of abort().
  RegularFile opened;
  if (!OpenRegularFile(request.path, opened)) {
    if (opened.error == 0) {
      // Kept AUDIO_DECODE_FAILED (what a directory always gave) so callers' handling does not change.
      failure = {"AUDIO_DECODE_FAILED",
                 "cannot open " + request.path + ": not a regular file (a directory, FIFO, socket or device)"};
    } else {
      failure = {opened.error == ENOENT ? "FILE_NOT_FOUND" : "AUDIO_DECODE_FAILED",
                 "cannot open " + request.path + ": " + std::strerror(opened.error)};
    }
    return nullptr;
  }
  try {
    return std::make_unique<FileSource>(opened.file, opened.size);
  } catch (...) {
    std::fclose(opened.file);
    throw;
  }
}

bool Failed(DecodeFailure& failure, const char* code, const std::string& message) {
  failure.code = code;
  failure.message = message;
  if (!LastFfmpegError().empty()) failure.message += " (FFmpeg: " + LastFfmpegError() + ")";
  return false;
}

}  // namespace

std::string FfmpegVersion() { return av_version_info(); }

uint64_t SanitizeSamples(float* samples, size_t count) {
  uint64_t nonFinite = 0;
  for (size_t i = 0; i < count; i++) {
    const float v = samples[i];
    if (!std::isfinite(v)) {
      samples[i] = 0.0f;
      nonFinite++;
    } else if (v > 1.0f) {
      samples[i] = 1.0f;
    } else if (v < -1.0f) {
      samples[i] = -1.0f;
    }
  }
  return nonFinite;
}

bool DecodeAudio(const DecodeRequest& request, DecodedAudio& out, DecodeFailure& failure) {
  InstallFfmpegLog();
  ClearFfmpegError();
  if (request.path.empty() && request.size == 0) return Failed(failure, "AUDIO_EMPTY", "the audio input is empty");
  if (request.minSampleRate <= 0 || request.maxSampleRate < request.minSampleRate) {
    return Failed(failure, "INVALID_ARGUMENT", "minSampleRate and maxSampleRate must be set (0 < min <= max)");
  }

  std::unique_ptr<ByteSource> source = OpenSource(request, failure);
  if (!source) return false;

  auto* ioBuffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
  if (ioBuffer == nullptr) throw std::bad_alloc();
  std::unique_ptr<AVIOContext, IoContextDeleter> io(avio_alloc_context(
      ioBuffer, kIoBufferSize, 0, source.get(), &ByteSource::ReadPacket, nullptr, &ByteSource::SeekPacket));
  if (!io) {
    av_free(ioBuffer);
    throw std::bad_alloc();
  }

  AVFormatContext* rawFormat = avformat_alloc_context();
  if (rawFormat == nullptr) throw std::bad_alloc();
  rawFormat->pb = io.get();
  rawFormat->flags |= AVFMT_FLAG_CUSTOM_IO;
  rawFormat->format_whitelist = av_strdup(kFormatWhitelist);
  // avformat_open_input frees the context on failure.
  int ret = avformat_open_input(&rawFormat, nullptr, nullptr, nullptr);
  if (ret < 0) {
    return Failed(
        failure, "AUDIO_UNSUPPORTED",
        "not a recognised audio format (accepted: wav, mp3, m4a/aac, flac, ogg vorbis/opus, webm): " + AvError(ret));
  }
  std::unique_ptr<AVFormatContext, FormatDeleter> format(rawFormat);

  ret = avformat_find_stream_info(format.get(), nullptr);
  if (ret < 0) return Failed(failure, "AUDIO_DECODE_FAILED", "cannot read the stream layout: " + AvError(ret));

  const int streamIndex = av_find_best_stream(format.get(), AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  if (streamIndex < 0) return Failed(failure, "AUDIO_UNSUPPORTED", "the input has no audio stream");
  AVStream* stream = format->streams[streamIndex];
  const AVCodecParameters* par = stream->codecpar;
  const AVCodec* codec = avcodec_find_decoder(par->codec_id);
  if (codec == nullptr) {
    return Failed(failure, "AUDIO_UNSUPPORTED",
                  std::string("no decoder for audio codec ") + avcodec_get_name(par->codec_id));
  }
  const int channels = ChannelCount(par);
  if (par->sample_rate <= 0 || channels <= 0 || channels > kMaxChannels) {
    return Failed(failure, "AUDIO_DECODE_FAILED",
                  "implausible stream parameters: " + std::to_string(par->sample_rate) + " Hz, " +
                      std::to_string(channels) + " channels (at most " + std::to_string(kMaxChannels) + ")");
  }
  if (par->sample_rate < request.minSampleRate || par->sample_rate > request.maxSampleRate) {
    return Failed(failure, "AUDIO_DECODE_FAILED",
                  "the audio's sample rate is " + std::to_string(par->sample_rate) + " Hz; accepted: " +
                      std::to_string(request.minSampleRate) + " to " + std::to_string(request.maxSampleRate) + " Hz");
  }
  // Ignore every other stream so the demuxer does not spend time on cover art or video.
  for (unsigned i = 0; i < format->nb_streams; i++) {
    if (static_cast<int>(i) != streamIndex) format->streams[i]->discard = AVDISCARD_ALL;
  }

  std::unique_ptr<AVCodecContext, CodecDeleter> decoder(avcodec_alloc_context3(codec));
  if (!decoder) throw std::bad_alloc();
  ret = avcodec_parameters_to_context(decoder.get(), par);
  if (ret < 0) return Failed(failure, "AUDIO_DECODE_FAILED", "bad codec parameters: " + AvError(ret));
  decoder->thread_count = 1;
  decoder->pkt_timebase = stream->time_base;
  ret = avcodec_open2(decoder.get(), codec, nullptr);
  if (ret < 0) return Failed(failure, "AUDIO_DECODE_FAILED", "cannot open the decoder: " + AvError(ret));

  out.container = format->iformat->name;
  out.codec = avcodec_get_name(par->codec_id);
  out.sampleRate = par->sample_rate;
  out.channels = channels;
  out.bitRate = par->bit_rate > 0 ? par->bit_rate : format->bit_rate;

  const double maxSamplesD = request.maxDurationSeconds * request.targetSampleRate;
  const size_t maxSamples = maxSamplesD >= 1e15 ? static_cast<size_t>(1e15) : static_cast<size_t>(maxSamplesD);
  // The mono mix comes from its own resampler in either mode, so `samples` is bit-identical with and
  // without stereo (a mix of the resampled sides would round differently).
  const bool stereo = request.stereo && channels >= 2;
  // Reserve from the container's claimed duration, up to the duration limit, so a long file is not copied at every
  // doubling. A header that lies costs address space only: pages are committed as samples are written, and the
  // excess is given back below. Where the system refuses the reservation (no overcommit), the vectors just grow.
  if (format->duration > 0) {
    const double claimed = static_cast<double>(format->duration) / AV_TIME_BASE * request.targetSampleRate;
    // One second past the limit: the frame that crosses it must fit without a reallocation.
    const auto reserve = static_cast<size_t>(
        std::min(claimed * 1.01 + 1024, static_cast<double>(maxSamples) + request.targetSampleRate));
    try {
      out.samples.reserve(reserve);
      if (stereo) {
        out.left.reserve(reserve);
        out.right.reserve(reserve);
      }
    } catch (const std::bad_alloc&) {
    }
  }

  Resampler resampler(request, maxSamples, {&out.samples}, out.nonFiniteSamples);
  // The sides' non-finite samples are the mix's too, so they are counted once (from the mix).
  uint64_t sidesNonFinite = 0;
  std::unique_ptr<Resampler> sides;
  if (stereo) {
    sides = std::make_unique<Resampler>(request, maxSamples, std::vector<std::vector<float>*>{&out.left, &out.right},
                                        sidesNonFinite);
  }
  std::unique_ptr<AVPacket, PacketDeleter> packet(av_packet_alloc());
  std::unique_ptr<AVFrame, FrameDeleter> frame(av_frame_alloc());
  if (!packet || !frame) throw std::bad_alloc();

  int decodeErrors = 0;
  int goodPackets = 0;
  int readError = 0;
  bool draining = false;
  while (true) {
    if (request.cancel != nullptr && request.cancel->load(std::memory_order_relaxed)) {
      return Failed(failure, "ABORTED", "decoding was aborted");
    }
    if (!draining) {
      ret = av_read_frame(format.get(), packet.get());
      if (ret < 0) {
        // End of input, or a truncated/corrupt tail: keep what decoded so far, then drain.
        if (ret != AVERROR_EOF) readError = ret;
        draining = true;
        ret = avcodec_send_packet(decoder.get(), nullptr);
      } else if (packet->stream_index != streamIndex) {
        av_packet_unref(packet.get());
        continue;
      } else {
        ret = avcodec_send_packet(decoder.get(), packet.get());
        av_packet_unref(packet.get());
        if (ret < 0 && ret != AVERROR(EAGAIN)) {
          if (++decodeErrors > kMaxDecodeErrors && decodeErrors > goodPackets) {
            return Failed(failure, "AUDIO_DECODE_FAILED", "the audio stream is corrupt: " + AvError(ret));
          }
          continue;
        }
        goodPackets++;
      }
    }
    // Pull every frame the decoder has ready.
    while (true) {
      ret = avcodec_receive_frame(decoder.get(), frame.get());
      if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) break;
      if (ret < 0) {
        if (++decodeErrors > kMaxDecodeErrors && decodeErrors > goodPackets) {
          return Failed(failure, "AUDIO_DECODE_FAILED", "the audio stream is corrupt: " + AvError(ret));
        }
        break;
      }
      int pushed = resampler.Push(frame.get());
      if (pushed == 0 && sides) pushed = sides->Push(frame.get());
      av_frame_unref(frame.get());
      if (pushed < 0) return Failed(failure, "AUDIO_DECODE_FAILED", "cannot resample the audio: " + AvError(pushed));
      if (pushed == 1) {
        return Failed(failure, "AUDIO_TOO_LONG",
                      "the audio is longer than the maximum of " + std::to_string(request.maxDurationSeconds) +
                          " s; decoding stopped there");
      }
    }
    if (draining) break;
  }
  int flushed = resampler.Flush();
  if (flushed == 0 && sides) flushed = sides->Flush();
  if (flushed == 1) {
    return Failed(failure, "AUDIO_TOO_LONG",
                  "the audio is longer than the maximum of " + std::to_string(request.maxDurationSeconds) + " s");
  }
  if (out.samples.empty()) {
    if (readError != 0 || decodeErrors > 0) {
      return Failed(failure, "AUDIO_DECODE_FAILED",
                    "no audio could be decoded: " + AvError(readError != 0 ? readError : AVERROR_INVALIDDATA));
    }
    if (!request.allowEmpty) return Failed(failure, "AUDIO_EMPTY", "the audio stream contains no samples");
    return true;
  }
  // Both resamplers see the same frames at the same rates, so the lengths agree; this only guards the contract.
  if (stereo) {
    out.left.resize(out.samples.size(), 0.0f);
    out.right.resize(out.samples.size(), 0.0f);
  }
  // Give back a large over-reservation (a header that overstated its duration); small slack is cheaper kept.
  for (std::vector<float>* v : {&out.samples, &out.left, &out.right}) {
    if (v->capacity() > v->size() + v->size() / 4 + 16000) v->shrink_to_fit();
  }
  return true;
}

}  // namespace voxmill
