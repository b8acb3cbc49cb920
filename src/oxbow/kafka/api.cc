#include "oxbow/kafka/api.h"

namespace oxbow::kafka {

const std::vector<ApiSupport>& SupportedApis() {
  static const std::vector<ApiSupport> kApis = {
#define KAFKA_API(name, key, min_version, max_version, first_flexible) \
  {ApiKey::k##name, min_version, max_version, first_flexible},
#include "oxbow/kafka/apis.inc"
#undef KAFKA_API
  };
  return kApis;
}

const ApiSupport* FindApi(int16_t api_key) {
  for (const auto& api : SupportedApis()) {
    if (static_cast<int16_t>(api.key) == api_key) return &api;
  }
  return nullptr;
}

RequestHeader DecodeRequestHeader(Reader& r) {
  RequestHeader h;
  h.api_key = r.Int16();
  h.api_version = r.Int16();
  h.correlation_id = r.Int32();
  h.client_id = r.NullableString(false);  // never compact, even in header v2
  const ApiSupport* api = FindApi(h.api_key);
  // Unknown keys and versions are answered (or refused) by the caller; tagged fields exist
  // only in the flexible versions of known APIs.
  if (api != nullptr && h.api_version >= api->min_version && h.api_version <= api->max_version) {
    r.SkipTaggedFields(IsFlexible(*api, h.api_version));
  }
  return h;
}

void EncodeResponseHeader(Writer& w, int32_t correlation_id, bool flexible) {
  w.Int32(correlation_id);
  w.NoTaggedFields(flexible);
}

}  // namespace oxbow::kafka
