// Rebuilding a lost data dir from the warehouse (RecoverDataDir, recover.cc).
#pragma once

namespace oxbow::engine::internal {

// Present in a data dir while RecoverDataDir rebuilds it; Engine::Open refuses such a dir.
inline constexpr char kRecoveringMarker[] = "RECOVERING";

}  // namespace oxbow::engine::internal
