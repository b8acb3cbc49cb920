#include "oxbow/lake/lake.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "oxbow/arrow/builder.h"
#include "oxbow/common/fault_injection_file_system.h"
#include "oxbow/iceberg/table.h"
#include "oxbow/lake/lake_read.h"
#include "oxbow/lake/lake_schema_internal.h"
#include "oxbow/parquet/reader.h"
#include "oxbow/parquet/verify.h"

namespace oxbow::lake {
namespace {

namespace ipc = arrow::ipc;
using arrow::DataType;

class LakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("oxbow-lake-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    options_.warehouse = (dir_ / "warehouse").string();
    options_.maintenance_interval_ms = 0;
    options_.fs = fs_;
    auto events = events_;
    options_.observer.on_round = [events](const std::string&, double seconds, bool ok) {
      std::lock_guard<std::mutex> lock(events->mu);
      EXPECT_GE(seconds, 0);
      ++(ok ? events->rounds_ok : events->rounds_failed);
    };
    options_.observer.on_compaction = [events](const std::string&, double, bool ok) {
      std::lock_guard<std::mutex> lock(events->mu);
      ++(ok ? events->compactions_ok : events->compactions_failed);
    };
    options_.observer.on_commit = [events](const std::string& table, const char* kind) {
      std::lock_guard<std::mutex> lock(events->mu);
      EXPECT_EQ(table, "ns.t");
      ++events->commits[kind];
    };
    Open();
  }
  void TearDown() override {
    service_.reset();
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    service_.reset();
    engine_.reset();
    engine::EngineOptions eo;
    eo.data_dir = (dir_ / "data").string();
    eo.fs = fs_;
    engine_ = engine::Engine::Open(eo).ValueOrDie();
    service_.reset();
  }
  // A service whose thread idles (huge freshness): the test drives it with RunOnce.
  TieringService& Service() {
    if (!service_) {
      LakeOptions o = options_;
      o.freshness_ms = 3600 * 1000;
      o.maintenance_interval_ms = 3600 * 1000;
      service_ = TieringService::Start(engine_.get(), o).ValueOrDie();
    }
    return *service_;
  }
  void CreateTable(std::map<std::string, std::string> props = {}, int32_t buckets = 2) {
    catalog::CreateTableRequest req;
    req.table.name = "ns.t";
    req.table.schema = schema_;
    req.table.buckets = buckets;
    req.table.properties = std::move(props);
    ASSERT_TRUE(engine_->CreateTable(req).ok());
  }
  // Rows first_id.. into the table's buckets, or all into `bucket`.
  void Put(int64_t first_id, int64_t rows, std::optional<int32_t> bucket = std::nullopt) {
    arrow::Int64Builder ids(DataType::Int64());
    arrow::UInt16Builder small(DataType::UInt16());
    arrow::Int64Builder ts(schema_->field(2).type);
    for (int64_t i = 0; i < rows; ++i) {
      ASSERT_TRUE(ids.Append(first_id + i).ok());
      ASSERT_TRUE(small.Append(static_cast<uint16_t>(60000 + (first_id + i) % 100)).ok());
      ASSERT_TRUE(ts.Append((first_id + i) * 1000000000LL).ok());  // ns
    }
    auto batch = arrow::RecordBatch::Make(schema_, rows,
                                          {ids.Finish().ValueOrDie(), small.Finish().ValueOrDie(),
                                           ts.Finish().ValueOrDie()})
                     .ValueOrDie();
    auto encoded = ipc::EncodeRecordBatch(*batch).ValueOrDie();
    auto raw =
        ipc::ParseMessage(encoded.metadata, encoded.BodyAsBuffer().ValueOrDie()).ValueOrDie();
    auto put = (bucket ? engine_->StartPutToBucket("ns.t", schema_, *bucket)
                       : engine_->StartPut("ns.t", schema_))
                   .ValueOrDie();
    ASSERT_TRUE(put->Append(raw).ok());
  }
  std::unique_ptr<iceberg::IcebergTable> Lake() {
    return iceberg::IcebergTable::Load(PosixFileSystem::Default(), options_.warehouse + "/ns/t")
        .ValueOrDie();
  }
  // Every lake row as (bucket, offset) -> id, failing on duplicates.
  std::map<std::pair<int32_t, int64_t>, int64_t> LakeRows() {
    std::map<std::pair<int32_t, int64_t>, int64_t> rows;
    auto lake = Lake();
    for (const auto& e : lake->LiveEntries().ValueOrDie()) {
      auto reader = parquet::FileReader::Open(*PosixFileSystem::Default(), e.data_file.file_path)
                        .ValueOrDie();
      EXPECT_EQ(reader->schema()->field(1).type, DataType::Int32());  // uint16 widened
      EXPECT_EQ(reader->schema()->field(2).type.unit(), arrow::TimeUnit::kMicro);
      for (const auto& b : reader->Read().ValueOrDie()) {
        for (int64_t i = 0; i < b->num_rows(); ++i) {
          auto key = std::make_pair(b->column(3).Value<int32_t>(i), b->column(4).Value<int64_t>(i));
          EXPECT_FALSE(rows.count(key)) << "duplicate " << key.first << "/" << key.second;
          rows[key] = b->column(0).Value<int64_t>(i);
          EXPECT_EQ(b->column(2).Value<int64_t>(i), rows[key] * 1000000);
          EXPECT_EQ(b->column(1).Value<int32_t>(i), 60000 + rows[key] % 100);
        }
      }
    }
    return rows;
  }

  // Ids of every lake row, which must each appear once.
  std::set<int64_t> LakeIds() {
    std::set<int64_t> ids;
    for (const auto& [key, id] : LakeRows()) ids.insert(id);
    return ids;
  }
  static std::set<int64_t> Ids(int64_t count) {
    std::set<int64_t> ids;
    for (int64_t i = 0; i < count; ++i) ids.insert(i);
    return ids;
  }
  // Checks that the lake's data directory holds exactly the files its snapshots reference:
  // nothing half-written is referenced, and nothing failed is left behind.
  void ExpectDataFilesAreExactlyTheReferencedOnes() {
    auto lake = Lake();
    std::set<std::string> referenced;
    for (const auto& snapshot : lake->metadata().snapshots) {
      for (const auto& m :
           iceberg::ReadManifestList(fs_.get(), snapshot.manifest_list).ValueOrDie()) {
        for (const auto& e :
             iceberg::ReadManifest(fs_.get(), m, lake->schema(), lake->spec()).ValueOrDie()) {
          referenced.insert(e.data_file.file_path);
        }
      }
    }
    auto files = fs_->ListFilesRecursively(options_.warehouse + "/ns/t/data").ValueOrDie();
    EXPECT_EQ(std::set<std::string>(files.begin(), files.end()), referenced);
    for (const auto& path : referenced) {
      // Every referenced file is whole: its footer and pages verify.
      auto report = parquet::VerifyFile(*fs_, path).ValueOrDie();
      EXPECT_TRUE(report.ok()) << path << ": " << report.problem.ToString();
    }
  }
  int64_t TieredRows() {
    const LakeTableStatus status = Service().Describe("ns.t").ValueOrDie();
    int64_t tiered = 0;
    for (int64_t t : status.tiered_offsets) tiered += t;
    return tiered;
  }

  // What the service told its observer.
  struct Events {
    std::mutex mu;
    int rounds_ok = 0;
    int rounds_failed = 0;
    int compactions_ok = 0;
    int compactions_failed = 0;
    std::map<std::string, int> commits;
  };
  std::shared_ptr<Events> events_ = std::make_shared<Events>();
  std::shared_ptr<FaultInjectionFileSystem> fs_ =
      std::make_shared<FaultInjectionFileSystem>(PosixFileSystem::Default());
  std::filesystem::path dir_;
  LakeOptions options_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<TieringService> service_;
  arrow::SchemaPtr schema_ = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{{"id", DataType::Int64(), false},
                                {"small", DataType::UInt16(), true},
                                {"ts", DataType::Timestamp(arrow::TimeUnit::kNano, "UTC"), true}});
};

TEST_F(LakeTest, TiersEveryRowOnceAndResumesAfterRestart) {
  CreateTable();
  Put(0, 100);
  Put(100, 50);
  ASSERT_TRUE(Service().RunOnce().ok());
  auto rows = LakeRows();
  EXPECT_EQ(rows.size(), 150u);
  auto status = Service().Describe("ns.t").ValueOrDie();
  EXPECT_TRUE(status.enabled);
  EXPECT_EQ(status.lag_rows, 0);
  EXPECT_FALSE(status.metadata_location.empty());
  EXPECT_TRUE(std::filesystem::exists(status.metadata_location));
  int64_t tiered = 0;
  for (int64_t t : status.tiered_offsets) tiered += t;
  EXPECT_EQ(tiered, 150);

  Open();  // restart: tiering resumes from the committed offsets
  Put(150, 10);
  EXPECT_EQ(Service().Describe("ns.t")->lag_rows, 10);
  ASSERT_TRUE(Service().RunOnce().ok());
  rows = LakeRows();
  ASSERT_EQ(rows.size(), 160u);
  std::set<int64_t> ids;
  for (const auto& [key, id] : rows) ids.insert(id);
  EXPECT_EQ(ids.size(), 160u);
  EXPECT_EQ(*ids.rbegin(), 159);
}

TEST_F(LakeTest, UncommittedFilesAreOrphansAndRemoved) {
  CreateTable();
  Put(0, 10);
  ASSERT_TRUE(Service().RunOnce().ok());
  const std::string orphan = options_.warehouse + "/ns/t/data/left-by-a-crash.parquet";
  { std::ofstream(orphan) << "partial"; }
  // What a SIGKILL in the middle of a commit leaves under metadata/: a torn manifest, a
  // manifest list, the catalog's temporary file and a metadata file never made current.
  const std::string metadata = options_.warehouse + "/ns/t/metadata/";
  const std::vector<std::string> torn = {metadata + "0123-m0.avro", metadata + "snap-1-1-0123.avro",
                                         metadata + ".v9.metadata.json.0123.tmp",
                                         metadata + "v99.metadata.json"};
  for (const auto& path : torn) std::ofstream(path) << "Obj\x01";
  const std::string current = Lake()->metadata_file();
  Open();
  ASSERT_TRUE(Service().RunOnce().ok());
  EXPECT_FALSE(std::filesystem::exists(orphan));
  for (const auto& path : torn) EXPECT_FALSE(std::filesystem::exists(path)) << path;
  EXPECT_TRUE(std::filesystem::exists(iceberg::LocalPath(current)));
  EXPECT_TRUE(std::filesystem::exists(metadata + "version-hint.text"));
  EXPECT_EQ(LakeRows().size(), 10u);
  Put(10, 5);  // the table still takes commits
  ASSERT_TRUE(Service().RunOnce().ok());
  EXPECT_EQ(LakeRows().size(), 15u);
}

TEST_F(LakeTest, CompactsAndMergesManifestsWithoutChangingRows) {
  options_.compaction_min_files = 3;
  options_.max_manifests = 4;
  CreateTable({{kPartitionProperty, "identity(__bucket)"}});
  for (int round = 0; round < 6; ++round) {
    Put(round * 20, 20);
    ASSERT_TRUE(Service().RunOnce().ok());
  }
  auto lake = Lake();
  auto live = lake->LiveEntries().ValueOrDie();
  EXPECT_LE(live.size(), 4u);  // per bucket directory: compacted into one file, plus stragglers
  auto manifests = iceberg::ReadManifestList(PosixFileSystem::Default().get(),
                                             lake->CurrentSnapshot()->manifest_list)
                       .ValueOrDie();
  EXPECT_LE(manifests.size(), 4u);
  EXPECT_EQ(LakeRows().size(), 120u);
  for (const auto& e : live) {
    ASSERT_EQ(e.data_file.partition.size(), 1u);
    EXPECT_NE(e.data_file.file_path.find("/__bucket="), std::string::npos);
  }
}

// A pass whose compaction step leaves enough small files for another takes the next step at
// once, so compaction keeps up with rounds that add files faster than one step per interval.
TEST_F(LakeTest, CompactionStepsFollowEachOtherWhileABacklogLasts) {
  options_.compaction_min_files = 1000;  // the rounds alone first
  CreateTable();
  for (int round = 0; round < 10; ++round) {
    Put(round * 10, 10);
    ASSERT_TRUE(Service().RunOnce().ok());
  }
  ASSERT_EQ(Lake()->LiveEntries().ValueOrDie().size(), 10u);
  service_.reset();
  options_.compaction_min_files = 4;
  options_.compaction_step_bytes = 1;  // two files per step
  ASSERT_TRUE(Service().RunOnce().ok());
  EXPECT_EQ(Lake()->LiveEntries().ValueOrDie().size(), 3u);  // 10 -> 3, one file per step
  EXPECT_EQ(events_->compactions_ok, 7);
  EXPECT_EQ(LakeIds(), Ids(100));
}

// lake.fresh-codec lz4: rounds write *.fresh.parquet files in LZ4_RAW; fewer of them than
// compaction_min_files are rewritten in zstd once a maintenance pass saw no new one.
TEST_F(LakeTest, FreshFilesAreRewrittenInTheFinalCodecOnceNoRoundAddsOne) {
  auto codecs = [&](const std::string& path) {
    auto reader = parquet::FileReader::Open(*fs_, path).ValueOrDie();
    std::set<parquet::Codec> out;
    for (const auto& group : reader->metadata().row_groups) {
      for (const auto& chunk : group.columns) out.insert(chunk.meta_data->codec);
    }
    return out;
  };
  auto live_paths = [&] {
    std::vector<std::string> paths;
    for (const auto& e : Lake()->LiveEntries().ValueOrDie()) {
      paths.push_back(iceberg::LocalPath(e.data_file.file_path));
    }
    return paths;
  };
  CreateTable({{kFreshCodecProperty, "lz4"}});
  Put(0, 50);
  ASSERT_TRUE(Service().RunOnce().ok());  // the round's file is new to this pass: kept
  Put(50, 50);
  ASSERT_TRUE(Service().RunOnce().ok());  // so is the second
  auto fresh = live_paths();
  ASSERT_EQ(fresh.size(), 2u);
  for (const auto& path : fresh) {
    EXPECT_TRUE(path.ends_with(".fresh.parquet")) << path;
    EXPECT_EQ(codecs(path), std::set<parquet::Codec>{parquet::Codec::kLz4Raw}) << path;
  }
  ASSERT_TRUE(Service().RunOnce().ok());  // no new file since the last pass: rewritten
  auto rewritten = live_paths();
  ASSERT_EQ(rewritten.size(), 1u);
  EXPECT_FALSE(rewritten[0].ends_with(".fresh.parquet")) << rewritten[0];
  EXPECT_EQ(codecs(rewritten[0]), std::set<parquet::Codec>{parquet::Codec::kZstd});
  EXPECT_EQ(LakeIds(), Ids(100));
  ASSERT_TRUE(Service().RunOnce().ok());  // a final file alone is left as it is
  EXPECT_EQ(live_paths(), rewritten);
}

// A drop while compaction rewrites a file (its output's fsync held up) waits for that step, so
// the step writes nothing into the directory being removed and the drop succeeds whole.
TEST_F(LakeTest, DropTableWaitsForACompactionInProgress) {
  CreateTable({{kFreshCodecProperty, "lz4"}});
  Put(0, 50);
  ASSERT_TRUE(Service().RunOnce().ok());  // one fresh file, seen by this pass
  fs_->SetSyncDelay(std::chrono::milliseconds(500), "/warehouse/");
  std::thread maintenance([&] { (void)Service().RunOnce(); });  // rewrites the quiet fresh file
  // Until the step's output file exists: compaction is then mid-file.
  const auto data_dir = std::filesystem::path(options_.warehouse) / "ns" / "t" / "data";
  auto compacting = [&] {
    for (const auto& f : std::filesystem::directory_iterator(data_dir)) {
      if (!f.path().string().ends_with(".fresh.parquet")) return true;
    }
    return false;
  };
  for (int i = 0; i < 1000 && !compacting(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(compacting());
  auto table = engine_->DescribeTable("ns.t").ValueOrDie();
  ASSERT_TRUE(engine_->DropTable("ns.t").ok());  // as node::Node::DropTable does
  Status dropped = Service().DropTable(table.table);
  int compactions = 0;
  {
    std::lock_guard<std::mutex> lock(events_->mu);
    compactions = events_->compactions_ok + events_->compactions_failed;
  }
  maintenance.join();
  fs_->ClearFaults();
  EXPECT_TRUE(dropped.ok()) << dropped.ToString();
  EXPECT_EQ(compactions, 1);  // the step ended before the drop did
  EXPECT_FALSE(std::filesystem::exists(options_.warehouse + "/ns/t"));
}

// Partition evolution: files of the first spec stay in it, files after the alter are of the new
// spec, and compaction rewrites the earlier spec's small files into the current one.
TEST_F(LakeTest, PartitionEvolutionAndCompactionIntoTheCurrentSpec) {
  options_.compaction_min_files = 1000;  // the first spec's small files pile up
  CreateTable();                         // unpartitioned
  for (int round = 0; round < 3; ++round) {
    Put(round * 20, 20);
    ASSERT_TRUE(Service().RunOnce().ok());
  }
  auto altered = Service().AlterTable("ns.t", [&]() -> Result<catalog::TableDescriptor> {
    ASSIGN_OR_RAISE(auto before, engine_->DescribeTable("ns.t"));
    ASSIGN_OR_RAISE(
        auto after,
        catalog::ApplyAlter(before.table,
                            {{.op = catalog::SchemaChange::Op::kSetProperties,
                              .properties = {{kPartitionProperty, "identity(__bucket)"}}}}));
    return engine_->AlterTable(before.table, after);
  });
  ASSERT_TRUE(altered.ok()) << altered.status().ToString();
  Put(60, 20);
  ASSERT_TRUE(Service().RunOnce().ok());
  auto count_specs = [&] {
    std::map<int32_t, int> files;
    for (const auto& e : Lake()->LiveEntries().ValueOrDie()) ++files[*e.data_file.spec_id];
    return files;
  };
  {
    auto lake = Lake();
    EXPECT_EQ(lake->spec().spec_id(), 1);
    ASSERT_EQ(lake->spec().fields().size(), 1u);
    EXPECT_EQ(lake->spec().fields()[0].field_id, 1000);
    EXPECT_EQ(lake->spec().fields()[0].name, "__bucket");
    EXPECT_EQ(lake->metadata().last_partition_id, 1000);
  }
  auto before = count_specs();
  EXPECT_EQ(before[0], 3);
  EXPECT_GE(before[1], 1);
  EXPECT_EQ(LakeRows().size(), 80u);

  // A restart with eager compaction: the first spec's files become files of the current one.
  service_.reset();
  options_.compaction_min_files = 3;
  ASSERT_TRUE(Service().RunOnce().ok());
  auto after = count_specs();
  EXPECT_EQ(after.count(0), 0u);
  EXPECT_EQ(LakeRows().size(), 80u);
  for (const auto& e : Lake()->LiveEntries().ValueOrDie()) {
    ASSERT_EQ(e.data_file.partition.size(), 1u);
    const int32_t bucket = std::get<int32_t>(*e.data_file.partition[0]);
    EXPECT_NE(e.data_file.file_path.find("/__bucket=" + std::to_string(bucket) + "/"),
              std::string::npos);
    auto reader =
        parquet::FileReader::Open(*PosixFileSystem::Default(), e.data_file.file_path).ValueOrDie();
    for (const auto& b : reader->Read().ValueOrDie()) {
      for (int64_t i = 0; i < b->num_rows(); ++i) {
        EXPECT_EQ(b->column(3).Value<int32_t>(i), bucket) << e.data_file.file_path;
      }
    }
  }
}

// A failed write or fsync of a data file fails the round: nothing acknowledged is lost, no
// part of the failed file is referenced or left behind, and the next round catches up.
TEST_F(LakeTest, DataFileWriteAndSyncFaultsDuringTieringLoseNothing) {
  CreateTable();
  Put(0, 50);
  ASSERT_TRUE(Service().RunOnce().ok());
  int64_t rows = 50;
  for (int fault = 0; fault < 2; ++fault) {
    Put(rows, 50);
    if (fault == 0) {
      fs_->FailWrites(Status::ResourceExhausted("disk full"), /*partial_bytes=*/100, -1,
                      ".parquet");
    } else {
      fs_->FailSyncs(Status::IOError("injected fsync failure"));
    }
    EXPECT_FALSE(Service().RunOnce().ok());
    EXPECT_EQ(LakeIds(), Ids(rows));  // the lake stays at its last commit
    EXPECT_EQ(TieredRows(), rows);
    EXPECT_EQ(Service().Describe("ns.t")->lag_rows, 50);
    ExpectDataFilesAreExactlyTheReferencedOnes();
    fs_->ClearFaults();
    ASSERT_TRUE(Service().RunOnce().ok());
    rows += 50;
    EXPECT_EQ(LakeIds(), Ids(rows));  // the lake equals the log again
    EXPECT_EQ(TieredRows(), rows);
    ExpectDataFilesAreExactlyTheReferencedOnes();
  }
  // Each failed round was told as one; each told success committed one append.
  std::lock_guard<std::mutex> lock(events_->mu);
  EXPECT_GE(events_->rounds_failed, 2);
  EXPECT_GE(events_->rounds_ok, 3);
  EXPECT_EQ(events_->commits["append"], events_->rounds_ok);
}

TEST_F(LakeTest, WriteAndSyncFaultsDuringCompactionKeepTheInputs) {
  options_.compaction_min_files = 1000;  // no compaction while the small files pile up
  CreateTable();
  for (int round = 0; round < 4; ++round) {
    Put(round * 25, 25);
    ASSERT_TRUE(Service().RunOnce().ok());
  }
  ASSERT_EQ(Lake()->LiveEntries()->size(), 4u);
  service_.reset();
  options_.compaction_min_files = 3;
  // The round has nothing to tier, so the only data files written are compaction's.
  for (int fault = 0; fault < 2; ++fault) {
    if (fault == 0) {
      fs_->FailWrites(Status::IOError("injected write failure"), /*partial_bytes=*/10, -1,
                      ".parquet");
    } else {
      fs_->FailSyncs(Status::IOError("injected fsync failure"));
    }
    Status st = Service().RunOnce();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("compacting"), std::string::npos) << st.ToString();
    EXPECT_EQ(Lake()->LiveEntries()->size(), 4u);  // the inputs stay live
    EXPECT_EQ(LakeIds(), Ids(100));
    ExpectDataFilesAreExactlyTheReferencedOnes();
    fs_->ClearFaults();
  }
  ASSERT_TRUE(Service().RunOnce().ok());
  EXPECT_EQ(Lake()->LiveEntries()->size(), 1u);
  EXPECT_EQ(LakeIds(), Ids(100));
  EXPECT_EQ(TieredRows(), 100);
  std::lock_guard<std::mutex> lock(events_->mu);
  EXPECT_GE(events_->compactions_failed, 2);
  EXPECT_GE(events_->compactions_ok, 1);
  EXPECT_EQ(events_->commits["compaction"], events_->compactions_ok);
  EXPECT_EQ(events_->rounds_failed, 0);
}

// Compaction reads its inputs a column chunk of a row group at a time, not whole.
TEST_F(LakeTest, CompactionStreamsItsInputsByRowGroup) {
  options_.compaction_min_files = 1000;
  options_.parquet.row_group_rows = 10;
  CreateTable();
  for (int round = 0; round < 3; ++round) {
    Put(round * 100, 100);
    ASSERT_TRUE(Service().RunOnce().ok());
  }
  service_.reset();
  options_.compaction_min_files = 3;
  fs_->ResetCounters();
  ASSERT_TRUE(Service().RunOnce().ok());
  ASSERT_EQ(Lake()->LiveEntries()->size(), 1u);
  // Per input: its footer, then each of its 10 row groups' 5 or more column chunks apart.
  EXPECT_GT(fs_->counters().reads, 3 * 10 * 5);
  EXPECT_EQ(LakeIds(), Ids(300));
}

// Outputs close at the target's row count within an input row group: two files of one row
// group each, merged toward a target of 3/4 of both, make files of about 150 and 50 rows (closing
// only between row groups made the same two files again, at every step).
TEST_F(LakeTest, CompactionOutputsCloseWithinAnInputRowGroup) {
  options_.compaction_min_files = 1000;
  CreateTable({{kFreshCodecProperty, "zstd"}});
  for (int round = 0; round < 2; ++round) {
    Put(round * 100, 100);
    ASSERT_TRUE(Service().RunOnce().ok());
  }
  int64_t bytes = 0;
  for (const auto& e : Lake()->LiveEntries().ValueOrDie()) bytes += e.data_file.file_size_in_bytes;
  service_.reset();
  options_.compaction_min_files = 2;
  options_.target_file_bytes = bytes * 3 / 4;
  ASSERT_TRUE(Service().RunOnce().ok());
  std::multiset<int64_t> rows;
  for (const auto& e : Lake()->LiveEntries().ValueOrDie()) rows.insert(e.data_file.record_count);
  const auto per_file =
      static_cast<int64_t>(200.0 * static_cast<double>(options_.target_file_bytes) /
                           static_cast<double>(bytes));  // about 150
  EXPECT_EQ(rows, (std::multiset<int64_t>{per_file, 200 - per_file}));
  EXPECT_GT(per_file, 140);
  EXPECT_EQ(LakeIds(), Ids(200));
}

// drop_table with a failing catalog fsync keeps the table whole; with failing removals it
// drops the table and the files left behind are removed later.
TEST_F(LakeTest, FaultsDuringDropTableLeaveNoHalfDroppedTable) {
  CreateTable();
  Put(0, 40);
  ASSERT_TRUE(Service().RunOnce().ok());
  auto drop = [&]() -> Status {  // as node::Node::DropTable does
    ASSIGN_OR_RAISE(auto table, engine_->DescribeTable("ns.t"));
    RETURN_NOT_OK(engine_->DropTable("ns.t"));
    return Service().DropTable(table.table);
  };

  fs_->FailSyncs(Status::IOError("injected fsync failure"));
  EXPECT_FALSE(drop().ok());
  fs_->ClearFaults();
  ASSERT_TRUE(engine_->DescribeTable("ns.t").ok());  // not dropped: every row still there
  EXPECT_EQ(LakeIds(), Ids(40));
  Put(40, 10);
  ASSERT_TRUE(Service().RunOnce().ok());
  EXPECT_EQ(LakeIds(), Ids(50));
  ExpectDataFilesAreExactlyTheReferencedOnes();

  const auto table_id = engine_->DescribeTable("ns.t")->table.table_id;
  const std::string table_dir = (dir_ / "data" / "tables" / std::to_string(table_id)).string();
  const std::string lake_dir = options_.warehouse + "/ns/t";
  fs_->FailRemovals(Status::IOError("injected removal failure"), 1, "/tables/");
  Status st = drop();
  EXPECT_NE(st.message().find("was dropped but its files remain"), std::string::npos)
      << st.ToString();
  fs_->ClearFaults();
  EXPECT_TRUE(engine_->DescribeTable("ns.t").status().IsNotFound());
  EXPECT_TRUE(std::filesystem::exists(table_dir));
  Open();  // a restart removes the orphaned log directory
  EXPECT_FALSE(std::filesystem::exists(table_dir));

  // A lake left behind by a failed removal is replaced when the name is reused.
  EXPECT_TRUE(std::filesystem::exists(lake_dir));
  CreateTable();
  Put(0, 5);
  ASSERT_TRUE(Service().RunOnce().ok());
  EXPECT_EQ(LakeIds(), Ids(5));
  ExpectDataFilesAreExactlyTheReferencedOnes();
}

TEST_F(LakeTest, DisabledAndBrokenTablesSayWhy) {
  CreateTable({{kEnabledProperty, "false"}});
  Put(0, 5);
  ASSERT_TRUE(Service().RunOnce().ok());
  EXPECT_FALSE(Service().Describe("ns.t")->enabled);
  EXPECT_FALSE(std::filesystem::exists(options_.warehouse + "/ns/t"));

  catalog::CreateTableRequest req;
  req.table.name = "ns.bad";
  req.table.schema = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{{"u", DataType::UInt64(), true}});
  req.table.buckets = 1;
  ASSERT_TRUE(engine_->CreateTable(req).ok());
  EXPECT_EQ(Service().Describe("ns.bad")->error,
            "column 'u': uint64 has no Iceberg type (values above 2^63-1 do not fit long); use "
            "int64 or decimal128(20, 0) (a table with lake.enabled=false may hold it)");
}

TEST_F(LakeTest, UnionReadIsTheLakeSnapshotThenTheLogAfterIt) {
  CreateTable();
  Put(0, 100);
  Put(100, 50);
  ASSERT_TRUE(Service().RunOnce().ok());
  Put(150, 30);  // not tiered: the log part
  auto reader = OpenUnionRead(engine_.get(), {Service().catalog(), Service().file_system()},
                              {"ns.t", std::vector<std::string>{"ts", "small", "id"}})
                    .ValueOrDie();
  ASSERT_TRUE(reader->snapshot_id().has_value());
  int64_t tiered = 0;
  for (const auto& b : reader->buckets()) tiered += b.lake_offset;
  EXPECT_EQ(tiered, 150);
  const auto& schema = reader->schema();
  ASSERT_EQ(schema->num_fields(), 3);
  EXPECT_EQ(schema->field(1).type, DataType::UInt16());  // the table's types, not the lake's
  std::set<int64_t> ids;
  int64_t lake_rows = 0;
  int64_t log_rows = 0;
  while (true) {
    auto next = reader->Next(std::chrono::steady_clock::now()).ValueOrDie();
    if (!next) break;
    auto raw = ipc::ParseMessage(next->message.metadata, next->message.BodyAsBuffer().ValueOrDie())
                   .ValueOrDie();
    auto batch = ipc::DecodeRecordBatch(schema, raw).ValueOrDie();
    ASSERT_EQ(batch->num_rows(), next->rows);
    (next->part == UnionBatch::Part::kLake ? lake_rows : log_rows) += batch->num_rows();
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      const int64_t id = batch->column(2).Value<int64_t>(i);
      EXPECT_TRUE(ids.insert(id).second) << "id " << id << " twice";
      EXPECT_EQ(batch->column(1).Value<uint16_t>(i), 60000 + id % 100);
      EXPECT_EQ(batch->column(0).Value<int64_t>(i), id * 1000000000LL);  // whole microseconds
    }
  }
  EXPECT_EQ(lake_rows, 150);
  EXPECT_EQ(log_rows, 30);
  EXPECT_EQ(ids, Ids(180));
  EXPECT_TRUE(reader->done());

  // A data file gone from under the snapshot fails the read with its path, not a crash.
  auto again = OpenUnionRead(engine_.get(), {Service().catalog(), Service().file_system()},
                             {"ns.t", std::nullopt})
                   .ValueOrDie();
  const std::string lost = Lake()->LiveEntries().ValueOrDie().front().data_file.file_path;
  std::filesystem::remove(lost);
  Result<std::optional<UnionBatch>> next = std::optional<UnionBatch>();
  do {
    next = again->Next(std::chrono::steady_clock::now());
  } while (next.ok() && next->has_value());
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find(lost), std::string::npos) << next.status().ToString();
}

// describe_table asks for these again while a bucket has no lake row: buckets known, and
// buckets the lake tiered nothing from, must not read data files.
TEST_F(LakeTest, EarliestLakeOffsetsReadNoDataFileForKnownOrUntieredBuckets) {
  CreateTable({}, 3);
  Put(0, 10, /*bucket=*/0);
  Put(10, 10, /*bucket=*/2);  // the file's __bucket bounds, 0 to 2, take in bucket 1 too
  ASSERT_TRUE(Service().RunOnce().ok());
  const auto table = engine_->DescribeTable("ns.t")->table;
  const LakeAccess access{Service().catalog(), Service().file_system()};
  using Earliest = std::vector<std::optional<int64_t>>;
  ASSERT_EQ(EarliestLakeOffsets(access, table).ValueOrDie(), (Earliest{0, std::nullopt, 0}));
  // With its data files gone, only the buckets that need no reading still answer.
  for (const auto& e : Lake()->LiveEntries().ValueOrDie()) {
    std::filesystem::remove(iceberg::LocalPath(e.data_file.file_path));
  }
  EXPECT_EQ(EarliestLakeOffsets(access, table, {0, std::nullopt, 0}).ValueOrDie(),
            (Earliest{0, std::nullopt, 0}));
  EXPECT_FALSE(EarliestLakeOffsets(access, table).ok());
}

// Describe answers from the status the last commit published: each bucket's first lake offset
// is found as rounds commit, and asking reads neither the catalog nor a data file.
TEST_F(LakeTest, DescribeReadsThePublishedEarliestOffsets) {
  CreateTable({}, 3);
  using Earliest = std::vector<std::optional<int64_t>>;
  EXPECT_EQ(Service().Describe("ns.t")->earliest_offsets, Earliest{});  // nothing committed
  Put(0, 10, /*bucket=*/0);
  ASSERT_TRUE(Service().RunOnce().ok());
  EXPECT_EQ(Service().Describe("ns.t")->earliest_offsets,
            (Earliest{0, std::nullopt, std::nullopt}));
  Put(10, 10, /*bucket=*/2);
  ASSERT_TRUE(Service().RunOnce().ok());
  const LakeTableStatus before = Service().Describe("ns.t").ValueOrDie();
  EXPECT_EQ(before.earliest_offsets, (Earliest{0, std::nullopt, 0}));
  std::filesystem::remove_all(options_.warehouse + "/ns/t");
  const LakeTableStatus after = Service().Describe("ns.t").ValueOrDie();
  EXPECT_EQ(after.earliest_offsets, before.earliest_offsets);
  EXPECT_EQ(after.metadata_location, before.metadata_location);
  EXPECT_EQ(after.data_files, before.data_files);
  EXPECT_EQ(after.lag_rows, 0);
}

// The ids a filtered union read of ns.t returns, and what it pruned.
std::pair<std::set<int64_t>, UnionPruning> FilteredIds(engine::Engine* engine,
                                                       TieringService& service,
                                                       std::vector<ColumnPredicate> filter) {
  UnionReadRequest request{"ns.t", std::vector<std::string>{"id"}};
  request.filter = std::move(filter);
  auto reader = OpenUnionRead(engine, {service.catalog(), service.file_system()}, request);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  std::set<int64_t> ids;
  while (true) {
    auto next = (*reader)->Next(std::chrono::steady_clock::now()).ValueOrDie();
    if (!next) break;
    auto raw = ipc::ParseMessage(next->message.metadata, next->message.BodyAsBuffer().ValueOrDie())
                   .ValueOrDie();
    auto batch = ipc::DecodeRecordBatch((*reader)->schema(), raw).ValueOrDie();
    for (int64_t i = 0; i < batch->num_rows(); ++i) ids.insert(batch->column(0).Value<int64_t>(i));
  }
  return {ids, (*reader)->pruning()};
}

TEST_F(LakeTest, FilteredUnionReadsSkipFilesAndRowGroupsByTheirBounds) {
  options_.parquet.row_group_rows = 10;
  CreateTable();
  Put(0, 200);
  ASSERT_TRUE(Service().RunOnce().ok());
  Put(200, 100);
  ASSERT_TRUE(Service().RunOnce().ok());
  Put(300, 5);  // the log part
  using Op = ColumnPredicate::Op;
  auto [ids, pruned] = FilteredIds(engine_.get(), Service(), {{"id", Op::kGreaterEqual, 190}});
  std::set<int64_t> want;
  for (int64_t id = 190; id < 305; ++id) want.insert(id);
  EXPECT_EQ(ids, want);
  EXPECT_EQ(pruned.files_skipped, 0);
  EXPECT_EQ(pruned.row_groups_skipped, 19);  // ids 0..189 of the first file
  std::tie(ids, pruned) = FilteredIds(engine_.get(), Service(),
                                      {{"id", Op::kLess, 15}, {"small", Op::kNotEqual, 60003}});
  want.clear();
  for (int64_t id = 0; id < 15; ++id) {
    if (id != 3) want.insert(id);
  }
  EXPECT_EQ(ids, want);
  EXPECT_EQ(pruned.files_skipped, 1);        // ids 200..299
  EXPECT_EQ(pruned.row_groups_skipped, 18);  // ids 20..199
  // uint16 in the table, int32 in the lake: bounds compare as numbers.
  std::tie(ids, pruned) = FilteredIds(engine_.get(), Service(), {{"small", Op::kEqual, 60099}});
  EXPECT_EQ(ids, (std::set<int64_t>{99, 199, 299}));
}

catalog::TableDescriptor Descriptor(std::vector<arrow::Field> fields,
                                    std::map<std::string, std::string> properties = {}) {
  catalog::TableDescriptor table;
  table.name = "ns.t";
  table.schema = std::make_shared<const arrow::Schema>(std::move(fields));
  table.properties = std::move(properties);
  return table;
}

std::string TierabilityError(std::vector<arrow::Field> fields,
                             std::map<std::string, std::string> properties = {}) {
  Status st = CheckTableIsTierable(Descriptor(std::move(fields), std::move(properties)));
  EXPECT_TRUE(st.ok() || st.IsInvalid()) << st.ToString();
  return st.message();
}

TEST(LakeBatchCheckTest, SecondTimestampsBeyondMicrosecondsAreRefusedNamingFieldAndRow) {
  const arrow::DataType type = arrow::DataType::Timestamp(arrow::TimeUnit::kSecond);
  auto batch = [&](std::vector<int64_t> values) {
    arrow::Int64Builder ts(type);
    EXPECT_TRUE(ts.AppendValues(values.data(), static_cast<int64_t>(values.size())).ok());
    auto schema =
        std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{{"ts", type, true}});
    return arrow::RecordBatch::Make(schema, static_cast<int64_t>(values.size()),
                                    {ts.Finish().ValueOrDie()})
        .ValueOrDie();
  };
  const int64_t max = INT64_MAX / 1'000'000;
  EXPECT_FALSE(MakeBatchCheck(Descriptor({{"ts", type, true}}, {{"lake.enabled", "false"}})));
  EXPECT_FALSE(MakeBatchCheck(Descriptor({{"ts", arrow::DataType::Int64(), true}})));
  engine::BatchCheck check = MakeBatchCheck(Descriptor({{"ts", type, true}}));
  ASSERT_TRUE(check);
  EXPECT_TRUE(check(*batch({0, max, -max})).ok());
  EXPECT_EQ(check(*batch({1, 2, max + 1})).message(),
            "field 'ts' of table 'ns.t': row 2 holds 9223372036855 (timestamp[s]), beyond the "
            "microseconds the lake stores ([-9223372036854, 9223372036854]); a table with "
            "lake.enabled=false takes it");
  EXPECT_FALSE(check(*batch({-max - 1})).ok());
}

TEST(TierabilityTest, TypesWithoutAnIcebergFormAreRefusedNamingTheColumn) {
  const std::string prefix = "table 'ns.t' cannot go to the lake: column 'c': ";
  const std::string suffix = " (a table with lake.enabled=false may hold it)";
  EXPECT_EQ(TierabilityError({{"id", DataType::Int64()}, {"c", DataType::Decimal128(10, -1)}}),
            prefix +
                "decimal128(10, -1) has no Iceberg type: an Iceberg decimal needs 0 <= scale <= "
                "precision <= 38" +
                suffix);
  EXPECT_EQ(TierabilityError({{"c", DataType::FixedSizeBinary(0)}}),
            prefix +
                "fixed_size_binary[0] has no Iceberg type: fixed[L] is a Parquet "
                "FIXED_LEN_BYTE_ARRAY, whose length must be at least 1" +
                suffix);
  EXPECT_NE(TierabilityError({{"c", DataType::UInt64()}}).find(prefix + "uint64"),
            std::string::npos);
  EXPECT_EQ(TierabilityError({{"__offset", DataType::Int64()}}),
            "table 'ns.t' cannot go to the lake: column '__offset' clashes with a lake system "
            "column (__bucket, __offset, __timestamp)");
}

TEST(TierabilityTest, EveryOtherTypeIsTierable) {
  std::vector<arrow::Field> fields;
  for (const auto& type :
       {DataType::Bool(), DataType::Int8(), DataType::Int16(), DataType::Int32(), DataType::Int64(),
        DataType::UInt8(), DataType::UInt16(), DataType::UInt32(), DataType::Float32(),
        DataType::Float64(), DataType::String(), DataType::Binary(), DataType::Date32(),
        DataType::Timestamp(arrow::TimeUnit::kSecond),
        DataType::Timestamp(arrow::TimeUnit::kNano, "Europe/Paris"), DataType::Decimal128(38, 38),
        DataType::Decimal128(1, 0), DataType::FixedSizeBinary(1)}) {
    fields.push_back({std::string(1, static_cast<char>('a' + fields.size())), type});
  }
  EXPECT_EQ(TierabilityError(fields), "");
}

TEST(TierabilityTest, TablesOutOfTheLakeTakeAnyType) {
  const std::map<std::string, std::string> off = {{kEnabledProperty, "false"},
                                                  {kPartitionProperty, "bogus"}};
  EXPECT_EQ(TierabilityError({{"a", DataType::UInt64()},
                              {"b", DataType::Decimal128(10, -1)},
                              {"c", DataType::FixedSizeBinary(0)},
                              {"__offset", DataType::Int64()}},
                             off),
            "");
}

TEST(TierabilityTest, LakePropertiesAreChecked) {
  const std::vector<arrow::Field> fields = {{"id", DataType::Int64()},
                                            {"v", DataType::Float64()},
                                            {"name", DataType::String()},
                                            {"ts", DataType::Timestamp(arrow::TimeUnit::kMilli)}};
  auto partition_error = [&](std::string spec) {
    return TierabilityError(fields, {{kPartitionProperty, spec}});
  };
  const std::string prefix = "table 'ns.t' cannot go to the lake: lake.partition ";
  EXPECT_EQ(partition_error("bucket[4](id), day(ts)"), "");
  EXPECT_EQ(partition_error(" identity( name ) ,truncate[2](name), hour(ts), identity(__bucket)"),
            "");
  EXPECT_EQ(partition_error("bucket(4, id)"),
            prefix +
                "'bucket(4, id)': unknown partition transform 'bucket' (expected identity, "
                "bucket[N], truncate[W], year, month, day, hour or void; N and W from 1 to "
                "2147483647)");
  EXPECT_EQ(partition_error("day(nope)"),
            prefix + "'day(nope)': partition source column 'nope' is not in the schema");
  EXPECT_EQ(partition_error("bucket[4](v)"),
            prefix +
                "'bucket[4](v)': partition field 'v': transform bucket[4] does not apply to "
                "double");
  EXPECT_EQ(
      partition_error("day"),
      prefix + "'day': entry 'day' must be transform(column), e.g. day(ts) or bucket[16](id)");
  EXPECT_NE(partition_error("identity(id), identity(id)").find("used twice"), std::string::npos);
  // Unbalanced brackets are refused, naming the position, never read as "unpartitioned".
  EXPECT_EQ(partition_error("hour(ts"), prefix + "'hour(ts': '(' at position 4 is never closed");
  EXPECT_EQ(partition_error("day(ts))"), prefix + "'day(ts))': unmatched ')' at position 7");
  EXPECT_EQ(partition_error("bucket[4)(id)"),
            prefix + "'bucket[4)(id)': unmatched ')' at position 8");
  EXPECT_EQ(partition_error("day(ts), ]"), prefix + "'day(ts), ]': unmatched ']' at position 9");
  for (const char* bad : {"bucket[0](id)", "bucket[-1](id)", "bucket[4]x(id)", "bucket[](id)",
                          "bucket[99999999999](id)", "truncate[0](id)", "hour(id)"}) {
    EXPECT_NE(partition_error(bad).find(prefix), std::string::npos) << bad;
  }

  EXPECT_EQ(TierabilityError(fields, {{kFreshnessProperty, "500ms"}}), "");
  for (const char* bad : {"bogus", "-1s", "0", "1.5s", "99999999999999999m"}) {
    EXPECT_NE(TierabilityError(fields, {{kFreshnessProperty, bad}})
                  .find("lake.freshness must be a positive duration"),
              std::string::npos)
        << bad;
  }
  EXPECT_EQ(TierabilityError(fields, {{kEnabledProperty, "no"}}),
            R"(lake.enabled must be "true" or "false", got 'no')");
  EXPECT_EQ(TierabilityError(fields, {{"lake.partiton", "day(ts)"}}),
            "unknown table property 'lake.partiton' (the lake's are lake.enabled, "
            "lake.freshness, lake.partition, lake.compaction.delete-ratio, lake.changelog and "
            "lake.fresh-codec)");
  EXPECT_NE(TierabilityError(fields, {{kFreshCodecProperty, "brotli"}})
                .find("lake.fresh-codec: unknown compression 'brotli'"),
            std::string::npos);
  EXPECT_EQ(TierabilityError(fields, {{kFreshCodecProperty, "lz4"}}), "");
  EXPECT_EQ(TierabilityError(fields, {{kChangelogProperty, "yes"}}),
            R"(lake.changelog must be "true" or "false", got 'yes')");
  EXPECT_NE(TierabilityError(fields, {{kChangelogProperty, "true"}}).find("for primary-key tables"),
            std::string::npos);
  EXPECT_EQ(TierabilityError(fields, {{kChangelogProperty, "true"}, {kEnabledProperty, "false"}}),
            R"(lake.changelog "true" needs lake.enabled "true")");
  EXPECT_EQ(TierabilityError(fields, {{"owner", "me"}, {kEnabledProperty, "true"}}), "");
}

TEST(LakeSchemaTest, PartitionSpecSyntax) {
  auto log_schema = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int64(), false}, {"ts", DataType::Timestamp(arrow::TimeUnit::kMilli)}});
  auto schema = internal::MakeLakeSchema(log_schema).ValueOrDie();
  EXPECT_EQ(schema.iceberg_schema.fields().size(), 5u);
  auto spec = internal::ParsePartitionSpec("bucket[8](id), day(ts)", schema.iceberg_schema);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->fields().size(), 2u);
  EXPECT_TRUE(internal::ParsePartitionSpec("", schema.iceberg_schema)->is_unpartitioned());
  EXPECT_EQ(internal::ParsePartitionSpec("day", schema.iceberg_schema).status().message(),
            "lake.partition 'day': entry 'day' must be transform(column), e.g. day(ts) or "
            "bucket[16](id)");
  EXPECT_FALSE(internal::ParsePartitionSpec("day(nope)", schema.iceberg_schema).ok());
}

TEST(LakeSchemaTest, EvolvedSchemaKeepsFieldIdsAndNeverReusesThem) {
  catalog::TableDescriptor table;
  table.name = "ns.t";
  table.schema = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{{"id", DataType::Int64(), false},
                                {"a", DataType::Int32()},
                                {"c", DataType::String()},
                                {"x", DataType::Int16()}});
  table.ResetSchemaVersions();
  auto v0 = internal::EvolvedLakeSchema(table, nullptr, 0);
  ASSERT_TRUE(v0.ok()) << v0.status().ToString();
  const iceberg::Schema& lake0 = v0->iceberg_schema;
  EXPECT_EQ(lake0.schema_id(), 0);
  EXPECT_EQ(lake0.FindField("__bucket")->id, 5);
  // Rename c, widen a, drop x, add e first.
  auto altered = catalog::ApplyAlter(
      table, {{.op = catalog::SchemaChange::Op::kRenameColumn, .name = "c", .new_name = "c2"},
              {.op = catalog::SchemaChange::Op::kWidenType, .name = "a", .type = DataType::Int64()},
              {.op = catalog::SchemaChange::Op::kDropColumn, .name = "x"},
              {.op = catalog::SchemaChange::Op::kAddColumn,
               .name = "e",
               .type = DataType::String(),
               .first = true}});
  ASSERT_TRUE(altered.ok()) << altered.status().ToString();
  auto v1 = internal::EvolvedLakeSchema(*altered, &lake0, 7);
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  const iceberg::Schema& lake1 = v1->iceberg_schema;
  EXPECT_EQ(lake1.schema_id(), 1);
  std::vector<std::pair<std::string, int32_t>> ids;
  for (const auto& f : lake1.fields()) ids.emplace_back(f.name, f.id);
  EXPECT_EQ(ids, (std::vector<std::pair<std::string, int32_t>>{{"e", 8},
                                                               {"id", 1},
                                                               {"a", 2},
                                                               {"c2", 3},
                                                               {"__bucket", 5},
                                                               {"__offset", 6},
                                                               {"__timestamp", 7}}));
  EXPECT_EQ(lake1.FindField("a")->type, iceberg::Type::Long());
  EXPECT_EQ(internal::FieldIdOf(v1->arrow_schema->field(0)), 8);
  // The lake's ids of the current columns, seen from either schema.
  auto from0 = internal::LakeFieldIds(*altered, lake0);
  ASSERT_TRUE(from0.ok());
  EXPECT_EQ(*from0, (std::vector<std::optional<int32_t>>{std::nullopt, 1, 2, 3}));
  EXPECT_EQ(*internal::LakeFieldIds(*altered, lake1),
            (std::vector<std::optional<int32_t>>{8, 1, 2, 3}));
  // A lake schema that is no version of the table is refused.
  const iceberg::Schema stranger(9, lake0.fields());
  EXPECT_FALSE(internal::EvolvedLakeSchema(*altered, &stranger, 7).ok());

  // A file of schema 0 read in schema 1: e null, c under c2, a widened.
  arrow::Int64Builder id(DataType::Int64());
  arrow::Int32Builder a(DataType::Int32());
  arrow::BinaryBuilder c(DataType::String());
  arrow::Int32Builder x(DataType::Int32());
  arrow::Int32Builder bucket(DataType::Int32());
  arrow::Int64Builder offset(DataType::Int64());
  arrow::Int64Builder ts(v0->arrow_schema->field(6).type);
  ASSERT_TRUE(id.Append(7).ok() && a.Append(-3).ok() && c.Append("v").ok() && x.Append(1).ok() &&
              bucket.Append(0).ok() && offset.Append(0).ok() && ts.Append(0).ok());
  auto old = arrow::RecordBatch::Make(v0->arrow_schema, 1,
                                      {*id.Finish(), *a.Finish(), *c.Finish(), *x.Finish(),
                                       *bucket.Finish(), *offset.Finish(), *ts.Finish()});
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  auto read = internal::ToLakeSchema(*v1, *v0->arrow_schema, **old);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE((*read)->column(0).IsNull(0));
  EXPECT_EQ((*read)->column(1).Value<int64_t>(0), 7);
  EXPECT_EQ((*read)->column(2).Value<int64_t>(0), -3);
  EXPECT_EQ((*read)->column(3).GetView(0), "v");
}

}  // namespace
}  // namespace oxbow::lake
