#include "oxbow/cli/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "oxbow/common/file_system.h"

namespace oxbow::cli {
namespace {

// Reads `fd` to its end into one buffer.
Result<std::shared_ptr<Buffer>> ReadAllFrom(int fd, const std::string& name) {
  std::string data;
  char chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError("cannot read " + name + ": " + std::strerror(errno));
    }
    data.append(chunk, static_cast<size_t>(n));
  }
  return Buffer::FromString(std::move(data));
}

}  // namespace

std::string DisplayName(const std::string& path) {
  return path == "-" ? "standard input" : "'" + path + "'";
}

Result<std::shared_ptr<Buffer>> ReadInput(const std::string& path) {
  if (path == "-") return ReadAllFrom(STDIN_FILENO, DisplayName(path));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status::IOError("cannot open '" + path + "': " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return Status::Invalid("'" + path + "' is a directory");
  if (S_ISREG(st.st_mode)) return ReadWholeFile(*PosixFileSystem::Default(), path);
  // Pipes and devices cannot be mapped: read them through.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open '" + path + "': " + std::strerror(errno));
  auto data = ReadAllFrom(fd, DisplayName(path));
  ::close(fd);
  return data;
}

}  // namespace oxbow::cli
