// Opening a file the caller named without ever blocking in open(): fopen() on a FIFO with no writer waits
// for one forever (no abort can reach it, and process exit then hangs on the worker thread), and a device
// node can block or never end. The path is opened non-blocking, checked to be a regular file on the open
// descriptor (so the check and the read see the same file), and only then switched back to blocking reads.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>

namespace voxmill {

struct RegularFile {
  FILE* file = nullptr;  // owned by the caller on success (fclose)
  int64_t size = 0;
  // On failure: errno of the failing call, or 0 when the path names something other than a regular file.
  int error = 0;
};

// Returns true with `out.file` open for reading ("rb") and `out.size` set, or false with `out.error` set.
inline bool OpenRegularFile(const std::string& path, RegularFile& out) {
  out = RegularFile();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    return false;
  }
  struct stat info = {};
  if (::fstat(fd, &info) != 0) {
    out.error = errno;
    ::close(fd);
    return false;
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return false;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    out.error = errno;
    ::close(fd);
    return false;
  }
  FILE* file = ::fdopen(fd, "rb");
  if (file == nullptr) {
    out.error = errno;
    ::close(fd);
    return false;
  }
  out.file = file;
  out.size = static_cast<int64_t>(info.st_size);
  return true;
}

}  // namespace voxmill
