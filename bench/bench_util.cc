#include "bench_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

namespace oxbow::bench {

Result<Flags> Flags::Parse(int argc, char** argv, int first) {
  Flags flags;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) return Status::Invalid("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::string value = "1";
    if (i + 1 < argc && std::string_view(argv[i + 1]).substr(0, 2) != "--") value = argv[++i];
    flags.values_.insert_or_assign(std::move(name), std::move(value));
  }
  return flags;
}

std::string Flags::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Flags::GetInt(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : std::stoll(it->second);
}

double ProcessCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double OtherProcessCpuSeconds(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces: state is the
  // first, utime and stime the 12th and 13th.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 1; i <= 13 && fields >> field; ++i) {
    if (i == 12) utime = std::stoll(field);
    if (i == 13) stime = std::stoll(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

Result<std::shared_ptr<Buffer>> ReadFileToMemory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::IOError("cannot stat '" + path + "': " + std::strerror(errno));
  }
  auto allocated = MutableBuffer::Allocate(st.st_size);
  if (!allocated.ok()) {
    ::close(fd);
    return allocated.status();
  }
  std::shared_ptr<MutableBuffer> buffer = *allocated;
  int64_t done = 0;
  while (done < st.st_size) {
    ssize_t n = ::read(fd, buffer->mutable_data() + done, static_cast<size_t>(st.st_size - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Status::IOError("short read of '" + path + "' at byte " + std::to_string(done));
    }
    done += n;
  }
  ::close(fd);
  return std::shared_ptr<Buffer>(std::move(buffer));
}

double Percentile(std::vector<double>* values, double q) {
  if (values->empty()) return 0;
  std::sort(values->begin(), values->end());
  size_t rank = static_cast<size_t>(q * static_cast<double>(values->size()));
  if (rank >= values->size()) rank = values->size() - 1;
  return (*values)[rank];
}

Timing Summarize(std::vector<double> seconds) {
  Timing t;
  if (seconds.empty()) return t;
  std::sort(seconds.begin(), seconds.end());
  t.best = seconds.front();
  t.median = seconds[seconds.size() / 2];
  return t;
}

JsonLine& JsonLine::Add(const std::string& key, const std::string& value) {
  if (!body_.empty()) body_ += ",";
  body_ += "\"" + key + "\":\"";
  for (char c : value) {
    if (c == '"' || c == '\\') body_ += '\\';
    body_ += c;
  }
  body_ += "\"";
  return *this;
}

JsonLine& JsonLine::Add(const std::string& key, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.9g", value);
  if (!body_.empty()) body_ += ",";
  body_ += "\"" + key + "\":" + text;
  return *this;
}

JsonLine& JsonLine::Add(const std::string& key, int64_t value) {
  if (!body_.empty()) body_ += ",";
  body_ += "\"" + key + "\":" + std::to_string(value);
  return *this;
}

void JsonLine::Print() const {
  std::printf("{%s}\n", body_.c_str());
  std::fflush(stdout);
}

int Fail(const char* program, const Status& status) {
  std::fprintf(stderr, "%s: error: %s\n", program, status.ToString().c_str());
  return 1;
}

}  // namespace oxbow::bench
