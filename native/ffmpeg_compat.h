// What the decoder and the encoder both need from FFmpeg: one switch for the channel-layout API across versions,
// FFmpeg's error text, and unique_ptr deleters for the objects both own.
#pragma once
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avio.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/mem.h>
#include <libavutil/version.h>
#include <libswresample/swresample.h>
}

// FFmpeg 5.1 replaced the channel-layout bitmask API with AVChannelLayout; Ubuntu 22.04 still ships 4.4.
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(57, 24, 100)
#define VOXMILL_CH_LAYOUT 1
#else
#define VOXMILL_CH_LAYOUT 0
#endif

namespace voxmill {

// FFmpeg's description of an AVERROR code.
inline std::string AvError(int code) {
  char buffer[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buffer, sizeof(buffer));
  return buffer;
}

// A custom AVIOContext: its buffer is ours too (FFmpeg may have replaced it, so free what it holds now).
struct IoContextDeleter {
  void operator()(AVIOContext* io) const {
    if (io == nullptr) return;
    av_freep(&io->buffer);
    avio_context_free(&io);
  }
};
struct CodecDeleter {
  void operator()(AVCodecContext* ctx) const { avcodec_free_context(&ctx); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct SwrDeleter {
  void operator()(SwrContext* s) const { swr_free(&s); }
};

}  // namespace voxmill
