// What the decoder and the encoder both need from FFmpeg: one switch for the channel-layout API across versions,
// and FFmpeg's error text.
#pragma once
#include <string>

extern "C" {
#include <libavutil/error.h>
#include <libavutil/version.h>
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

}  // namespace voxmill
