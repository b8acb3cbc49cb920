#include "oxbow/node/table_handle.h"

namespace oxbow::node {

Result<std::unique_ptr<engine::ReadCursor>> TableHandle::OpenRead(
    engine::ReadRequest request) const {
  request.table = name();
  return lake::OpenLogRead(engine_, {tiering_->catalog(), tiering_->file_system()}, request);
}

Result<std::unique_ptr<lake::UnionReader>> TableHandle::OpenUnionRead(
    lake::UnionReadRequest request) const {
  request.table = name();
  return lake::OpenUnionRead(engine_, {tiering_->catalog(), tiering_->file_system()}, request);
}

}  // namespace oxbow::node
