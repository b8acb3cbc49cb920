#include "oxbow/node/node.h"

namespace oxbow::node {

Result<std::unique_ptr<Node>> Node::Open(NodeOptions options) {
  std::unique_ptr<Node> node(new Node());
  // The lake must see every row before retention deletes it, and refuses what it cannot hold.
  options.engine.holds_retention = lake::IsLakeEnabled;
  options.engine.make_batch_check = lake::MakeBatchCheck;
  ASSIGN_OR_RAISE(node->engine_, engine::Engine::Open(std::move(options.engine)));
  auto tiering = lake::TieringService::Start(node->engine_.get(), std::move(options.lake));
  if (!tiering.ok()) {
    (void)node->engine_->Close();
    return tiering.status();
  }
  node->tiering_ = std::move(tiering).ValueOrDie();
  return node;
}

Node::~Node() { (void)Close(); }

Result<catalog::TableDescriptor> Node::CreateTable(const catalog::CreateTableRequest& request) {
  RETURN_NOT_OK(lake::CheckTableIsTierable(request.table));
  return engine_->CreateTable(request);
}

Status Node::DropTable(const std::string& name) {
  ASSIGN_OR_RAISE(auto table, engine_->DescribeTable(name));
  RETURN_NOT_OK(engine_->DropTable(name));
  return tiering_->DropTable(table.table);
}

std::vector<catalog::TableDescriptor> Node::ListTables() const { return engine_->ListTables(); }

Result<TableDescription> Node::DescribeTable(const std::string& name) const {
  TableDescription description;
  ASSIGN_OR_RAISE(description.table, engine_->DescribeTable(name));
  ASSIGN_OR_RAISE(description.lake, tiering_->Describe(name));
  return description;
}

Result<std::unique_ptr<engine::PutSession>> Node::StartPut(const std::string& table,
                                                           const arrow::SchemaPtr& client_schema) {
  return engine_->StartPut(table, client_schema);
}

Result<std::unique_ptr<engine::PutSession>> Node::StartPutToBucket(
    const std::string& table, const arrow::SchemaPtr& client_schema, int32_t bucket) {
  return engine_->StartPutToBucket(table, client_schema, bucket);
}

Result<std::unique_ptr<engine::ReadCursor>> Node::OpenRead(const engine::ReadRequest& request) {
  return engine_->OpenRead(request);
}

Status Node::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  if (tiering_) tiering_->Stop();
  return engine_ ? engine_->Close() : Status::OK();
}

}  // namespace oxbow::node
