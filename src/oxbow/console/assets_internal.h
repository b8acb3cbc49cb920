// The console's pages, scripts and styles (src/oxbow/console/assets/), compiled into oxbowd.
#pragma once

#include <map>
#include <string_view>

namespace oxbow::console::internal {

// By file name ("index.html", "console.js", ...).
const std::map<std::string_view, std::string_view>& Assets();

}  // namespace oxbow::console::internal
