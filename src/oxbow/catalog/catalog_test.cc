#include "oxbow/catalog/catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace oxbow::catalog {
namespace {

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("oxbow-catalog-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

constexpr const char* kCreate = R"json({"table":"ns.t","schema":{"fields":[
  {"name":"id","type":"int64","nullable":false},
  {"name":"ts","type":"timestamp[us, tz=UTC]"},
  {"name":"price","type":"decimal128(10, 2)","metadata":{"k":"v"}}]},
  "buckets":4,"bucket_key":["id"],"properties":{"lake.enabled":"false"}})json";

TEST(CatalogJsonTest, ParsesCreateTable) {
  auto req = ParseCreateTable(kCreate);
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  const TableDescriptor& t = req->table;
  EXPECT_EQ(t.name, "ns.t");
  EXPECT_EQ(t.buckets, 4);
  EXPECT_EQ(t.schema->ToString(),
            "id: int64 not null\nts: timestamp[us, tz=UTC]\nprice: decimal128(10, 2)");
  EXPECT_EQ(t.schema->field(2).metadata, (arrow::KeyValueMetadata{{"k", "v"}}));
  EXPECT_EQ(t.BucketKeyIndices(), std::vector<int>{0});
  EXPECT_EQ(t.properties.at("lake.enabled"), "false");
  EXPECT_FALSE(req->if_not_exists);

  auto again = DescriptorFromJson(DescriptorToJson(t));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->schema->Equals(*t.schema, /*check_metadata=*/true));
  EXPECT_EQ(again->bucket_key, t.bucket_key);
}

TEST(CatalogJsonTest, ErrorsNameTheProblem) {
  EXPECT_EQ(ParseCreateTable("{").status().message(), "create_table body is not valid JSON");
  EXPECT_EQ(
      ParseCreateTable(R"({"table":"nodot","schema":{"fields":[]}})").status().message(),
      "table name 'nodot' must be 'namespace.table', each part 1-128 letters, digits, '_' or '-'");
  EXPECT_EQ(ParseCreateTable(R"({"table":"a.b","schema":{"fields":[{"name":"x","type":"int99"}]}})")
                .status()
                .message(),
            "field 'x': unknown type 'int99'");
  EXPECT_EQ(
      ParseCreateTable(
          R"({"table":"a.b","schema":{"fields":[{"name":"x","type":"int8"}]},"bucket_key":["y"]})")
          .status()
          .message(),
      "key column 'y' is not in the schema");
  EXPECT_TRUE(ParseCreateTable(
                  R"({"table":"a.b","schema":{"fields":[{"name":"x","type":"int8"}]},"buckets":0})")
                  .status()
                  .IsInvalid());
}

TEST(CatalogTest, PersistsAcrossReopen) {
  TempDir dir;
  {
    auto catalog = Catalog::Open(PosixFileSystem::Default(), dir.path()).ValueOrDie();
    auto req = ParseCreateTable(kCreate).ValueOrDie();
    auto created = catalog->Create(req.table, false);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(created->table_id, 1);
    EXPECT_GT(created->created_ms, 0);
    EXPECT_TRUE(catalog->Create(req.table, false).status().code() == StatusCode::kAlreadyExists);
    EXPECT_EQ(catalog->Create(req.table, true)->table_id, 1);
    req.table.name = "ns.other";
    ASSERT_TRUE(catalog->Create(req.table, false).ok());
    ASSERT_TRUE(catalog->Drop("ns.other").ok());
    EXPECT_TRUE(catalog->Drop("ns.other").IsNotFound());
  }
  auto reopened = Catalog::Open(PosixFileSystem::Default(), dir.path()).ValueOrDie();
  auto tables = reopened->List();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].name, "ns.t");
  EXPECT_EQ(tables[0].schema->num_fields(), 3);
  EXPECT_TRUE(reopened->Get("ns.missing").status().IsNotFound());
  // Ids are never reused, even after a drop and a restart.
  auto req = ParseCreateTable(kCreate).ValueOrDie();
  req.table.name = "ns.third";
  EXPECT_EQ(reopened->Create(req.table, false)->table_id, 3);
}

TEST(CatalogTest, CorruptCatalogIsReported) {
  TempDir dir;
  std::filesystem::create_directories(dir.path());
  std::ofstream(dir.path() + "/catalog.json") << "{\"tables\": 5}";
  auto catalog = Catalog::Open(PosixFileSystem::Default(), dir.path());
  EXPECT_TRUE(catalog.status().IsCorruption());
}

TableDescriptor Created() { return ParseCreateTable(kCreate).ValueOrDie().table; }

Result<TableDescriptor> Alter(const TableDescriptor& t, std::string_view changes) {
  ASSIGN_OR_RAISE(auto req,
                  ParseAlterTable(R"({"table":"ns.t","changes":)" + std::string(changes) + "}"));
  return ApplyAlter(t, req.changes);
}

TEST(AlterTest, NewTableIsVersionZeroWithFieldIdsFromOne) {
  TableDescriptor t = Created();
  EXPECT_EQ(t.schema_id, 0);
  EXPECT_EQ(t.field_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(t.last_field_id, 3);
  EXPECT_TRUE(t.previous_schemas.empty());
}

TEST(AlterTest, ColumnChangesMakeOneNewVersionAndKeepFieldIds) {
  TableDescriptor t = Created();
  auto a = Alter(t, R"j([{"op":"add_column","name":"note","type":"string","after":"id"},
                        {"op":"drop_column","name":"ts"},
                        {"op":"rename_column","name":"price","new_name":"amount"},
                        {"op":"widen_type","name":"amount","type":"decimal128(12, 2)"}])j");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->schema_id, 1);
  EXPECT_EQ(a->schema->ToString(), "id: int64 not null\nnote: string\namount: decimal128(12, 2)");
  EXPECT_EQ(a->field_ids, (std::vector<int32_t>{1, 4, 3}));
  EXPECT_EQ(a->last_field_id, 4);
  ASSERT_EQ(a->previous_schemas.size(), 1u);
  EXPECT_EQ(a->previous_schemas[0].schema_id, 0);
  EXPECT_TRUE(a->SchemaById(0).ValueOrDie().schema->Equals(*t.schema));

  // A dropped column's id is never given again, even to a column of the same name.
  auto b = Alter(*a, R"j([{"op":"add_column","name":"ts","type":"int32","first":true}])j");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->schema_id, 2);
  EXPECT_EQ(b->field_ids, (std::vector<int32_t>{5, 1, 4, 3}));

  // Versions survive the JSON round trip of the durable catalog.
  auto again = DescriptorFromJson(DescriptorToJson(*b));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->schema_id, 2);
  EXPECT_EQ(again->field_ids, b->field_ids);
  EXPECT_EQ(again->last_field_id, 5);
  ASSERT_EQ(again->previous_schemas.size(), 2u);
  EXPECT_EQ(again->previous_schemas[1].field_ids, (std::vector<int32_t>{1, 4, 3}));
  EXPECT_TRUE(again->previous_schemas[1].schema->Equals(*a->schema));

  // Properties alone make no new version.
  auto c = Alter(*b, R"j([{"op":"set_properties","properties":{"x":"1","lake.enabled":null}}])j");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->schema_id, 2);
  EXPECT_EQ(c->properties, (std::map<std::string, std::string>{{"x", "1"}}));
}

TEST(AlterTest, RefusalsNameTheRule) {
  TableDescriptor t = Created();
  auto message = [&](std::string_view changes) { return Alter(t, changes).status().message(); };
  EXPECT_EQ(message(R"j([{"op":"drop_column","name":"id"}])j"),
            "change 1: column 'id' is part of the primary or bucket key, which cannot be dropped");
  EXPECT_EQ(message(R"j([{"op":"add_column","name":"n","type":"int32","nullable":false}])j"),
            "change 1: add_column 'n': a new column must be nullable (rows written before it have "
            "no value for it)");
  EXPECT_EQ(message(R"j([{"op":"widen_type","name":"ts","type":"int64"}])j"),
            "change 1: cannot change column 'ts' from timestamp[us, tz=UTC] to int64: a type may "
            "only widen (int8 -> int16 -> int32 -> int64, float -> double, decimal128 precision "
            "up with the same scale)");
  EXPECT_EQ(message(R"j([{"op":"widen_type","name":"price","type":"decimal128(12, 3)"}])j")
                .find("cannot change column 'price' from decimal128(10, 2) to decimal128(12, 3)"),
            10u);
  EXPECT_EQ(message(R"j([{"op":"add_column","name":"n","type":"int32"},
                        {"op":"rename_column","name":"missing","new_name":"m"}])j"),
            "change 2: column 'missing' does not exist");
  EXPECT_EQ(message(R"j([{"op":"rename_column","name":"ts","new_name":"price"}])j"),
            "change 1: rename to 'price': that column already exists");
  EXPECT_EQ(message(R"j([{"op":"retype","name":"ts"}])j"),
            "change 1: unknown op 'retype' (known: add_column, drop_column, rename_column, "
            "widen_type, make_optional, set_column_doc, set_properties)");
  EXPECT_EQ(message(R"j([{"op":"set_column_doc","name":"ts"}])j"),
            "change 1: set_column_doc needs \"doc\" (a string, or null to remove it)");
  EXPECT_EQ(message(R"j([{"op":"set_column_doc","name":"ts","doc":7}])j"),
            "change 1: set_column_doc \"doc\" must be a string or null");
  EXPECT_EQ(message("[]"), "\"changes\" must be a non-empty list");
}

// A primary-key table's merge properties name columns: they follow a rename and go with a drop,
// and a versioned table's version column stays.
TEST(AlterTest, MergePropertiesFollowTheirColumns) {
  TableDescriptor t = Created();
  t.properties = {{"merge_engine", "aggregate"},
                  {"fields.price.agg", "sum"},
                  {"fields.price.listagg_delimiter", ";"},
                  {"fields.pricey.agg", "max"}};
  auto a = Alter(t, R"j([{"op":"rename_column","name":"price","new_name":"total"}])j");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->properties,
            (std::map<std::string, std::string>{{"merge_engine", "aggregate"},
                                                {"fields.total.agg", "sum"},
                                                {"fields.total.listagg_delimiter", ";"},
                                                {"fields.pricey.agg", "max"}}));
  auto b = Alter(*a, R"j([{"op":"drop_column","name":"total"}])j");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->properties, (std::map<std::string, std::string>{{"merge_engine", "aggregate"},
                                                               {"fields.pricey.agg", "max"}}));
  t.properties = {{"merge_engine", "versioned"}, {"merge_engine.version_column", "price"}};
  EXPECT_EQ(Alter(t, R"j([{"op":"drop_column","name":"price"}])j").status().message(),
            "change 1: column 'price' is the version column of the versioned merge engine "
            "(merge_engine.version_column), which cannot be dropped");
  auto c = Alter(t, R"j([{"op":"rename_column","name":"price","new_name":"v"},
                        {"op":"widen_type","name":"v","type":"decimal128(12, 2)"}])j");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->properties.at("merge_engine.version_column"), "v");
}

TEST(AlterTest, ColumnDocsAreFieldMetadataKeptPerVersion) {
  auto created = ParseCreateTable(R"j({"table":"ns.t","schema":{"fields":[
      {"name":"id","type":"int64","nullable":false,"doc":"the order id"},
      {"name":"price","type":"int32","metadata":{"k":"v"}}]}})j");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  TableDescriptor t = created->table;
  EXPECT_EQ(FieldDoc(t.schema->field(0)), "the order id");
  EXPECT_EQ(arrow::FindMetadata(t.schema->field(0).metadata, "doc"), "the order id");
  EXPECT_FALSE(FieldDoc(t.schema->field(1)));
  // The JSON form shows the doc as "doc", apart from the other metadata.
  EXPECT_NE(DescriptorToJson(t).find(R"("doc":"the order id")"), std::string::npos);
  EXPECT_EQ(DescriptorToJson(t).find(R"("metadata":{"doc")"), std::string::npos);

  auto a = Alter(t, R"j([{"op":"set_column_doc","name":"price","doc":"in cents"},
                        {"op":"set_column_doc","name":"id","doc":null},
                        {"op":"add_column","name":"note","type":"string","doc":"free text"}])j");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->schema_id, 1);
  EXPECT_FALSE(FieldDoc(a->schema->field(0)));
  EXPECT_EQ(FieldDoc(a->schema->field(1)), "in cents");
  EXPECT_EQ(arrow::FindMetadata(a->schema->field(1).metadata, "k"), "v");
  EXPECT_EQ(FieldDoc(a->schema->field(2)), "free text");
  // The earlier version keeps its docs, through the durable JSON form too.
  auto again = DescriptorFromJson(DescriptorToJson(*a)).ValueOrDie();
  EXPECT_TRUE(again.schema->Equals(*a->schema, true));
  EXPECT_EQ(FieldDoc(again.SchemaById(0).ValueOrDie().schema->field(0)), "the order id");

  // Setting the doc a column already has makes no new version.
  auto same = Alter(*a, R"j([{"op":"set_column_doc","name":"price","doc":"in cents"}])j");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->schema_id, 1);

  auto both = ParseCreateTable(R"j({"table":"ns.t","schema":{"fields":[
      {"name":"id","type":"int64","doc":"a","metadata":{"doc":"b"}}]}})j");
  EXPECT_EQ(both.status().message(),
            "field 'id': give its doc as \"doc\" or as metadata \"doc\", not both");
}

TEST(AlterTest, Widenings) {
  auto t = [](const char* s) { return arrow::DataType::Parse(s).ValueOrDie(); };
  EXPECT_TRUE(IsWidening(t("int8"), t("int16")));
  EXPECT_TRUE(IsWidening(t("int8"), t("int64")));
  EXPECT_TRUE(IsWidening(t("int32"), t("int64")));
  EXPECT_TRUE(IsWidening(t("float"), t("double")));
  EXPECT_TRUE(IsWidening(t("decimal128(10, 2)"), t("decimal128(20, 2)")));
  EXPECT_FALSE(IsWidening(t("int64"), t("int32")));
  EXPECT_FALSE(IsWidening(t("date32[day]"), t("timestamp[us]")));
  EXPECT_FALSE(IsWidening(t("int32"), t("double")));
  EXPECT_FALSE(IsWidening(t("uint8"), t("int16")));
  EXPECT_FALSE(IsWidening(t("decimal128(10, 2)"), t("decimal128(10, 2)")));
}

TEST(AlterTest, ColumnPathsPrintAndParseBack) {
  using Path = std::vector<std::string>;
  EXPECT_EQ(FormatColumnPath({"point", "z"}), "point.z");
  EXPECT_EQ(FormatColumnPath({"a.b", "c"}), "`a.b`.c");
  EXPECT_EQ(FormatColumnPath({"x`y"}), "`x``y`");
  EXPECT_EQ(ParseColumnPath("point.z").ValueOrDie(), (Path{"point", "z"}));
  EXPECT_EQ(ParseColumnPath("`a.b`.c").ValueOrDie(), (Path{"a.b", "c"}));
  EXPECT_EQ(ParseColumnPath("m.value.`x``y`").ValueOrDie(), (Path{"m", "value", "x`y"}));
  for (const Path& p : {Path{"a"}, Path{"a.b"}, Path{"`", "."}, Path{"l", "item", "x y"}}) {
    EXPECT_EQ(ParseColumnPath(FormatColumnPath(p)).ValueOrDie(), p);
  }
  EXPECT_EQ(ParseColumnPath("a..b").status().message(), "column path 'a..b' has an empty name");
  EXPECT_EQ(ParseColumnPath("`a.b").status().message(),
            "column path '`a.b': a backtick is not closed");
  EXPECT_EQ(ParseColumnPath("`a`b").status().message(),
            "column path '`a`b': a quoted name must end at '.' or the end");
  EXPECT_FALSE(ParseColumnPath("").ok());
  EXPECT_FALSE(ParseColumnPath("a.").ok());
  EXPECT_FALSE(ParseColumnPath("a`b").ok());
}

TableDescriptor CreatedNested() {
  return ParseCreateTable(R"j({"table":"ns.t","schema":{"fields":[
      {"name":"id","type":"int64"},
      {"name":"p","type":"struct<x: int32, y: struct<a: float, b: string> not null>"},
      {"name":"l","type":"list<item: struct<v: int8>>"},
      {"name":"m","type":"map<string, int16>"}]}})j")
      .ValueOrDie()
      .table;
}

TEST(AlterTest, NestedFieldsHaveIdsInPreOrder) {
  TableDescriptor t = CreatedNested();
  EXPECT_EQ(t.field_ids, (std::vector<int32_t>{1, 2, 3, 4}));
  // p: x, y, y.a, y.b; l: item, item.v; m: key, value.
  EXPECT_EQ(t.child_ids, (std::vector<ChildIds>{{}, {5, 6, 7, 8}, {9, 10}, {11, 12}}));
  EXPECT_EQ(t.last_field_id, 12);
  EXPECT_EQ(CountChildIds(t.schema->field(1).type), 4);
  const arrow::DataType with_ids = t.CurrentSchema().TypeWithIds(1);
  EXPECT_EQ(with_ids, t.schema->field(1).type);
  EXPECT_EQ(with_ids.child(1).FieldId(), 6);
  EXPECT_EQ(with_ids.child(1).type.child(1).FieldId(), 8);
  EXPECT_EQ(t.CurrentSchema().TypeWithIds(3).child(0).type.child(1).FieldId(), 12);
  // The ids survive the JSON round trip; a descriptor stored before nested fields had ids gets
  // the next ones, alike in every version.
  auto again = DescriptorFromJson(DescriptorToJson(t)).ValueOrDie();
  EXPECT_EQ(again.child_ids, t.child_ids);
  EXPECT_EQ(again.last_field_id, 12);
  std::string old_json = DescriptorToJson(t);
  const size_t at = old_json.find(R"(,"child_field_ids")");
  ASSERT_NE(at, std::string::npos);
  old_json.erase(at, old_json.find("]]", at) + 2 - at);
  old_json.replace(old_json.find(R"("last_field_id":12)"), 18, R"("last_field_id":4)");
  auto old = DescriptorFromJson(old_json);
  ASSERT_TRUE(old.ok()) << old.status().ToString() << old_json;
  EXPECT_EQ(old->child_ids, t.child_ids);
  EXPECT_EQ(old->last_field_id, 12);
}

TEST(AlterTest, NestedChangesKeepIdsAndGiveNewOnes) {
  TableDescriptor t = CreatedNested();
  auto a = Alter(t, R"j([{"op":"add_column","name":["p","y","c"],"type":"list<int32>"},
                        {"op":"add_column","name":["p","w"],"type":"bool","after":"x"},
                        {"op":"drop_column","name":["p","y","a"]},
                        {"op":"rename_column","name":["p","x"],"new_name":"x2"},
                        {"op":"widen_type","name":["l","element","v"],"type":"int32"},
                        {"op":"widen_type","name":["m","value"],"type":"int64"},
                        {"op":"make_optional","name":["p","y"]},
                        {"op":"add_column","name":["l","item","u"],"type":"string","first":true}])j");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->schema_id, 1);
  EXPECT_EQ(a->schema->ToString(),
            "id: int64\n"
            "p: struct<x2: int32, w: bool, y: struct<b: string, c: list<item: int32>>>\n"
            "l: list<item: struct<u: string, v: int32>>\n"
            "m: map<string, int64>");
  // c takes 13 (its item 14), w 15, u 16; a's id 7 is gone; renamed and widened keep theirs.
  EXPECT_EQ(a->child_ids,
            (std::vector<ChildIds>{{}, {5, 15, 6, 8, 13, 14}, {9, 16, 10}, {11, 12}}));
  EXPECT_EQ(a->last_field_id, 16);
  EXPECT_EQ(a->field_ids, t.field_ids);
  ASSERT_EQ(a->previous_schemas.size(), 1u);
  EXPECT_EQ(a->previous_schemas[0].child_ids, t.child_ids);
  auto again = DescriptorFromJson(DescriptorToJson(*a)).ValueOrDie();
  EXPECT_EQ(again.child_ids, a->child_ids);
  EXPECT_EQ(again.previous_schemas[0].child_ids, t.child_ids);
  // A nested field dropped then added again under its name takes a new id.
  auto b = Alter(*a, R"j([{"op":"drop_column","name":["p","w"]},
                         {"op":"add_column","name":["p","w"],"type":"bool","after":"x2"}])j");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->schema->Equals(*a->schema));
  EXPECT_EQ(b->child_ids[1], (ChildIds{5, 17, 6, 8, 13, 14}));
  EXPECT_EQ(b->schema_id, 2);
}

TEST(AlterTest, NestedRefusalsNameTheRule) {
  TableDescriptor t = CreatedNested();
  auto message = [&](std::string_view changes) { return Alter(t, changes).status().message(); };
  EXPECT_EQ(message(R"j([{"op":"add_column","name":["p","q"],"type":"int32","nullable":false}])j"),
            "change 1: add_column 'p.q': a new column must be nullable (rows written before it "
            "have no value for it)");
  EXPECT_EQ(message(R"j([{"op":"add_column","name":["p","x"],"type":"int32"}])j"),
            "change 1: field 'p.x' already exists");
  EXPECT_EQ(message(R"j([{"op":"drop_column","name":["p","nope"]}])j"),
            "change 1: struct p (struct<x: int32, y: struct<a: float, b: string> not null>) has "
            "no field 'nope'");
  EXPECT_EQ(message(R"j([{"op":"drop_column","name":["nope","x"]}])j"),
            "change 1: column 'nope' does not exist");
  EXPECT_EQ(message(R"j([{"op":"drop_column","name":["id","x"]}])j"),
            "change 1: id (int64) is not nested: it has no field 'x'");
  EXPECT_EQ(message(R"j([{"op":"widen_type","name":["l","v"],"type":"int32"}])j"),
            "change 1: l (list<item: struct<v: int8>>) is a list: its item is 'item' (or "
            "'element'), not 'v'");
  EXPECT_EQ(message(R"j([{"op":"widen_type","name":["m","k"],"type":"int32"}])j"),
            "change 1: m (map<string, int16>) is a map: its fields are 'key' and 'value', not 'k'");
  EXPECT_EQ(message(R"j([{"op":"drop_column","name":["m","key"]}])j"),
            "change 1: drop_column 'm.key': m (map<string, int16>) is a map, not a struct; only a "
            "struct's fields are added, dropped or renamed (a list's item and a map's key and "
            "value stay)");
  EXPECT_EQ(message(R"j([{"op":"widen_type","name":["m","key"],"type":"int64"}])j"),
            "change 1: cannot change the type of map key 'm.key': a map's key type never changes "
            "(its keys would compare differently)");
  EXPECT_EQ(message(R"j([{"op":"make_optional","name":["m","key"]}])j"),
            "change 1: map key 'm.key' cannot be null");
  EXPECT_EQ(message(R"j([{"op":"drop_column","name":["p","y","a"]},
                        {"op":"drop_column","name":["p","y","b"]}])j"),
            "change 2: struct p.y (struct<b: string>) keeps at least one field");
  EXPECT_EQ(message(R"j([{"op":"widen_type","name":["p","y","b"],"type":"int64"}])j"),
            "change 1: cannot change field 'p.y.b' from string to int64: a type may only widen "
            "(int8 -> int16 -> int32 -> int64, float -> double, decimal128 precision up with the "
            "same scale)");
  EXPECT_EQ(message(R"j([{"op":"rename_column","name":["p","x"],"new_name":"y"}])j"),
            "change 1: rename to 'y': that field already exists");
  EXPECT_EQ(message(R"j([{"op":"rename_column","name":["p","x"],"new_name":"a:b"}])j"),
            "change 1: field name 'a:b' inside a struct must be non-empty, without ',', ':', "
            "brackets ('<>', '()', '[]') or leading and trailing spaces");
  // Each of these would print into the struct's type string and parse back differently.
  auto refused_name = [&](const std::string& changes) {
    return message(changes).find("inside a struct must be non-empty") != std::string::npos;
  };
  for (const std::string bad : {"w)", "(w", "w]", "[w", " w", "w ", "a<b"}) {
    EXPECT_TRUE(refused_name(R"j([{"op":"rename_column","name":["p","x"],"new_name":")j" + bad +
                             R"j("}])j"))
        << bad;
    EXPECT_TRUE(
        refused_name(R"j([{"op":"add_column","name":["p",")j" + bad + R"j("],"type":"int8"}])j"))
        << bad;
  }
  EXPECT_EQ(message(R"j([{"op":"set_column_doc","name":["p","x"],"doc":"d"}])j"),
            "change 1: set_column_doc 'p.x': a nested field has no doc (its type's name has no "
            "place for one)");
  EXPECT_EQ(message(R"j([{"op":"add_column","name":["p","q"],"type":"int32","after":"zz"}])j"),
            "change 1: add_column after 'zz': no such field in p (struct<x: int32, y: struct<a: "
            "float, b: string> not null>)");
  EXPECT_EQ(message(R"j([{"op":"drop_column","name":[]}])j"),
            "change 1: drop_column \"name\" must not be an empty list");
  EXPECT_EQ(message(R"j([{"op":"drop_column","name":["p",3]}])j"),
            "change 1: drop_column \"name\" must be a column name or a list of names");
  // A one-name path is the top-level column, as a string name is.
  auto top = Alter(t, R"j([{"op":"drop_column","name":["m"]}])j");
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  EXPECT_EQ(top->schema->num_fields(), 3);
}

TEST(CatalogTest, ReplaceIsDurable) {
  TempDir dir;
  {
    auto catalog = Catalog::Open(PosixFileSystem::Default(), dir.path()).ValueOrDie();
    auto t = catalog->Create(Created(), false).ValueOrDie();
    auto altered = Alter(t, R"j([{"op":"add_column","name":"n","type":"int32"}])j").ValueOrDie();
    ASSERT_TRUE(catalog->Replace(altered).ok());
    altered.table_id += 1;
    EXPECT_TRUE(catalog->Replace(altered).IsNotFound());
  }
  auto reopened = Catalog::Open(PosixFileSystem::Default(), dir.path()).ValueOrDie();
  auto t = reopened->Get("ns.t").ValueOrDie();
  EXPECT_EQ(t.schema_id, 1);
  EXPECT_EQ(t.field_ids, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(t.previous_schemas.size(), 1u);
}

}  // namespace
}  // namespace oxbow::catalog
