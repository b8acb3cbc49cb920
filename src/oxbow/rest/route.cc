#include <optional>

#include "oxbow/rest/route_internal.h"

namespace oxbow::rest {
namespace {

constexpr char kNamespaceSeparator = '\x1F';

std::optional<int> HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return std::nullopt;
}

// The path after "/v1/", split at '/', each segment decoded.
Result<std::vector<std::string>> Segments(std::string_view path) {
  std::vector<std::string> segments;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string_view raw =
        path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    ASSIGN_OR_RAISE(std::string segment, PercentDecode(raw));
    segments.push_back(std::move(segment));
    if (slash == std::string_view::npos) return segments;
    start = slash + 1;
  }
}

Status NoRoute(std::string_view method, std::string_view path) {
  return Status::Invalid("no Iceberg REST catalog route " +
                         Quote(std::string(method) + " " + std::string(path)));
}

Route Write(std::string what, std::vector<std::string> namespace_parts = {},
            std::string table = {}) {
  return Route{Operation::kWrite, std::move(namespace_parts), std::move(table), std::move(what)};
}

}  // namespace

Result<std::string> PercentDecode(std::string_view text) {
  std::string decoded;
  decoded.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      decoded.push_back(text[i]);
      continue;
    }
    const auto high = i + 2 < text.size() ? HexValue(text[i + 1]) : std::nullopt;
    const auto low = i + 2 < text.size() ? HexValue(text[i + 2]) : std::nullopt;
    if (!high || !low) {
      return Status::Invalid("bad percent escape at byte " + std::to_string(i) + " of " +
                             Quote(text));
    }
    decoded.push_back(static_cast<char>(*high * 16 + *low));
    i += 2;
  }
  return decoded;
}

Result<std::vector<std::string>> SplitNamespace(std::string_view decoded) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t separator = decoded.find(kNamespaceSeparator, start);
    const std::string_view part = decoded.substr(
        start, separator == std::string_view::npos ? decoded.npos : separator - start);
    if (part.empty()) return Status::Invalid("empty namespace part in " + Quote(decoded));
    parts.emplace_back(part);
    if (separator == std::string_view::npos) return parts;
    start = separator + 1;
  }
}

Result<Route> ParseRoute(std::string_view method, std::string_view path) {
  constexpr std::string_view kVersion = "/v1/";
  if (!path.starts_with(kVersion)) return NoRoute(method, path);
  ASSIGN_OR_RAISE(std::vector<std::string> s, Segments(path.substr(kVersion.size())));
  const bool get = method == "GET";
  const bool head = method == "HEAD";
  const bool post = method == "POST";
  const bool del = method == "DELETE";
  const size_t n = s.size();

  if (n == 1 && s[0] == "config" && get) return Route{Operation::kGetConfig};
  if (n == 2 && s[0] == "tables" && s[1] == "rename" && post) return Write("rename a table");
  if (n == 2 && s[0] == "transactions" && s[1] == "commit" && post) {
    return Write("commit a transaction");
  }
  if (s[0] != "namespaces") return NoRoute(method, path);
  if (n == 1) {
    if (get) return Route{Operation::kListNamespaces};
    if (post) return Write("create a namespace");
    return NoRoute(method, path);
  }
  ASSIGN_OR_RAISE(std::vector<std::string> ns, SplitNamespace(s[1]));
  if (n == 2) {
    if (get) return Route{Operation::kLoadNamespace, std::move(ns)};
    if (head) return Route{Operation::kNamespaceExists, std::move(ns)};
    if (del) return Write("drop namespace", std::move(ns));
    return NoRoute(method, path);
  }
  if (n == 3 && s[2] == "properties" && post) {
    return Write("update the properties of namespace", std::move(ns));
  }
  if (n == 3 && s[2] == "register" && post) return Write("register a table in", std::move(ns));
  if (s[2] != "tables") return NoRoute(method, path);
  if (n == 3) {
    if (get) return Route{Operation::kListTables, std::move(ns)};
    if (post) return Write("create a table in", std::move(ns));
    return NoRoute(method, path);
  }
  std::string table = std::move(s[3]);
  if (table.empty()) return Status::Invalid("empty table name in " + Quote(path));
  if (n == 4) {
    if (get) return Route{Operation::kLoadTable, std::move(ns), std::move(table)};
    if (head) return Route{Operation::kTableExists, std::move(ns), std::move(table)};
    if (post) return Write("commit to table", std::move(ns), std::move(table));
    if (del) return Write("drop table", std::move(ns), std::move(table));
    return NoRoute(method, path);
  }
  if (n == 5 && s[4] == "metrics" && post) {
    return Route{Operation::kReportMetrics, std::move(ns), std::move(table)};
  }
  return NoRoute(method, path);
}

}  // namespace oxbow::rest
