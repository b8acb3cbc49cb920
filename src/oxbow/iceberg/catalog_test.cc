// FileCatalog: locations, the no-replace swap, hint handling, listing; IcebergTable over it.
#include "oxbow/iceberg/catalog.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "oxbow/iceberg/io_internal.h"
#include "oxbow/iceberg/table.h"

namespace oxbow::iceberg {
namespace {

class FileCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/oxbow_catalog_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    warehouse_ = tmpl;
    catalog_ = std::make_shared<FileCatalog>(fs_, warehouse_);
  }
  void TearDown() override { std::filesystem::remove_all(warehouse_); }

  std::shared_ptr<FileSystem> fs_ = PosixFileSystem::Default();
  std::string warehouse_;
  std::shared_ptr<FileCatalog> catalog_;
  const TableIdentifier orders_{"shop", "orders"};
};

TEST(FileCatalogLocationTest, JoinsWarehouseNamespaceAndName) {
  auto fs = PosixFileSystem::Default();
  EXPECT_EQ(FileCatalog(fs, "/w").TableLocation({"ns", "t"}), "/w/ns/t");
  EXPECT_EQ(FileCatalog(fs, "/w/").TableLocation({"ns", "t"}), "/w/ns/t");
  EXPECT_EQ(FileCatalog(fs, "/w").TableLocation({"", "t"}), "/w/t");
  EXPECT_EQ(FileCatalog(fs, "file:///").TableLocation({"", "t"}), "file:///t");
  EXPECT_EQ(FileCatalog(fs, "").TableLocation({"", "t"}), "t");
  EXPECT_EQ((TableIdentifier{"ns", "t"}).ToString(), "ns.t");
}

TEST_F(FileCatalogTest, SwapPublishesVersionsAndRefusesALostRace) {
  EXPECT_TRUE(catalog_->CurrentMetadata(orders_).status().IsNotFound());
  EXPECT_FALSE(*catalog_->TableExists(orders_));

  auto v1 = catalog_->SwapMetadata(orders_, {}, "{\"v\":1}");
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->version, 1);
  EXPECT_EQ(v1->location, warehouse_ + "/shop/orders/metadata/v1.metadata.json");
  EXPECT_EQ(*ReadWholeFile(fs_.get(), v1->location), "{\"v\":1}");
  EXPECT_EQ(*ReadWholeFile(fs_.get(), warehouse_ + "/shop/orders/metadata/version-hint.text"), "1");

  // A writer still at "no metadata" loses, and v1 is untouched.
  auto stale = catalog_->SwapMetadata(orders_, {}, "{\"v\":\"stale\"}");
  EXPECT_EQ(stale.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(stale.status().message().find("commit conflict"), std::string::npos);
  EXPECT_EQ(*ReadWholeFile(fs_.get(), v1->location), "{\"v\":1}");

  auto v2 = catalog_->SwapMetadata(orders_, *v1, "{\"v\":2}");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2);
  auto current = catalog_->CurrentMetadata(orders_);
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->location, v2->location);
  EXPECT_EQ(current->version, 2);
  // No temporary files are left in metadata/.
  auto names = fs_->ListDir(warehouse_ + "/shop/orders/metadata");
  ASSERT_TRUE(names.ok());
  for (const auto& name : *names) {
    EXPECT_NE(name[0], '.') << name;
  }
}

TEST_F(FileCatalogTest, CurrentMetadataSurvivesABadOrStaleHint) {
  auto v1 = *catalog_->SwapMetadata(orders_, {}, "{}");
  auto v2 = *catalog_->SwapMetadata(orders_, v1, "{}");
  const std::string hint = warehouse_ + "/shop/orders/metadata/version-hint.text";
  for (const char* text : {"1", "not a number", "99999999999999999999", "-3", ""}) {
    ASSERT_TRUE(WriteWholeFile(fs_.get(), hint, text, false).ok());
    auto current = catalog_->CurrentMetadata(orders_);
    ASSERT_TRUE(current.ok()) << text;
    EXPECT_EQ(current->version, 2) << text;
  }
  std::filesystem::remove(hint);
  EXPECT_EQ(catalog_->CurrentMetadata(orders_)->location, v2.location);
}

TEST_F(FileCatalogTest, ListsTablesWithMetadata) {
  ASSERT_TRUE(catalog_->SwapMetadata(orders_, {}, "{}").ok());
  ASSERT_TRUE(catalog_->SwapMetadata({"shop", "items"}, {}, "{}").ok());
  std::filesystem::create_directories(warehouse_ + "/shop/not_a_table/metadata");
  auto tables = catalog_->ListTables("shop");
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(*tables, (std::vector<TableIdentifier>{{"shop", "items"}, {"shop", "orders"}}));
  EXPECT_TRUE(catalog_->ListTables("nowhere")->empty());
}

TEST_F(FileCatalogTest, IcebergTableCommitsThroughTheCatalog) {
  Schema schema(0, {{1, "id", Type::Long(), true, ""}});
  auto created = IcebergTable::Create(fs_, catalog_, orders_, schema, PartitionSpec());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)->location(), warehouse_ + "/shop/orders");
  ASSERT_TRUE((*created)->AppendFiles({}).ok());
  auto current = catalog_->CurrentMetadata(orders_);
  EXPECT_EQ(current->version, 2);
  EXPECT_EQ((*created)->metadata_file(), current->location);
  EXPECT_EQ(IcebergTable::Create(fs_, catalog_, orders_, schema, PartitionSpec()).status().code(),
            StatusCode::kAlreadyExists);
  auto loaded = IcebergTable::Load(fs_, catalog_, orders_);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->version(), 2);
  EXPECT_EQ((*loaded)->metadata().metadata_log.size(), 1u);
  EXPECT_EQ((*loaded)->metadata().metadata_log[0].metadata_file,
            warehouse_ + "/shop/orders/metadata/v1.metadata.json");
}

// PointerCatalog over a LocalPointerStore: metadata files written once under new names, the
// pointer kept locally.
class PointerCatalogTest : public FileCatalogTest {
 protected:
  void SetUp() override {
    FileCatalogTest::SetUp();
    pointers_ = warehouse_ + "/pointers";
    pointer_catalog_ = std::make_shared<PointerCatalog>(
        fs_, warehouse_ + "/objects", std::make_shared<LocalPointerStore>(fs_, pointers_));
  }
  std::string pointers_;
  std::shared_ptr<PointerCatalog> pointer_catalog_;
};

TEST_F(PointerCatalogTest, SwapsWithoutRenameAndRefusesAStaleBase) {
  EXPECT_EQ(pointer_catalog_->TableLocation(orders_), warehouse_ + "/objects/shop/orders");
  EXPECT_FALSE(*pointer_catalog_->TableExists(orders_));
  auto v1 = pointer_catalog_->SwapMetadata(orders_, {}, "{\"v\":1}");
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->version, 1);
  EXPECT_EQ(v1->location.rfind(warehouse_ + "/objects/shop/orders/metadata/00001-", 0), 0u)
      << v1->location;
  EXPECT_EQ(*ReadWholeFile(fs_.get(), v1->location), "{\"v\":1}");
  auto current = pointer_catalog_->CurrentMetadata(orders_);
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->location, v1->location);

  EXPECT_EQ(pointer_catalog_->SwapMetadata(orders_, {}, "{}").status().code(),
            StatusCode::kAlreadyExists);
  auto v2 = pointer_catalog_->SwapMetadata(orders_, *v1, "{\"v\":2}");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2);
  EXPECT_NE(v2->location, v1->location);
  EXPECT_EQ(pointer_catalog_->SwapMetadata(orders_, *v1, "{}").status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(pointer_catalog_->CurrentMetadata(orders_)->location, v2->location);
  auto tables = pointer_catalog_->ListTables("shop");
  ASSERT_TRUE(tables.ok());
  ASSERT_EQ(tables->size(), 1u);
  EXPECT_EQ((*tables)[0], orders_);
  EXPECT_TRUE(pointer_catalog_->ListTables("other")->empty());

  // Once the table's files are removed the table is gone, and may be created anew.
  ASSERT_TRUE(fs_->RemoveAll(pointer_catalog_->TableLocation(orders_)).ok());
  EXPECT_TRUE(pointer_catalog_->CurrentMetadata(orders_).status().IsNotFound());
  auto again = pointer_catalog_->SwapMetadata(orders_, {}, "{\"v\":\"new\"}");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->version, 1);
}

TEST_F(PointerCatalogTest, CorruptPointerIsReported) {
  ASSERT_TRUE(fs_->CreateDirs(pointers_).ok());
  ASSERT_TRUE(WriteWholeFile(fs_.get(), pointers_ + "/shop.orders.json", "not json", true).ok());
  EXPECT_EQ(pointer_catalog_->CurrentMetadata(orders_).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace oxbow::iceberg
