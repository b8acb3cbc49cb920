// The JSON forms of descriptors as nlohmann::json values, shared by the descriptor's API forms
// and the durable catalog's file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "oxbow/catalog/descriptor.h"

namespace oxbow::catalog {

// nlohmann::json reports errors by exception; they are caught here and nowhere else.
template <typename Fn>
auto TranslateJsonErrors(std::string_view what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const nlohmann::json::exception& e) {
    return Status::Invalid(std::string(what) + ": " + e.what());
  }
}

nlohmann::json DescriptorJson(const TableDescriptor& t);
Result<TableDescriptor> DescriptorFrom(const nlohmann::json& j);
// Parses `text`; `what` names it in the error.
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what);

}  // namespace oxbow::catalog
