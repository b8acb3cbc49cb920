// Small helpers shared by the benchmark programs: flags, clocks, files, percentiles, JSON lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "oxbow/common/buffer.h"
#include "oxbow/common/status.h"

namespace oxbow::bench {

// "--name value" pairs; a flag without a value reads as "1".
class Flags {
 public:
  static Result<Flags> Parse(int argc, char** argv, int first);
  std::string Get(const std::string& name, const std::string& fallback) const;
  int64_t GetInt(const std::string& name, int64_t fallback) const;
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  void Set(const std::string& name, std::string value) { values_[name] = std::move(value); }

 private:
  std::map<std::string, std::string> values_;
};

inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time (user + system) of this process so far, in seconds (CLOCK_PROCESS_CPUTIME_ID).
double ProcessCpuSeconds();
// CPU time (user + system) of process `pid` so far, in seconds, from /proc/<pid>/stat (clock
// ticks, 10 ms here); -1 when it cannot be read.
double OtherProcessCpuSeconds(int64_t pid);

// Reads a whole file into one 64-byte aligned heap buffer (so timings never touch the disk).
Result<std::shared_ptr<Buffer>> ReadFileToMemory(const std::string& path);

// The q-quantile (0..1) of `values` by nearest rank; 0 when empty. Sorts `values`.
double Percentile(std::vector<double>* values, double q);

// Best (minimum) and median of repeated timings.
struct Timing {
  double best = 0;
  double median = 0;
};
Timing Summarize(std::vector<double> seconds);

// Builds one JSON object line: {"k":v,...}. Values are numbers or strings.
class JsonLine {
 public:
  JsonLine& Add(const std::string& key, const std::string& value);
  JsonLine& Add(const std::string& key, const char* value) { return Add(key, std::string(value)); }
  JsonLine& Add(const std::string& key, double value);
  JsonLine& Add(const std::string& key, int64_t value);
  JsonLine& Add(const std::string& key, int value) { return Add(key, int64_t{value}); }
  // Prints the line to stdout and flushes.
  void Print() const;

 private:
  std::string body_;
};

// Prints "<program>: error: <status>" to stderr and returns exit code 1.
int Fail(const char* program, const Status& status);

}  // namespace oxbow::bench
