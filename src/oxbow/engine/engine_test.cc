#include "oxbow/engine/engine.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include "oxbow/arrow/builder.h"

namespace oxbow::engine {
namespace {

namespace ipc = arrow::ipc;
using arrow::DataType;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("oxbow-engine-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    Reopen();
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen(EngineOptions options = {}) {
    engine_.reset();
    options.data_dir = dir_.string();
    auto opened = Engine::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    engine_ = std::move(opened).ValueOrDie();
  }
  // A one-bucket primary-key table of schema_, keyed by id.
  catalog::CreateTableRequest PrimaryKeyTable(const std::string& name) const {
    catalog::CreateTableRequest req;
    req.table.name = name;
    req.table.schema = schema_;
    req.table.buckets = 1;
    req.table.primary_key = {"id"};
    return req;
  }
  void CreateTable(const std::string& name, int buckets, bool keyed,
                   std::map<std::string, std::string> properties = {}) {
    catalog::CreateTableRequest req;
    req.table.properties = std::move(properties);
    req.table.name = name;
    req.table.schema = schema_;
    req.table.buckets = buckets;
    if (keyed) req.table.bucket_key = {"id"};
    ASSERT_TRUE(engine_->CreateTable(req).ok());
  }
  arrow::RecordBatchPtr MakeBatch(int64_t first_id, int64_t rows) {
    arrow::Int64Builder ids(DataType::Int64());
    arrow::BinaryBuilder names(DataType::String());
    for (int64_t i = 0; i < rows; ++i) {
      EXPECT_TRUE(ids.Append(first_id + i).ok());
      if (i % 5 == 0) {
        EXPECT_TRUE(names.AppendNull().ok());
      } else {
        EXPECT_TRUE(names.Append("name-" + std::to_string(first_id + i)).ok());
      }
    }
    return arrow::RecordBatch::Make(schema_, rows,
                                    {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie()})
        .ValueOrDie();
  }
  ipc::RawMessage Encode(const arrow::RecordBatch& batch) {
    auto encoded = ipc::EncodeRecordBatch(batch).ValueOrDie();
    return ipc::ParseMessage(encoded.metadata, encoded.BodyAsBuffer().ValueOrDie()).ValueOrDie();
  }
  // Reads a whole bucket and returns the ids, checking offsets are contiguous.
  std::vector<int64_t> ReadIds(const std::string& table, int32_t bucket) {
    ReadRequest req;
    req.table = table;
    req.bucket = bucket;
    auto cursor = engine_->OpenRead(req).ValueOrDie();
    std::vector<int64_t> ids;
    int64_t expected_offset = 0;
    while (true) {
      auto next = cursor->Next(std::chrono::steady_clock::now()).ValueOrDie();
      if (!next) break;
      EXPECT_EQ(next->base_offset, expected_offset);
      auto body = next->message.BodyAsBuffer().ValueOrDie();
      auto batch =
          ipc::DecodeRecordBatch(cursor->schema(), *next->message.metadata, body).ValueOrDie();
      EXPECT_EQ(next->next_offset - next->base_offset, batch->num_rows());
      expected_offset = next->next_offset;
      for (int64_t i = 0; i < batch->num_rows(); ++i) {
        ids.push_back(batch->column(0).Value<int64_t>(i));
      }
    }
    EXPECT_TRUE(cursor->done());
    return ids;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Engine> engine_;
  arrow::SchemaPtr schema_ = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int64(), false}, {"name", DataType::String(), true}});
};

TEST_F(EngineTest, KeyedTableSpreadsRowsAndKeepsEachOnce) {
  CreateTable("ns.keyed", 4, true);
  auto put = engine_->StartPut("ns.keyed", schema_).ValueOrDie();
  int64_t acked_rows = 0;
  for (int i = 0; i < 5; ++i) {
    auto ranges = put->Append(Encode(*MakeBatch(i * 100, 100))).ValueOrDie();
    for (const auto& r : ranges) acked_rows += r.rows;
  }
  EXPECT_EQ(acked_rows, 500);
  std::multiset<int64_t> all;
  int nonempty = 0;
  for (int b = 0; b < 4; ++b) {
    auto ids = ReadIds("ns.keyed", b);
    nonempty += !ids.empty();
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(nonempty, 4);
  ASSERT_EQ(all.size(), 500u);
  for (int64_t i = 0; i < 500; ++i) EXPECT_EQ(all.count(i), 1u) << i;
  // The same key always lands in the same bucket.
  auto status = engine_->DescribeTable("ns.keyed").ValueOrDie();
  put = engine_->StartPut("ns.keyed", schema_).ValueOrDie();
  auto again = put->Append(Encode(*MakeBatch(7, 1))).ValueOrDie();
  ASSERT_EQ(again.size(), 1u);
  auto ids = ReadIds("ns.keyed", again[0].bucket);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 7), 2);
}

TEST_F(EngineTest, PutToBucketPinsEveryBatchToThatBucket) {
  CreateTable("ns.pinned", 3, false);
  auto put = engine_->StartPutToBucket("ns.pinned", schema_, 2).ValueOrDie();
  for (int i = 0; i < 3; ++i) {
    auto ranges = put->Append(*MakeBatch(i * 10, 10)).ValueOrDie();
    ASSERT_EQ(ranges.size(), 1u);
    EXPECT_EQ(ranges[0].bucket, 2);
    EXPECT_EQ(ranges[0].base_offset, i * 10);
  }
  EXPECT_EQ(ReadIds("ns.pinned", 2).size(), 30u);
  EXPECT_TRUE(ReadIds("ns.pinned", 0).empty());
  EXPECT_EQ(engine_->StartPutToBucket("ns.pinned", schema_, 3).status().message(),
            "bucket 3 does not exist: 'ns.pinned' has 3 buckets");
  CreateTable("ns.keyed", 2, true);
  EXPECT_EQ(engine_->StartPutToBucket("ns.keyed", schema_, 0).status().message(),
            "table 'ns.keyed' chooses each row's bucket by its bucket key");
}

TEST_F(EngineTest, ALogTableGainsEmptyBucketsAndKeepsItsRows) {
  CreateTable("ns.growing", 2, false);
  auto put = engine_->StartPutToBucket("ns.growing", schema_, 1).ValueOrDie();
  ASSERT_TRUE(put->Append(*MakeBatch(0, 10)).ok());
  put.reset();
  const catalog::TableDescriptor before = engine_->DescribeTable("ns.growing")->table;
  catalog::TableDescriptor after = before;
  after.buckets = 4;
  ASSERT_TRUE(engine_->AlterTable(before, after).ok());
  auto added = engine_->StartPutToBucket("ns.growing", schema_, 3).ValueOrDie();
  auto ranges = added->Append(*MakeBatch(10, 5)).ValueOrDie();
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].base_offset, 0);
  added.reset();
  Reopen();
  const auto status = engine_->DescribeTable("ns.growing").ValueOrDie();
  ASSERT_EQ(status.buckets.size(), 4u);
  EXPECT_EQ(ReadIds("ns.growing", 1).size(), 10u);
  EXPECT_EQ(ReadIds("ns.growing", 3).size(), 5u);
  EXPECT_TRUE(ReadIds("ns.growing", 2).empty());
}

TEST_F(EngineTest, SurvivesReopenAndProjects) {
  CreateTable("ns.log", 1, false);
  auto put = engine_->StartPut("ns.log", schema_).ValueOrDie();
  auto first = put->Append(Encode(*MakeBatch(0, 10))).ValueOrDie();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].base_offset, 0);
  auto second = put->Append(Encode(*MakeBatch(10, 10))).ValueOrDie();
  EXPECT_EQ(second[0].base_offset, 10);
  put.reset();
  Reopen();
  EXPECT_EQ(ReadIds("ns.log", 0).size(), 20u);

  ReadRequest req;
  req.table = "ns.log";
  req.columns = std::vector<std::string>{"name"};
  req.from.kind = StartPosition::Kind::kOffset;
  req.from.offset = 10;
  auto cursor = engine_->OpenRead(req).ValueOrDie();
  EXPECT_EQ(cursor->schema()->ToString(), "name: string");
  auto next = cursor->Next(std::chrono::steady_clock::now()).ValueOrDie();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->base_offset, 10);
  auto batch = ipc::DecodeRecordBatch(cursor->schema(), *next->message.metadata,
                                      next->message.BodyAsBuffer().ValueOrDie())
                   .ValueOrDie();
  EXPECT_EQ(batch->column(0).GetView(1), "name-11");
  EXPECT_FALSE(cursor->Next(std::chrono::steady_clock::now()).ValueOrDie().has_value());
}

TEST_F(EngineTest, ErrorsNameTheProblem) {
  CreateTable("ns.t", 2, false);
  EXPECT_EQ(engine_->StartPut("ns.nope", schema_).status().message(),
            "table 'ns.nope' does not exist");
  auto wrong = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int32(), false}, {"name", DataType::String(), true}});
  EXPECT_EQ(engine_->StartPut("ns.t", wrong).status().message(),
            "schema mismatch for table 'ns.t': field 'id' has type int32 but the table has int64");

  ReadRequest req;
  req.table = "ns.t";
  req.bucket = 2;
  EXPECT_EQ(engine_->OpenRead(req).status().message(),
            "bucket 2 does not exist: 'ns.t' has 2 buckets (0-1)");
  req.bucket = 0;
  req.from.kind = StartPosition::Kind::kOffset;
  req.from.offset = 5;
  EXPECT_EQ(engine_->OpenRead(req).status().message(),
            "offset 5 is out of range for bucket 0 of 'ns.t': valid offsets are [0, 0]");
  req.from.offset = 0;
  req.columns = std::vector<std::string>{"nope"};
  EXPECT_EQ(engine_->OpenRead(req).status().message(),
            "unknown column 'nope' in table 'ns.t' (columns: id, name)");

  // A null in a non-nullable field writes nothing.
  auto nullable = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int64(), true}, {"name", DataType::String(), true}});
  arrow::Int64Builder ids(DataType::Int64());
  ASSERT_TRUE(ids.AppendNull().ok());
  arrow::BinaryBuilder names(DataType::String());
  ASSERT_TRUE(names.Append("x").ok());
  auto bad = arrow::RecordBatch::Make(nullable, 1,
                                      {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie()})
                 .ValueOrDie();
  auto put = engine_->StartPut("ns.t", nullable).ValueOrDie();
  EXPECT_EQ(put->Append(Encode(*bad)).status().message(),
            "field 'id' of table 'ns.t' is not nullable but the batch has 1 nulls");
  EXPECT_EQ(engine_->DescribeTable("ns.t")->buckets[0].next_offset, 0);
}

TEST_F(EngineTest, InvalidUtf8WritesNothingAndNamesFieldAndRow) {
  CreateTable("ns.t", 1, false);
  auto put = engine_->StartPut("ns.t", schema_).ValueOrDie();
  ASSERT_TRUE(put->Append(Encode(*MakeBatch(0, 3))).ok());
  arrow::Int64Builder ids(DataType::Int64());
  arrow::BinaryBuilder names(DataType::String());
  for (const std::string name : {"caf\u00e9", "\U0001F680", "bad\xed\xa0\x80"}) {
    ASSERT_TRUE(ids.Append(7).ok());
    ASSERT_TRUE(names.Append(name).ok());
  }
  auto bad =
      arrow::RecordBatch::Make(schema_, 3, {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie()})
          .ValueOrDie();
  EXPECT_EQ(put->Append(Encode(*bad)).status().message(),
            "field 'name' of table 'ns.t': row 2 is not valid UTF-8 (ill-formed at byte 3 of the "
            "value: ed a0 80)");
  EXPECT_EQ(ReadIds("ns.t", 0), (std::vector<int64_t>{0, 1, 2}));
}

TEST_F(EngineTest, BatchCheckRefusesABatchAndWritesNothing) {
  EngineOptions options;
  options.make_batch_check = [](const catalog::TableDescriptor& table) -> BatchCheck {
    if (table.name != "ns.checked") return {};
    return [](const arrow::RecordBatch& batch) {
      return batch.num_rows() > 3 ? Status::Invalid("more than 3 rows") : Status::OK();
    };
  };
  Reopen(options);
  for (const char* name : {"ns.checked", "ns.free"}) {
    CreateTable(name, 1, false);
    auto put = engine_->StartPut(name, schema_).ValueOrDie();
    ASSERT_TRUE(put->Append(Encode(*MakeBatch(0, 3))).ok());
    Status st = put->Append(Encode(*MakeBatch(3, 4))).status();
    if (std::string(name) == "ns.free") {
      EXPECT_TRUE(st.ok()) << st.ToString();
      continue;
    }
    EXPECT_EQ(st.message(), "more than 3 rows");
    EXPECT_EQ(engine_->DescribeTable(name)->buckets[0].next_offset, 3);
  }
}

TEST_F(EngineTest, RetentionRunsInTheBackground) {
  EngineOptions options;
  options.log.segment_bytes = 4096;
  options.log.retention_ms = 1000;  // segments are younger than this when they roll
  options.retention_check_ms = 10;
  Reopen(options);
  CreateTable("ns.short", 1, false, {{"lake.enabled", "false"}});
  auto put = engine_->StartPut("ns.short", schema_).ValueOrDie();
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(put->Append(Encode(*MakeBatch(i * 50, 50))).ok());
  ASSERT_EQ(engine_->DescribeTable("ns.short")->buckets[0].earliest_offset, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t earliest = 0;
  while (earliest == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    earliest = engine_->DescribeTable("ns.short")->buckets[0].earliest_offset;
  }
  EXPECT_GT(earliest, 0);
  EXPECT_EQ(engine_->DescribeTable("ns.short")->buckets[0].next_offset, 2000);
  ReadRequest req;
  req.table = "ns.short";
  req.from.kind = StartPosition::Kind::kOffset;
  req.from.offset = 0;
  EXPECT_TRUE(engine_->OpenRead(req).status().IsOutOfRange());
}

TEST_F(EngineTest, ATableRetentionPropertyOverridesTheEngines) {
  EngineOptions options;
  options.log.segment_bytes = 4096;
  options.log.retention_bytes = 8192;
  options.retention_check_ms = 10;
  Reopen(options);
  const std::map<std::string, std::string> no_lake = {{"lake.enabled", "false"}};
  auto with = [&](std::map<std::string, std::string> properties) {
    properties.insert(no_lake.begin(), no_lake.end());
    return properties;
  };
  CreateTable("ns.default", 1, false, no_lake);
  CreateTable("ns.kept", 1, false, with({{kRetentionBytesProperty, "none"}}));
  CreateTable("ns.short", 1, false, with({{kRetentionProperty, "1ms"}}));
  for (const char* name : {"ns.default", "ns.kept", "ns.short"}) {
    auto put = engine_->StartPut(name, schema_).ValueOrDie();
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(put->Append(Encode(*MakeBatch(i * 50, 50))).ok());
  }
  auto earliest = [&](const char* name) {
    return engine_->DescribeTable(name)->buckets[0].earliest_offset;
  };
  auto segments = [&](const char* name) {
    return engine_->DescribeTable(name)->buckets[0].segments;
  };
  // A pass may run while ns.short is still being written: wait for the pass that finds every
  // sealed segment older than 1 ms, leaving only the active one.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((earliest("ns.default") == 0 || segments("ns.short") > 1) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(earliest("ns.default"), 0);
  EXPECT_EQ(earliest("ns.kept"), 0) << "\"none\" keeps every segment";
  // Age removes every sealed segment, more than the engine's byte limit does.
  EXPECT_GT(earliest("ns.short"), earliest("ns.default"));

  // A table's own segment size: 1 MiB segments hold what 4 KiB segments split.
  CreateTable("ns.big_segments", 1, false, with({{kSegmentBytesProperty, "1048576"}}));
  auto put = engine_->StartPut("ns.big_segments", schema_).ValueOrDie();
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(put->Append(Encode(*MakeBatch(i * 50, 50))).ok());
  EXPECT_EQ(engine_->DescribeTable("ns.big_segments")->buckets[0].segments, 1);
  EXPECT_GT(engine_->DescribeTable("ns.kept")->buckets[0].segments, 1);

  for (const auto& [key, value] :
       std::map<std::string, std::string>{{kRetentionProperty, "soon"},
                                          {kRetentionBytesProperty, "-5"},
                                          {kSegmentBytesProperty, "12"}}) {
    catalog::CreateTableRequest request;
    request.table.name = "ns.bad";
    request.table.schema = schema_;
    request.table.properties = {{key, value}};
    Status st = engine_->CreateTable(request).status();
    EXPECT_TRUE(st.IsInvalid()) << st.ToString();
    EXPECT_NE(st.message().find(key), std::string::npos) << st.ToString();
  }
}

TEST_F(EngineTest, HeldTablesKeepEverythingUntilTheHolderSetsAFloor) {
  EngineOptions options;
  options.log.segment_bytes = 4096;
  options.log.retention_bytes = 4096;
  options.retention_check_ms = 10;
  options.holds_retention = [](const catalog::TableDescriptor& t) { return t.name == "ns.lake"; };
  Reopen(options);
  CreateTable("ns.lake", 1, false);
  auto put = engine_->StartPut("ns.lake", schema_).ValueOrDie();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(put->Append(Encode(*MakeBatch(i * 50, 50))).ok());
  put.reset();
  Reopen(options);  // retention at open must not delete what the holder has not seen
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(engine_->DescribeTable("ns.lake")->buckets[0].earliest_offset, 0);
  ASSERT_TRUE(engine_->SetRetentionFloor("ns.lake", 0, 500).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t earliest = 0;
  while (earliest == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    earliest = engine_->DescribeTable("ns.lake")->buckets[0].earliest_offset;
  }
  EXPECT_GT(earliest, 0);
  EXPECT_LE(earliest, 500);
}

TEST_F(EngineTest, OneEnginePerDataDir) {
  EngineOptions options;
  options.data_dir = dir_.string();
  auto second = Engine::Open(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(), "data dir '" + dir_.string() +
                                           "' is in use by another oxbowd (" + dir_.string() +
                                           "/LOCK is locked)");
}

TEST_F(EngineTest, DropRemovesDataAndName) {
  CreateTable("ns.gone", 1, false);
  auto put = engine_->StartPut("ns.gone", schema_).ValueOrDie();
  ASSERT_TRUE(put->Append(Encode(*MakeBatch(0, 3))).ok());
  put.reset();
  ASSERT_TRUE(engine_->DropTable("ns.gone").ok());
  EXPECT_TRUE(engine_->DescribeTable("ns.gone").status().IsNotFound());
  Reopen();
  EXPECT_TRUE(engine_->ListTables().empty());
  CreateTable("ns.gone", 1, false);
  EXPECT_TRUE(ReadIds("ns.gone", 0).empty());
}

// Every row of a read of `columns` (all when empty) of bucket 0, as text, one string per row.
std::vector<std::string> ReadRows(Engine& engine, const std::string& table,
                                  std::optional<std::vector<std::string>> columns = {},
                                  std::optional<int32_t> schema_id = {}) {
  ReadRequest req;
  req.table = table;
  req.columns = std::move(columns);
  req.schema_id = schema_id;
  auto cursor = engine.OpenRead(req).ValueOrDie();
  std::vector<std::string> rows;
  while (true) {
    auto next = cursor->Next(std::chrono::steady_clock::now()).ValueOrDie();
    if (!next) break;
    auto body = next->message.BodyAsBuffer().ValueOrDie();
    auto batch =
        ipc::DecodeRecordBatch(cursor->schema(), *next->message.metadata, body).ValueOrDie();
    EXPECT_TRUE(batch->schema()->Equals(*cursor->schema()));
    for (int64_t r = 0; r < batch->num_rows(); ++r) {
      std::string row;
      for (int c = 0; c < batch->num_columns(); ++c) {
        const arrow::Array& col = batch->column(c);
        row += c ? "," : "";
        if (col.IsNull(r)) {
          row += "null";
        } else if (col.type().id() == arrow::TypeId::kInt64) {
          row += std::to_string(col.Value<int64_t>(r));
        } else if (col.type().id() == arrow::TypeId::kInt32) {
          row += std::to_string(col.Value<int32_t>(r));
        } else {
          row += std::string(col.GetView(r));
        }
      }
      rows.push_back(row);
    }
  }
  return rows;
}

TEST_F(EngineTest, AlterConvertsEarlierBatchesAndAcceptsEarlierWriters) {
  CreateTable("ns.evolving", 1, false);
  auto v0_put = engine_->StartPut("ns.evolving", schema_).ValueOrDie();
  ASSERT_TRUE(v0_put->Append(Encode(*MakeBatch(0, 2))).ok());  // rows 0 (name null), 1

  auto before = engine_->DescribeTable("ns.evolving").ValueOrDie().table;
  auto req = catalog::ParseAlterTable(R"({"table":"ns.evolving","changes":[
      {"op":"add_column","name":"score","type":"int32","after":"id"},
      {"op":"rename_column","name":"name","new_name":"title"}]})")
                 .ValueOrDie();
  auto after = catalog::ApplyAlter(before, req.changes).ValueOrDie();
  ASSERT_TRUE(engine_->AlterTable(before, after).ok());
  // A second alter from the stale descriptor is refused.
  EXPECT_FALSE(engine_->AlterTable(before, after).ok());
  // The stream opened before the alter has ended with the table it wrote to.
  EXPECT_FALSE(v0_put->Append(Encode(*MakeBatch(50, 1))).ok());

  // A writer of the new schema, and one of the previous version.
  arrow::Int64Builder ids(DataType::Int64());
  arrow::Int32Builder scores(DataType::Int32());
  arrow::BinaryBuilder titles(DataType::String());
  ASSERT_TRUE(ids.Append(10).ok() && scores.Append(7).ok() && titles.Append("ten").ok());
  auto v1 = arrow::RecordBatch::Make(after.schema, 1,
                                     {ids.Finish().ValueOrDie(), scores.Finish().ValueOrDie(),
                                      titles.Finish().ValueOrDie()})
                .ValueOrDie();
  ASSERT_TRUE(engine_->StartPut("ns.evolving", after.schema).ValueOrDie()->Append(*v1).ok());
  ASSERT_TRUE(engine_->StartPut("ns.evolving", schema_)
                  .ValueOrDie()
                  ->Append(Encode(*MakeBatch(20, 2)))
                  .ok());
  auto wrong = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{{"id", DataType::Int64(), false}, {"score", DataType::Int64()}});
  EXPECT_EQ(engine_->StartPut("ns.evolving", wrong).status().message(),
            "schema mismatch for table 'ns.evolving': field 'score' has type int64 but the table "
            "has int32");

  const std::vector<std::string> expected = {"0,null,null", "1,null,name-1", "10,7,ten",
                                             "20,null,null", "21,null,name-21"};
  EXPECT_EQ(ReadRows(*engine_, "ns.evolving"), expected);
  EXPECT_EQ(
      ReadRows(*engine_, "ns.evolving", std::vector<std::string>{"title", "score"}),
      (std::vector<std::string>{"null,null", "name-1,null", "ten,7", "null,null", "name-21,null"}));
  Reopen();
  EXPECT_EQ(ReadRows(*engine_, "ns.evolving"), expected);

  // Widening and a drop: earlier batches are cast, the dropped column is gone.
  before = engine_->DescribeTable("ns.evolving").ValueOrDie().table;
  req = catalog::ParseAlterTable(R"({"table":"ns.evolving","changes":[
      {"op":"widen_type","name":"score","type":"int64"},{"op":"drop_column","name":"title"}]})")
            .ValueOrDie();
  ASSERT_TRUE(
      engine_->AlterTable(before, catalog::ApplyAlter(before, req.changes).ValueOrDie()).ok());
  EXPECT_EQ(ReadRows(*engine_, "ns.evolving"),
            (std::vector<std::string>{"0,null", "1,null", "10,7", "20,null", "21,null"}));

  // Reads in an earlier version: its columns, names and types, by field id; a batch written
  // after a column was dropped has it null, a widened value is narrowed back.
  after = engine_->DescribeTable("ns.evolving").ValueOrDie().table;
  arrow::Int64Builder ids2(DataType::Int64());
  arrow::Int64Builder scores2(DataType::Int64());
  ASSERT_TRUE(ids2.Append(30).ok() && scores2.Append(8).ok());
  auto v2 = arrow::RecordBatch::Make(after.schema, 1,
                                     {ids2.Finish().ValueOrDie(), scores2.Finish().ValueOrDie()})
                .ValueOrDie();
  ASSERT_TRUE(engine_->StartPut("ns.evolving", after.schema).ValueOrDie()->Append(*v2).ok());
  EXPECT_EQ(ReadRows(*engine_, "ns.evolving", {}, 0),
            (std::vector<std::string>{"0,null", "1,name-1", "10,ten", "20,null", "21,name-21",
                                      "30,null"}));
  EXPECT_EQ(ReadRows(*engine_, "ns.evolving", std::vector<std::string>{"title", "score"}, 1),
            (std::vector<std::string>{"null,null", "name-1,null", "ten,7", "null,null",
                                      "name-21,null", "null,8"}));
  ReadRequest unknown;
  unknown.table = "ns.evolving";
  unknown.schema_id = 9;
  EXPECT_EQ(engine_->OpenRead(unknown).status().message(),
            "table 'ns.evolving' has no schema version 9 (its versions: 0, 1, 2)");
  unknown.schema_id = 0;
  unknown.columns = std::vector<std::string>{"score"};
  EXPECT_TRUE(engine_->OpenRead(unknown).status().IsInvalid());  // not a column of version 0
}

// A lookup of many keys reads them in pieces on several threads; every answer still lines up
// with its key, in the order asked, and missing keys are left out.
TEST_F(EngineTest, ALargeLookupAnswersEveryKeyInOrder) {
  catalog::CreateTableRequest req = PrimaryKeyTable("ns.pk");
  req.table.buckets = 4;
  ASSERT_TRUE(engine_->CreateTable(req).ok());
  auto table = engine_->GetTable("ns.pk").ValueOrDie();
  auto put = table->StartPut(schema_, PutOp::kUpsert).ValueOrDie();
  ASSERT_TRUE(put->Append(*MakeBatch(0, 2000)).ok());
  // Keys 3000, 2997, ..., 3: every third of them (ids 2000 and up) is missing.
  arrow::Int64Builder ids(DataType::Int64());
  std::vector<int64_t> expected;
  for (int64_t id = 3000; id > 0; id -= 3) {
    ASSERT_TRUE(ids.Append(id).ok());
    if (id < 2000) expected.push_back(id);
  }
  LookupRequest request;
  request.keys =
      arrow::RecordBatch::Make(std::make_shared<const arrow::Schema>(
                                   std::vector<arrow::Field>{{"id", DataType::Int64(), false}}),
                               1000, {ids.Finish().ValueOrDie()})
          .ValueOrDie();
  auto found = table->Lookup(request);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ((*found)->num_rows(), static_cast<int64_t>(expected.size()));
  const auto& id_column = (*found)->column(0);
  const auto& name_column = (*found)->column(1);
  for (int64_t r = 0; r < (*found)->num_rows(); ++r) {
    const int64_t id = id_column.Value<int64_t>(r);
    ASSERT_EQ(id, expected[static_cast<size_t>(r)]) << "row " << r;
    if (id % 5 != 0) {
      EXPECT_EQ(name_column.GetView(r), "name-" + std::to_string(id));
    }
  }
}

// Under --flush interval a primary-key put is acknowledged once its changelog is written, and
// seen by lookups at once; the store's files never get ahead of the durable changelog.
TEST_F(EngineTest, UnderIntervalFlushPrimaryKeyPutsDoNotWaitForAnFsync) {
  EngineOptions options;
  options.log.flush_policy = log::FlushPolicy::kInterval;
  options.log.flush_interval_ms = 3'600'000;  // no fsync by the clock during the test
  Reopen(options);
  const catalog::CreateTableRequest req = PrimaryKeyTable("ns.pk");
  ASSERT_TRUE(engine_->CreateTable(req).ok());
  auto table = engine_->GetTable("ns.pk").ValueOrDie();
  log::BucketLog& log = *table->logs()[0];
  auto put = table->StartPut(schema_, PutOp::kUpsert).ValueOrDie();
  ASSERT_TRUE(put->Append(*MakeBatch(0, 10)).ok());
  EXPECT_LT(log.durable_offset(), log.next_offset());
  LookupRequest request;
  request.keys =
      arrow::RecordBatch::Make(std::make_shared<const arrow::Schema>(
                                   std::vector<arrow::Field>{{"id", DataType::Int64(), false}}),
                               10, {MakeBatch(0, 10)->column(0)})
          .ValueOrDie();
  auto found = table->Lookup(request);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ((*found)->num_rows(), 10);
  // A checkpoint writes the rows to files: the changelog is made durable first.
  ASSERT_TRUE(engine_->CheckpointKeyValueStore().ok());
  EXPECT_EQ(log.durable_offset(), log.next_offset());
}

// Cluster mode: a primary-key leader keeps rows above the high watermark out of its store
// (invisible to lookups) but reads them for later puts; they land once committed.
TEST_F(EngineTest, ReplicatedPrimaryKeyRowsWaitForTheHighWatermark) {
  EngineOptions options;
  options.replicated = true;
  Reopen(options);
  const catalog::CreateTableRequest req = PrimaryKeyTable("ns.pk");
  ASSERT_TRUE(engine_->CreateTable(req).ok());
  auto table = engine_->GetTable("ns.pk").ValueOrDie();
  log::BucketLog& log = *table->logs()[0];
  log.SetHighWatermark(0);  // as a replica does
  ASSERT_TRUE(table->PrepareToLead(0).ok());
  auto lookup = [&](int64_t first, int64_t rows) {
    LookupRequest request;
    request.keys =
        arrow::RecordBatch::Make(std::make_shared<const arrow::Schema>(
                                     std::vector<arrow::Field>{{"id", DataType::Int64(), false}}),
                                 rows, {MakeBatch(first, rows)->column(0)})
            .ValueOrDie();
    auto found = table->Lookup(request);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    return found.ok() ? (*found)->num_rows() : -1;
  };
  auto put = table->StartPut(schema_, PutOp::kUpsert).ValueOrDie();
  ASSERT_TRUE(put->Append(*MakeBatch(0, 10)).ok());
  EXPECT_EQ(lookup(0, 10), 0);  // above the high watermark: not committed, not visible
  ASSERT_TRUE(put->Append(*MakeBatch(5, 10)).ok());
  log.SetHighWatermark(log.next_offset());
  EXPECT_EQ(lookup(0, 20), 15);
  // The second put found ids 5..9 among the pending rows: it updated them (-U/+U), not inserted.
  ReadRequest read;
  read.table = "ns.pk";
  auto cursor = table->OpenRead(read).ValueOrDie();
  std::map<std::string, int> changes;
  while (auto next = cursor->NextDecoded(std::chrono::steady_clock::now()).ValueOrDie()) {
    const arrow::Array& change = next->batch->column(2);
    for (int64_t r = 0; r < next->batch->num_rows(); ++r) ++changes[std::string(change.GetView(r))];
  }
  EXPECT_EQ(changes, (std::map<std::string, int>{{"+I", 15}, {"+U", 5}, {"-U", 5}}));
  // A follower's rows follow the committed changelog only.
  ASSERT_TRUE(table->ApplyReplicated(0).ok());
  EXPECT_EQ(lookup(0, 20), 15);
}

// A bucket's rows uploaded as a KV snapshot come back in another data dir, whose changelog then
// starts at the snapshot's offset.
TEST_F(EngineTest, AKvSnapshotRestoresABucketElsewhere) {
  EngineOptions options;
  options.kv_snapshot_fs = PosixFileSystem::Default();
  options.kv_snapshot_root = (dir_ / "snapshots").string();
  Reopen(options);
  const catalog::CreateTableRequest req = PrimaryKeyTable("ns.pk");
  ASSERT_TRUE(engine_->CreateTable(req).ok());
  auto table = engine_->GetTable("ns.pk").ValueOrDie();
  auto put = table->StartPut(schema_, PutOp::kUpsert).ValueOrDie();
  ASSERT_TRUE(put->Append(*MakeBatch(0, 100)).ok());
  ASSERT_TRUE(put->Append(*MakeBatch(50, 100)).ok());
  auto uploaded = table->UploadKvSnapshot(0, 0);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status().ToString();
  ASSERT_TRUE(uploaded->has_value());
  const KvSnapshotRef snapshot = **uploaded;
  EXPECT_EQ(snapshot.offset, table->logs()[0]->next_offset());
  EXPECT_FALSE(table->UploadKvSnapshot(0, snapshot.offset)->has_value());  // nothing moved

  options.data_dir = (dir_ / "elsewhere").string();
  auto other = Engine::Open(options).ValueOrDie();
  ASSERT_TRUE(other->CreateTable(req).ok());
  auto copy = other->GetTable("ns.pk").ValueOrDie();
  auto restored = copy->RestoreKvSnapshot(0, snapshot);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_TRUE(*restored);
  EXPECT_EQ(copy->logs()[0]->earliest_offset(), snapshot.offset);
  EXPECT_EQ(copy->logs()[0]->next_offset(), snapshot.offset);
  EXPECT_FALSE(*copy->RestoreKvSnapshot(0, snapshot));  // its changelog is there already
  SnapshotRequest all;
  all.table = "ns.pk";
  auto reader = copy->OpenSnapshot(all).ValueOrDie();
  EXPECT_EQ(reader->offsets()[0].next_offset, snapshot.offset);
  int64_t rows = 0;
  while (auto batch = reader->Next().ValueOrDie()) rows += batch->num_rows();
  EXPECT_EQ(rows, 150);
}

// A replica moved away leaves nothing behind: the bucket's changelog restarts empty at 0 and its
// rows are gone; the table takes rows again.
TEST_F(EngineTest, DroppingABucketsDataEmptiesItsLogAndRows) {
  ASSERT_TRUE(engine_->CreateTable(PrimaryKeyTable("ns.pk")).ok());
  auto table = engine_->GetTable("ns.pk").ValueOrDie();
  auto put = table->StartPut(schema_, PutOp::kUpsert).ValueOrDie();
  ASSERT_TRUE(put->Append(*MakeBatch(0, 100)).ok());
  auto count = [&] {
    SnapshotRequest all;
    all.table = "ns.pk";
    auto reader = table->OpenSnapshot(all).ValueOrDie();
    int64_t rows = 0;
    while (auto batch = reader->Next().ValueOrDie()) rows += batch->num_rows();
    return rows;
  };
  EXPECT_EQ(count(), 100);
  ASSERT_TRUE(table->DropBucketData(0).ok());
  EXPECT_EQ(table->logs()[0]->next_offset(), 0);
  EXPECT_EQ(table->logs()[0]->size_bytes(), 0);
  EXPECT_EQ(count(), 0);
  ASSERT_TRUE(put->Append(*MakeBatch(500, 10)).ok());
  EXPECT_EQ(count(), 10);
}

// A lost data dir rebuilt from the warehouse's copies: the catalog, a log table's cold segments,
// a primary-key table's newest KV snapshot; a table whose lake outruns its rows is left out.
TEST_F(EngineTest, ALostDataDirIsRebuiltFromTheWarehouse) {
  const std::filesystem::path warehouse = dir_ / "warehouse";
  EngineOptions options;
  options.log.segment_bytes = 4096;
  options.cold_fs = PosixFileSystem::Default();
  options.cold_root = (warehouse / "_log").string();
  options.cold_check_ms = 0;
  options.kv_snapshot_fs = PosixFileSystem::Default();
  options.kv_snapshot_root = (warehouse / "_kv").string();
  options.catalog_copy = {PosixFileSystem::Default(),
                          (warehouse / "_catalog" / "catalog.json").string()};
  Reopen(options);
  CreateTable("ns.cold", 1, false, {{kLocalRetentionProperty, "1ms"}});
  CreateTable("ns.empty", 1, false);
  ASSERT_TRUE(engine_->CreateTable(PrimaryKeyTable("ns.pk")).ok());
  auto put = engine_->StartPut("ns.cold", schema_).ValueOrDie();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(put->Append(*MakeBatch(i * 50, 50)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto cold = engine_->GetTable("ns.cold").ValueOrDie();
  ASSERT_GT(cold->logs()[0]->OffloadColdSegments().ValueOrDie(), 0);
  EXPECT_EQ(cold->logs()[0]->segment_count(), 1);  // the active one: the rest went cold
  auto pk = engine_->GetTable("ns.pk").ValueOrDie();
  auto upsert = pk->StartPut(schema_, PutOp::kUpsert).ValueOrDie();
  ASSERT_TRUE(upsert->Append(*MakeBatch(0, 100)).ok());
  ASSERT_TRUE(upsert->Append(*MakeBatch(50, 100)).ok());
  const KvSnapshotRef snapshot = *pk->UploadKvSnapshot(0, 0).ValueOrDie();
  ASSERT_TRUE(upsert->Append(*MakeBatch(500, 10)).ok());  // after the snapshot: lost
  put.reset();
  upsert.reset();
  cold.reset();
  pk.reset();
  engine_.reset();

  options.data_dir = (dir_ / "rebuilt").string();
  auto recovery = RecoverDataDir(options, {});
  ASSERT_TRUE(recovery.ok()) << recovery.status().ToString();
  EXPECT_TRUE(recovery->left_out.empty());
  std::map<std::string, std::vector<int64_t>> next;
  for (const auto& t : recovery->tables) next[t.name] = t.next_offsets;
  // The cold table goes on after its cold segments: every batch but those of the active segment.
  const int64_t cold_end = next["ns.cold"].at(0);
  EXPECT_GT(cold_end, 0);
  EXPECT_LT(cold_end, 1000);
  EXPECT_EQ(cold_end % 50, 0);
  EXPECT_EQ(next, (std::map<std::string, std::vector<int64_t>>{
                      {"ns.cold", {cold_end}}, {"ns.empty", {0}}, {"ns.pk", {snapshot.offset}}}));
  // A rebuilt data dir holds a catalog: it is never rebuilt over.
  EXPECT_EQ(RecoverDataDir(options, {}).status().code(), StatusCode::kInvalid);

  auto rebuilt = Engine::Open(options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  engine_ = std::move(rebuilt).ValueOrDie();
  std::vector<int64_t> ids(static_cast<size_t>(cold_end));
  std::iota(ids.begin(), ids.end(), 0);
  EXPECT_EQ(ReadIds("ns.cold", 0), ids);
  SnapshotRequest all;
  all.table = "ns.pk";
  int64_t rows = 0;
  {
    auto reader = engine_->OpenSnapshot(all).ValueOrDie();
    while (auto batch = reader->Next().ValueOrDie()) rows += batch->num_rows();
  }
  EXPECT_EQ(rows, 150);
  engine_.reset();

  // A lake holding more of ns.pk than its snapshot: the table is left out, the others come back.
  options.data_dir = (dir_ / "without-pk").string();
  RecoveryLake lake;
  lake.held_offsets = [&](const catalog::TableDescriptor& t) -> Result<std::vector<int64_t>> {
    return std::vector<int64_t>{t.name == "ns.pk" ? snapshot.offset + 10 : 0};
  };
  recovery = RecoverDataDir(options, lake);
  ASSERT_TRUE(recovery.ok()) << recovery.status().ToString();
  ASSERT_EQ(recovery->left_out.size(), 1u);
  EXPECT_NE(recovery->left_out[0].find("'ns.pk' bucket 0: its lake holds offsets up to"),
            std::string::npos)
      << recovery->left_out[0];
  EXPECT_EQ(recovery->tables.size(), 2u);
  // An unfinished rebuild leaves its marker, and the data dir is refused until one finishes.
  std::ofstream(dir_ / "without-pk" / "RECOVERING") << "x";
  EXPECT_NE(Engine::Open(options).status().message().find("half rebuilt"), std::string::npos);
  ASSERT_TRUE(RecoverDataDir(options, lake).ok());
  ASSERT_TRUE(Engine::Open(options).ok());
}

}  // namespace
}  // namespace oxbow::engine
