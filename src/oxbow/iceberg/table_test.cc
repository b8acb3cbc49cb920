// IcebergTable: create, load, append, replace, expire, conflicts, metadata file retention.
#include "oxbow/iceberg/table.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "oxbow/common/fault_injection_file_system.h"
#include "oxbow/iceberg/io_internal.h"

namespace oxbow::iceberg {
namespace {

namespace stdfs = std::filesystem;

// A caller's own summary key, carried through every commit.
constexpr char kProgressKey[] = "app.progress";

class TableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/oxbow_iceberg_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    location_ = dir_ + "/t";
    fs_ = PosixFileSystem::Default();
    schema_ = Schema(0, {{1, "id", Type::Long(), true, ""}, {2, "s", Type::String(), false, ""}});
    spec_ = *PartitionSpec::Make(schema_, {{"id", Transform::Bucket(4), ""}});
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  DataFile File(const std::string& name, int64_t rows, int64_t id) {
    DataFile f;
    f.file_path = location_ + "/data/" + name;
    f.record_count = rows;
    f.file_size_in_bytes = 100 * rows;
    f.partition = *spec_.PartitionFor(schema_, {{1, Literal(id)}});
    return f;
  }

  std::unique_ptr<IcebergTable> CreateTable(std::map<std::string, std::string> props = {}) {
    auto t = IcebergTable::Create(fs_, location_, schema_, spec_, props);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return std::move(*t);
  }

  static std::vector<std::string> LivePaths(const IcebergTable& t) {
    auto live = t.LiveEntries();
    EXPECT_TRUE(live.ok()) << live.status().ToString();
    std::vector<std::string> out;
    for (const auto& e : *live) out.push_back(stdfs::path(e.data_file.file_path).filename());
    std::sort(out.begin(), out.end());
    return out;
  }

  int CountFiles(const std::string& suffix) {
    int n = 0;
    for (const auto& e : stdfs::directory_iterator(location_ + "/metadata")) {
      std::string name = e.path().filename();
      if (name.size() >= suffix.size() && name.ends_with(suffix)) ++n;
    }
    return n;
  }

  std::string dir_, location_;
  std::shared_ptr<FileSystem> fs_;
  Schema schema_;
  PartitionSpec spec_;
};

TEST_F(TableTest, CreateLoadAndAppend) {
  auto t = CreateTable();
  EXPECT_EQ(t->version(), 1);
  EXPECT_EQ(t->CurrentSnapshot(), nullptr);
  EXPECT_TRUE(stdfs::exists(location_ + "/metadata/v1.metadata.json"));
  EXPECT_EQ(*ReadWholeFile(fs_.get(), location_ + "/metadata/version-hint.text"), "1");
  EXPECT_EQ(IcebergTable::Create(fs_, location_, schema_, spec_).status().code(),
            StatusCode::kAlreadyExists);

  auto s1 = t->AppendFiles({File("a", 10, 1), File("b", 20, 2)}, {{kProgressKey, "{\"0\":30}"}});
  ASSERT_TRUE(s1.ok()) << s1.status().ToString();
  auto s2 = t->AppendFiles({File("c", 5, 3)}, {{kProgressKey, "{\"0\":35}"}});
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(t->version(), 3);
  const Snapshot* snap = t->CurrentSnapshot();
  ASSERT_NE(snap, nullptr);
  EXPECT_EQ(snap->snapshot_id, *s2);
  EXPECT_EQ(snap->parent_snapshot_id, *s1);
  EXPECT_EQ(snap->sequence_number, 2);
  EXPECT_EQ(snap->operation(), "append");
  EXPECT_EQ(snap->summary.at("total-records"), "35");
  EXPECT_EQ(snap->summary.at("total-data-files"), "3");
  EXPECT_EQ(snap->summary.at(kProgressKey), "{\"0\":35}");

  // The second snapshot reuses the first manifest by reference.
  auto list = ReadManifestList(fs_.get(), snap->manifest_list);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].sequence_number, 2);
  EXPECT_EQ((*list)[1].sequence_number, 1);
  EXPECT_EQ((*list)[1].added_snapshot_id, *s1);

  auto loaded = IcebergTable::Load(fs_, location_);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->version(), 3);
  EXPECT_EQ((*loaded)->metadata().table_uuid, t->metadata().table_uuid);
  EXPECT_EQ(LivePaths(**loaded), (std::vector<std::string>{"a", "b", "c"}));
  auto live = (*loaded)->LiveEntries();
  for (const auto& e : *live) {
    EXPECT_EQ(*e.sequence_number, e.data_file.file_path.ends_with("c") ? 2 : 1);
  }
  EXPECT_EQ(IcebergTable::Load(fs_, dir_ + "/missing").status().code(), StatusCode::kNotFound);
}

TEST_F(TableTest, SetCurrentSchemaAddsASchemaAndSnapshotsRecordIt) {
  auto t = CreateTable();
  ASSERT_TRUE(t->AppendFiles({File("a", 10, 1)}).ok());
  const Schema evolved(3, {{1, "id", Type::Long(), true, ""},
                           {3, "s2", Type::String(), false, ""},
                           {4, "n", Type::Int(), false, ""}});
  ASSERT_TRUE(t->SetCurrentSchema(evolved).ok());
  EXPECT_EQ(t->version(), 3);
  EXPECT_EQ(t->metadata().current_schema_id, 3);
  EXPECT_EQ(t->metadata().last_column_id, 4);
  ASSERT_EQ(t->metadata().schemas.size(), 2u);
  EXPECT_EQ(t->metadata().CurrentSnapshot()->schema_id, 0);  // the snapshot before it
  ASSERT_TRUE(t->SetCurrentSchema(evolved).ok());
  EXPECT_EQ(t->version(), 3) << "already current: no commit";
  auto s = t->AppendFiles({File("b", 5, 2)});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(t->CurrentSnapshot()->schema_id, 3);
  auto loaded = IcebergTable::Load(fs_, location_);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->schema(), evolved);
  EXPECT_EQ(LivePaths(**loaded), (std::vector<std::string>{"a", "b"}));
  // An id in use with other fields, and a schema the partition spec cannot use, are refused.
  EXPECT_FALSE(t->SetCurrentSchema(Schema(0, {{1, "id", Type::Long(), true, ""}})).ok());
  EXPECT_FALSE(t->SetCurrentSchema(Schema(5, {{2, "s", Type::String(), false, ""}})).ok());
  EXPECT_EQ(t->metadata().current_schema_id, 3);
}

TEST_F(TableTest, LoadProbesPastAStaleHint) {
  auto t = CreateTable();
  ASSERT_TRUE(t->AppendFiles({File("a", 1, 1)}).ok());
  ASSERT_TRUE(
      WriteWholeFile(fs_.get(), location_ + "/metadata/version-hint.text", "1", false).ok());
  auto loaded = IcebergTable::Load(fs_, location_);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->version(), 2);
  stdfs::remove(location_ + "/metadata/version-hint.text");
  EXPECT_EQ((*IcebergTable::Load(fs_, location_))->version(), 2);
}

TEST_F(TableTest, ConcurrentCommitsToOneVersionDoNotOverwrite) {
  auto a = CreateTable();
  auto b = IcebergTable::Load(fs_, location_).MoveValueUnsafe();
  TableOptions once;
  once.commit_attempts = 1;
  auto c = IcebergTable::Load(fs_, location_, once).MoveValueUnsafe();
  ASSERT_TRUE(a->AppendFiles({File("a", 1, 1)}).ok());
  // c still believes version 1 is the newest; its publish of v2 must fail, not overwrite.
  auto conflict = c->AppendFiles({File("c", 1, 3)});
  EXPECT_EQ(conflict.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(conflict.status().message().find("conflict"), std::string::npos);
  // b retries on top of a's commit: both files are live.
  ASSERT_TRUE(b->AppendFiles({File("b", 1, 2)}).ok());
  EXPECT_EQ(b->version(), 3);
  EXPECT_EQ(LivePaths(*b), (std::vector<std::string>{"a", "b"}));
  // No temporary metadata files are left behind.
  EXPECT_EQ(CountFiles(".tmp"), 0);
}

TEST_F(TableTest, ReplaceRewritesOnlyTouchedManifests) {
  auto t = CreateTable();
  ASSERT_TRUE(t->AppendFiles({File("a", 10, 1), File("b", 20, 2)}).ok());
  ASSERT_TRUE(t->AppendFiles({File("c", 5, 3)}).ok());
  auto r =
      t->ReplaceFiles({location_ + "/data/a"}, {File("a2", 10, 1)}, {{"oxbow.compaction", "1"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Snapshot* snap = t->CurrentSnapshot();
  EXPECT_EQ(snap->operation(), "replace");
  EXPECT_EQ(snap->summary.at("deleted-data-files"), "1");
  EXPECT_EQ(snap->summary.at("total-records"), "35");
  EXPECT_EQ(LivePaths(*t), (std::vector<std::string>{"a2", "b", "c"}));
  auto list = *ReadManifestList(fs_.get(), snap->manifest_list);
  ASSERT_EQ(list.size(), 3u);  // new files, untouched second manifest, rewritten first
  int rewritten = 0;
  for (const auto& m : list) {
    if (m.deleted_files_count == 1) {
      ++rewritten;
      EXPECT_EQ(m.existing_files_count, 1);
      EXPECT_EQ(m.min_sequence_number, 1);  // b keeps its data sequence number
    }
  }
  EXPECT_EQ(rewritten, 1);
  // A path that is not live fails and leaves no new version.
  int64_t version = t->version();
  EXPECT_TRUE(t->ReplaceFiles({location_ + "/data/a"}, {}).status().IsNotFound());
  EXPECT_EQ(t->version(), version);
  // The next append drops the manifest that only records deletions.
  ASSERT_TRUE(t->AppendFiles({File("d", 1, 4)}).ok());
  auto after = *ReadManifestList(fs_.get(), t->CurrentSnapshot()->manifest_list);
  for (const auto& m : after) EXPECT_GT(m.added_files_count + m.existing_files_count, 0);
  EXPECT_EQ(LivePaths(*t), (std::vector<std::string>{"a2", "b", "c", "d"}));
}

TEST_F(TableTest, RewriteManifestsMergesIntoOne) {
  auto t = CreateTable();
  ASSERT_TRUE(t->AppendFiles({File("a", 10, 1)}).ok());
  ASSERT_TRUE(t->AppendFiles({File("b", 20, 2), File("c", 5, 3)}).ok());
  ASSERT_TRUE(t->ReplaceFiles({location_ + "/data/a"}, {File("a2", 10, 1)}).ok());
  auto none = t->RewriteManifests(10);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  const int64_t seq_before = t->metadata().last_sequence_number;
  auto merged = t->RewriteManifests(2, {{kProgressKey, "[1]"}});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  ASSERT_TRUE(merged->has_value());
  const Snapshot* snap = t->CurrentSnapshot();
  EXPECT_EQ(snap->operation(), "replace");
  EXPECT_EQ(snap->summary.at(kProgressKey), "[1]");
  EXPECT_EQ(snap->summary.at("total-records"), "35");
  auto list = *ReadManifestList(fs_.get(), snap->manifest_list);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].existing_files_count, 3);
  EXPECT_EQ(list[0].deleted_files_count, 0);
  EXPECT_LE(list[0].min_sequence_number, seq_before);  // data keeps its sequence numbers
  EXPECT_EQ(LivePaths(*t), (std::vector<std::string>{"a2", "b", "c"}));
}

TEST_F(TableTest, ExpireSnapshotsDeletesUnreachableFiles) {
  auto t = CreateTable();
  stdfs::create_directories(location_ + "/data");
  for (const char* name : {"a", "b", "a2"}) {
    ASSERT_TRUE(WriteWholeFile(fs_.get(), location_ + "/data/" + name, "x", false).ok());
  }
  ASSERT_TRUE(t->AppendFiles({File("a", 1, 1)}).ok());
  ASSERT_TRUE(t->AppendFiles({File("b", 1, 2)}).ok());
  ASSERT_TRUE(t->ReplaceFiles({location_ + "/data/a"}, {File("a2", 1, 1)}).ok());
  int64_t current = t->CurrentSnapshot()->snapshot_id;
  ExpireOptions keep_all;
  keep_all.older_than_ms = 0;
  EXPECT_EQ(t->ExpireSnapshots(keep_all)->expired_snapshots, 0);
  auto r = t->ExpireSnapshots({});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->expired_snapshots, 2);
  EXPECT_EQ(r->deleted_manifest_lists, 2);
  EXPECT_EQ(r->deleted_data_files, 1);  // a, replaced by a2
  EXPECT_FALSE(stdfs::exists(location_ + "/data/a"));
  EXPECT_TRUE(stdfs::exists(location_ + "/data/b"));
  EXPECT_TRUE(stdfs::exists(location_ + "/data/a2"));
  ASSERT_EQ(t->metadata().snapshots.size(), 1u);
  EXPECT_EQ(t->CurrentSnapshot()->snapshot_id, current);
  EXPECT_EQ(t->metadata().snapshot_log.size(), 1u);
  EXPECT_EQ(LivePaths(*t), (std::vector<std::string>{"a2", "b"}));
  // The remaining list and its manifests: a2's, b's, and the one recording a's deletion.
  EXPECT_EQ(CountFiles(".avro"), 4);
}

TEST_F(TableTest, OldMetadataFilesAreRemovedBeyondPreviousVersionsMax) {
  auto t = CreateTable({{kPreviousVersionsMax, "2"}});
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(t->AppendFiles({File("f" + std::to_string(i), 1, i)}).ok());
  EXPECT_EQ(t->version(), 6);
  EXPECT_EQ(t->metadata().metadata_log.size(), 2u);
  EXPECT_EQ(t->metadata().metadata_log.back().metadata_file,
            location_ + "/metadata/v5.metadata.json");
  EXPECT_EQ(CountFiles(".metadata.json"), 3);  // v4, v5, v6
  EXPECT_FALSE(stdfs::exists(location_ + "/metadata/v3.metadata.json"));
  auto keep = IcebergTable::Create(fs_, dir_ + "/u", schema_, spec_,
                                   {{kDeleteAfterCommit, "false"}, {kPreviousVersionsMax, "1"}});
  ASSERT_TRUE(keep.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*keep)->AppendFiles({}).ok());
  EXPECT_TRUE(stdfs::exists(dir_ + "/u/metadata/v1.metadata.json"));
  EXPECT_EQ((*keep)->metadata().metadata_log.size(), 1u);
}

TEST_F(TableTest, RowDeltaKeepsDeletesInTheirOwnManifestsThroughReplaceAndMerge) {
  auto t = CreateTable();
  ASSERT_TRUE(t->AppendFiles({File("a.parquet", 10, 1)}).ok());
  DataFile deletes = File("a-deletes.parquet", 3, 1);
  deletes.content = FileContent::kPositionDeletes;
  ASSERT_TRUE(t->RowDelta({File("b.parquet", 4, 1)}, {deletes}).ok());
  const Snapshot* snap = t->CurrentSnapshot();
  EXPECT_EQ(snap->operation(), "overwrite");
  EXPECT_EQ(snap->summary.at("total-data-files"), "2");
  EXPECT_EQ(snap->summary.at("total-delete-files"), "1");
  EXPECT_EQ(snap->summary.at("total-position-deletes"), "3");
  auto manifests = ReadManifestList(fs_.get(), snap->manifest_list);
  ASSERT_TRUE(manifests.ok());
  int delete_manifests = 0;
  for (const auto& m : *manifests) {
    if (m.content == 1) {
      ++delete_manifests;
      EXPECT_EQ(m.sequence_number, snap->sequence_number);
    }
  }
  EXPECT_EQ(delete_manifests, 1);
  // A data file in the delete list, or a delete file in the data list, is refused.
  EXPECT_TRUE(t->RowDelta({deletes}, {}).status().IsInvalid());
  EXPECT_TRUE(t->RowDelta({}, {File("c.parquet", 1, 1)}).status().IsInvalid());
  // Merging manifests keeps one data and one delete manifest.
  ASSERT_TRUE(t->RewriteManifests(2).ok());
  manifests = ReadManifestList(fs_.get(), t->CurrentSnapshot()->manifest_list);
  ASSERT_TRUE(manifests.ok());
  ASSERT_EQ(manifests->size(), 2u);
  EXPECT_NE((*manifests)[0].content, (*manifests)[1].content);
  // Compaction removes a data file and the delete file it made obsolete.
  ASSERT_TRUE(
      t->ReplaceFiles({location_ + "/data/a.parquet", deletes.file_path}, {File("c.parquet", 7, 1)})
          .ok());
  EXPECT_EQ(LivePaths(*t), (std::vector<std::string>{"b.parquet", "c.parquet"}));
  EXPECT_EQ(t->CurrentSnapshot()->summary.at("total-delete-files"), "0");
  EXPECT_EQ(t->CurrentSnapshot()->summary.at("removed-delete-files"), "1");
}

// Partition evolution: bucket[4](id) -> unpartitioned -> bucket[8](id) -> bucket[4](id) again.
TEST_F(TableTest, SetDefaultSpecEvolvesThePartitioning) {
  auto t = CreateTable();
  ASSERT_TRUE(t->AppendFiles({File("a", 10, 1)}).ok());
  auto unpartitioned = t->SetDefaultSpec(PartitionSpec::Unpartitioned());
  ASSERT_TRUE(unpartitioned.ok()) << unpartitioned.status().ToString();
  EXPECT_EQ(unpartitioned->spec_id(), 1);
  EXPECT_EQ(t->spec().spec_id(), 1);
  EXPECT_EQ(t->metadata().last_partition_id, 1000);
  DataFile b = File("b", 5, 2);
  b.partition.clear();  // written after the alter: the new (empty) tuple
  ASSERT_TRUE(t->AppendFiles({b}).ok());

  auto bucket8 =
      t->SetDefaultSpec(*PartitionSpec::Make(schema_, {{"id", Transform::Bucket(8), ""}}));
  ASSERT_TRUE(bucket8.ok()) << bucket8.status().ToString();
  ASSERT_EQ(bucket8->fields().size(), 1u);
  // A new field: a new id, and a name no earlier field has.
  EXPECT_EQ(bucket8->spec_id(), 2);
  EXPECT_EQ(bucket8->fields()[0].field_id, 1001);
  EXPECT_EQ(bucket8->fields()[0].name, "id_bucket_8");
  EXPECT_EQ(t->metadata().last_partition_id, 1001);
  DataFile c = File("c", 3, 3);
  c.partition = *bucket8->PartitionFor(schema_, {{1, Literal(int64_t{3})}});
  c.spec_id = 2;
  // Files of an earlier spec may still be added (a compaction keeping its inputs' spec).
  DataFile d = File("d", 2, 4);
  d.spec_id = 0;
  ASSERT_TRUE(t->AppendFiles({c, d}).ok());
  auto list = ReadManifestList(fs_.get(), t->CurrentSnapshot()->manifest_list);
  ASSERT_TRUE(list.ok());
  std::vector<int32_t> spec_ids;
  for (const auto& m : *list) spec_ids.push_back(m.partition_spec_id);
  std::sort(spec_ids.begin(), spec_ids.end());
  EXPECT_EQ(spec_ids, (std::vector<int32_t>{0, 0, 1, 2})) << "one manifest per spec";
  auto live = t->LiveEntries();
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  std::map<std::string, std::pair<int32_t, size_t>> by_file;
  for (const auto& e : *live) {
    by_file[stdfs::path(e.data_file.file_path).filename()] = {*e.data_file.spec_id,
                                                              e.data_file.partition.size()};
  }
  EXPECT_EQ(by_file["a"], std::make_pair(0, size_t{1}));
  EXPECT_EQ(by_file["b"], std::make_pair(1, size_t{0}));
  EXPECT_EQ(by_file["c"], std::make_pair(2, size_t{1}));
  EXPECT_EQ(by_file["d"], std::make_pair(0, size_t{1}));
  // A file of a spec the table lacks is refused; so is a tuple of another spec's shape.
  DataFile unknown = File("e", 1, 1);
  unknown.spec_id = 7;
  EXPECT_FALSE(t->AppendFiles({unknown}).ok());
  DataFile mismatched = File("e", 1, 1);
  mismatched.spec_id = 1;
  EXPECT_TRUE(t->AppendFiles({mismatched}).status().IsInvalid());

  // Back to bucket[4]: the first spec again, no new spec or id.
  auto again = t->SetDefaultSpec(spec_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->spec_id(), 0);
  EXPECT_EQ(t->metadata().partition_specs.size(), 3u);
  EXPECT_EQ(t->metadata().last_partition_id, 1001);
  const int64_t version = t->version();
  ASSERT_TRUE(t->SetDefaultSpec(spec_).ok());
  EXPECT_EQ(t->version(), version) << "no commit when the spec is the default already";

  // Merging manifests keeps one manifest per spec; compaction across specs; expiry reads all.
  ASSERT_TRUE(t->RewriteManifests(2).ok());
  list = ReadManifestList(fs_.get(), t->CurrentSnapshot()->manifest_list);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 3u);
  ASSERT_TRUE(
      t->ReplaceFiles({location_ + "/data/b", location_ + "/data/c"}, {File("f", 8, 1)}).ok());
  EXPECT_EQ(LivePaths(*t), (std::vector<std::string>{"a", "d", "f"}));
  ASSERT_TRUE(t->ExpireSnapshots({.retain_last = 1}).ok());
  auto loaded = IcebergTable::Load(fs_, location_);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->spec().spec_id(), 0);
  EXPECT_EQ((*loaded)->metadata().partition_specs.size(), 3u);
  EXPECT_EQ(LivePaths(**loaded), (std::vector<std::string>{"a", "d", "f"}));
}

TEST_F(TableTest, EvolvePartitionSpecReusesIdsAndNames) {
  const Schema schema(0, {{1, "k", Type::Long(), false, ""},
                          {2, "ts", Type::Timestamp(), false, ""},
                          {3, "s", Type::String(), false, ""}});
  TableMetadata m;
  m.schemas = {schema};
  m.partition_specs = {*PartitionSpec::Make(
      schema, {{"ts", Transform::Day(), ""}, {"k", Transform::Bucket(4), ""}})};
  m.last_partition_id = 1001;
  auto make = [&](std::vector<PartitionFieldRequest> fields) {
    return EvolvePartitionSpec(m, *PartitionSpec::Make(schema, fields));
  };
  // Reordered with one field dropped, one kept, one new: kept fields keep their ids.
  PartitionSpec next = make({{"k", Transform::Bucket(4), ""}, {"ts", Transform::Hour(), ""}});
  EXPECT_EQ(next.spec_id(), 1);
  ASSERT_EQ(next.fields().size(), 2u);
  EXPECT_EQ(next.fields()[0].field_id, 1001);
  EXPECT_EQ(next.fields()[0].name, "k_bucket");
  EXPECT_EQ(next.fields()[1].field_id, 1002);
  EXPECT_EQ(next.fields()[1].name, "ts_hour");
  // The same fields as an existing spec: that spec.
  EXPECT_EQ(make({{"ts", Transform::Day(), ""}, {"k", Transform::Bucket(4), ""}}),
            m.partition_specs[0]);
  // A truncate of the same name and another width gets a suffix; ids stay unique.
  m.partition_specs.push_back(*PartitionSpec::Make(schema, {{"s", Transform::Truncate(2), ""}},
                                                   /*spec_id=*/1, /*first_field_id=*/1002));
  m.last_partition_id = 1002;
  PartitionSpec wider = make({{"s", Transform::Truncate(3), ""}});
  EXPECT_EQ(wider.spec_id(), 2);
  EXPECT_EQ(wider.fields()[0].name, "s_trunc_3");
  EXPECT_EQ(wider.fields()[0].field_id, 1003);
  // Unpartitioned is a spec like any other.
  EXPECT_TRUE(make({}).is_unpartitioned());
  EXPECT_EQ(make({}).spec_id(), 2);
}

TEST_F(TableTest, IdentifierFieldsRoundTripAndMustBeRequired) {
  Schema keyed(0, schema_.fields(), {1});
  ASSERT_TRUE(keyed.Validate().ok());
  auto parsed = Schema::FromJson(keyed.ToJson());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->identifier_field_ids(), std::vector<int32_t>{1});
  EXPECT_TRUE(Schema(0, schema_.fields(), {2}).Validate().IsInvalid());  // optional
  EXPECT_TRUE(Schema(0, schema_.fields(), {9}).Validate().IsInvalid());  // no such field
}

}  // namespace
}  // namespace oxbow::iceberg
