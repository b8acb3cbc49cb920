#include <algorithm>

#include "oxbow/arrow/compute.h"
#include "oxbow/parquet/nested_internal.h"
#include "oxbow/parquet/schema_internal.h"

namespace oxbow::parquet::internal {

using arrow::Array;
using arrow::DataType;
using arrow::Field;
using arrow::TypeId;

namespace {

// Deeper schemas are refused (Arrow types nest at most 32 levels; a list takes two elements).
constexpr int kMaxSchemaDepth = 80;

// ------------------------------------------------------------------------------------------------
// Writer: Arrow fields -> schema elements

struct Appender {
  std::vector<SchemaElement>* elements;
  SchemaTree* tree;
  std::vector<std::string> names;
  std::vector<int> child_path;

  static SchemaElement Group(const std::string& name, Repetition repetition, int32_t children) {
    SchemaElement e;
    e.name = name;
    e.repetition_type = repetition;
    e.num_children = children;
    return e;
  }

  Status Append(const Field& field, int16_t def, int16_t rep) {
    const DataType& type = field.type;
    const int16_t d = static_cast<int16_t>(def + (field.nullable ? 1 : 0));
    const Repetition repetition = field.nullable ? Repetition::kOptional : Repetition::kRequired;
    names.push_back(field.name);
    if (!type.is_nested()) {
      ASSIGN_OR_RAISE(SchemaElement e, FieldToSchemaElement(field));
      tree->leaves.push_back(
          LeafColumn{static_cast<int>(elements->size()), d, rep, field, names, child_path});
      elements->push_back(std::move(e));
      names.pop_back();
      return Status::OK();
    }
    ASSIGN_OR_RAISE(std::optional<int32_t> field_id, FieldIdOf(field));
    switch (type.id()) {
      case TypeId::kStruct: {
        SchemaElement e = Group(field.name, repetition, type.num_children());
        e.field_id = field_id;
        elements->push_back(std::move(e));
        for (int k = 0; k < type.num_children(); ++k) {
          child_path.push_back(k);
          RETURN_NOT_OK(Append(type.child(k), d, rep));
          child_path.pop_back();
        }
        break;
      }
      case TypeId::kList:
      case TypeId::kFixedSizeList: {
        // <repetition> group <name> (LIST) { repeated group list { <item> element; } }
        SchemaElement e = Group(field.name, repetition, 1);
        e.field_id = field_id;
        e.converted_type = ConvertedType::kList;
        e.logical_type = LogicalType{.kind = LogicalType::kList};
        elements->push_back(std::move(e));
        elements->push_back(Group("list", Repetition::kRepeated, 1));
        names.push_back("list");
        Field element = type.child(0);
        element.name = "element";
        child_path.push_back(0);
        RETURN_NOT_OK(Append(element, static_cast<int16_t>(d + 1), static_cast<int16_t>(rep + 1)));
        child_path.pop_back();
        names.pop_back();
        break;
      }
      case TypeId::kMap: {
        // <repetition> group <name> (MAP) { repeated group key_value { required key; value; } }
        SchemaElement e = Group(field.name, repetition, 1);
        e.field_id = field_id;
        e.converted_type = ConvertedType::kMap;
        e.logical_type = LogicalType{.kind = LogicalType::kMap};
        elements->push_back(std::move(e));
        elements->push_back(Group("key_value", Repetition::kRequired, 2));
        elements->back().repetition_type = Repetition::kRepeated;
        names.push_back("key_value");
        const DataType& entries = type.child(0).type;
        child_path.push_back(0);
        for (int k = 0; k < 2; ++k) {
          child_path.push_back(k);
          RETURN_NOT_OK(
              Append(entries.child(k), static_cast<int16_t>(d + 1), static_cast<int16_t>(rep + 1)));
          child_path.pop_back();
        }
        child_path.pop_back();
        names.pop_back();
        break;
      }
      default: break;
    }
    names.pop_back();
    return Status::OK();
  }
};

// ------------------------------------------------------------------------------------------------
// Reader: schema elements -> Arrow fields

struct Parser {
  const std::vector<SchemaElement>& elements;
  SchemaTree* tree;
  size_t pos = 1;
  std::vector<int> child_path;

  Status Error(const SchemaElement& e, const std::string& what) const {
    return Status::Corruption("parquet schema: element '" + e.name + "': " + what);
  }

  // Parses the element at `pos` (and its subtree). `as_element` parses a repeated element as
  // the required element of the list it stands for (its levels already counted).
  Result<Field> Parse(int depth, int16_t def, int16_t rep, bool as_element = false) {
    if (depth > kMaxSchemaDepth) {
      return Status::NotImplemented("parquet schema: nested deeper than " +
                                    std::to_string(kMaxSchemaDepth) + " levels");
    }
    if (pos >= elements.size()) {
      return Status::Corruption("parquet schema: a group's children run past the schema");
    }
    const size_t index = pos;
    const SchemaElement& e = elements[index];
    const Repetition r = e.repetition_type.value_or(Repetition::kOptional);
    if (r == Repetition::kRepeated && !as_element) {
      // A repeated field outside a LIST or MAP: a non-null list of required elements.
      child_path.push_back(0);
      ASSIGN_OR_RAISE(Field item, Parse(depth + 1, static_cast<int16_t>(def + 1),
                                        static_cast<int16_t>(rep + 1), true));
      child_path.pop_back();
      item.name = "item";
      return Field{e.name, DataType::List(std::move(item)), false, {}};
    }
    ++pos;
    const bool optional = !as_element && r == Repetition::kOptional;
    const auto d = static_cast<int16_t>(def + (optional ? 1 : 0));
    Field field;
    field.name = e.name;
    field.nullable = optional;
    if (e.type) {
      if (e.num_children.value_or(0) != 0) return Error(e, "a typed element with children");
      SchemaElement leaf = e;
      leaf.repetition_type = optional ? Repetition::kOptional : Repetition::kRequired;
      auto converted = SchemaElementToField(leaf);
      if (converted.ok()) {
        field = std::move(*converted);
      } else if (tree->unreadable.ok()) {
        tree->unreadable = converted.status();  // the verifier still checks such a file
      }
      std::vector<std::string> path;
      tree->leaves.push_back(
          LeafColumn{static_cast<int>(index), d, rep, field, std::move(path), child_path});
      return field;
    }
    if (e.field_id)
      field.metadata.emplace_back(std::string(kFieldIdKey), std::to_string(*e.field_id));
    const int32_t n = e.num_children.value_or(0);
    if (n <= 0) return Error(e, "a group without children");
    if (static_cast<size_t>(n) > elements.size() - pos) return Error(e, "children past the schema");
    const bool list = e.converted_type == ConvertedType::kList ||
                      (e.logical_type && e.logical_type->kind == LogicalType::kList);
    const bool map = e.converted_type == ConvertedType::kMap ||
                     e.converted_type == ConvertedType::kMapKeyValue ||
                     (e.logical_type && e.logical_type->kind == LogicalType::kMap);
    if (list || map) {
      if (n != 1)
        return Error(e, std::string(list ? "LIST" : "MAP") + " group with " + std::to_string(n) +
                            " children");
      const SchemaElement& repeated = elements[pos];
      if (repeated.repetition_type != Repetition::kRepeated) {
        return Error(e, std::string(list ? "LIST" : "MAP") + " group whose child is not repeated");
      }
      const auto inner_def = static_cast<int16_t>(d + 1);
      const auto inner_rep = static_cast<int16_t>(rep + 1);
      child_path.push_back(0);
      if (list) {
        // Three-level lists hold a repeated group of one element; older writers' two-level
        // lists repeat the element itself (LogicalTypes.md, "Backward-compatibility rules").
        const bool three_level = !repeated.type && repeated.num_children.value_or(0) == 1 &&
                                 repeated.name != "array" && repeated.name != e.name + "_tuple";
        if (three_level) ++pos;
        ASSIGN_OR_RAISE(Field item, Parse(depth + 1, inner_def, inner_rep, !three_level));
        item.name = "item";
        field.type = DataType::List(std::move(item));
      } else {
        if (repeated.type || repeated.num_children.value_or(0) != 2) {
          return Error(e, "MAP group without a key_value group of a key and a value");
        }
        ++pos;
        child_path.push_back(0);
        ASSIGN_OR_RAISE(Field key, Parse(depth + 2, inner_def, inner_rep));
        child_path.back() = 1;
        ASSIGN_OR_RAISE(Field value, Parse(depth + 2, inner_def, inner_rep));
        child_path.pop_back();
        if (key.nullable) return Error(e, "MAP with an optional key");
        key.name = "key";
        value.name = "value";
        Field entries{"entries", DataType::Struct({std::move(key), std::move(value)}), false, {}};
        field.type = DataType::Nested(TypeId::kMap, {std::move(entries)});
      }
      child_path.pop_back();
      return field;
    }
    std::vector<Field> children;
    for (int32_t k = 0; k < n; ++k) {
      child_path.push_back(k);
      ASSIGN_OR_RAISE(Field child, Parse(depth + 1, d, rep));
      child_path.pop_back();
      children.push_back(std::move(child));
    }
    field.type = DataType::Struct(std::move(children));
    return field;
  }
};

// The path_in_schema of every leaf: the names of the elements down to it.
void FillPaths(const std::vector<SchemaElement>& elements, SchemaTree* tree) {
  // Walk the flattened tree keeping the open groups' names and remaining children.
  std::vector<std::pair<std::string, int32_t>> open;
  size_t next_leaf = 0;
  for (size_t i = 1; i < elements.size() && next_leaf < tree->leaves.size(); ++i) {
    const SchemaElement& e = elements[i];
    if (static_cast<int>(i) == tree->leaves[next_leaf].element) {
      auto& path = tree->leaves[next_leaf++].path;
      for (const auto& g : open) path.push_back(g.first);
      path.push_back(e.name);
    }
    if (!open.empty()) --open.back().second;
    if (!e.type) open.emplace_back(e.name, e.num_children.value_or(0));
    while (!open.empty() && open.back().second == 0) open.pop_back();
  }
}

// ------------------------------------------------------------------------------------------------
// Shredding: one leaf's levels from an Arrow column

struct Shredder {
  const LeafColumn& leaf;
  ShreddedLeaf* out;
  const Field* null_in_required = nullptr;  // a not-null child found holding a null

  void Emit(uint32_t def, uint32_t rep) {
    out->def.push_back(def);
    out->rep.push_back(rep);
  }

  // Element i of `a` (a logical index: the array's offset is not applied yet).
  void Visit(const Field& f, const Array& a, int64_t i, size_t p, uint32_t def, uint32_t rep,
             uint32_t depth) {
    if (f.nullable) {
      if (a.IsNull(i)) {
        Emit(def, rep);
        return;
      }
      ++def;
    } else if (a.IsNull(i) && null_in_required == nullptr) {
      null_in_required = &f;
    }
    const DataType& t = f.type;
    switch (t.id()) {
      case TypeId::kStruct: {
        const int k = leaf.child_path[p];
        Visit(t.child(k), a.child(k), a.offset() + i, p + 1, def, rep, depth);
        return;
      }
      case TypeId::kList:
      case TypeId::kMap: {
        const int32_t* offsets = a.raw_offsets();
        Range(t.child(0), a.child(0), offsets[i], offsets[i + 1], p, def, rep, depth);
        return;
      }
      case TypeId::kFixedSizeList: {
        const int64_t begin = (a.offset() + i) * t.list_size();
        Range(t.child(0), a.child(0), begin, begin + t.list_size(), p, def, rep, depth);
        return;
      }
      default:
        if (!out->values.data()) out->values = a;
        out->rows.push_back(static_cast<int32_t>(i));
        Emit(def, rep);
        return;
    }
  }

  void Range(const Field& item, const Array& child, int64_t begin, int64_t end, size_t p,
             uint32_t def, uint32_t rep, uint32_t depth) {
    if (begin >= end) {
      Emit(def, rep);  // an empty list
      return;
    }
    for (int64_t j = begin; j < end; ++j) {
      Visit(item, child, j, p + 1, def + 1, j == begin ? rep : depth + 1, depth + 1);
    }
  }
};

// ------------------------------------------------------------------------------------------------
// Assembly: Arrow arrays from levels

int CountLeaves(const DataType& t) {
  if (!t.is_nested()) return 1;
  int n = 0;
  for (const Field& c : t.children()) n += CountLeaves(c.type);
  return n;
}

struct Assembler {
  // Builds the array of `f` whose slots are the entries of its first leaf with a repetition
  // level <= `rep` and a definition level >= `slot_def`; `base_def` is the level at which its
  // parent is present (f's own nullability adds one).
  Result<Array> Build(const Field& f, const DecodedLeaf* leaves, int16_t slot_def, int16_t base_def,
                      int16_t rep) {
    const DecodedLeaf& first = leaves[0];
    const auto n = static_cast<int64_t>(first.def.size());
    const uint32_t* def = first.def.data();
    const uint32_t* reps = first.rep.data();
    const auto nonnull = static_cast<uint32_t>(base_def + (f.nullable ? 1 : 0));
    const DataType& t = f.type;
    if (!t.is_nested()) {
      std::vector<int32_t> slots;
      for (int64_t e = 0; e < n; ++e) {
        if (reps[e] <= static_cast<uint32_t>(rep) && def[e] >= static_cast<uint32_t>(slot_def)) {
          slots.push_back(static_cast<int32_t>(e));
        }
      }
      if (static_cast<int64_t>(slots.size()) == n) return first.values;
      return arrow::TakeRows(first.values, slots);
    }
    // Validity and (for lists and maps) offsets of this node's slots.
    BufferBuilder validity_bits;
    std::vector<uint8_t> valid;
    std::vector<int32_t> offsets;
    int64_t elements = 0;
    const bool repeated = t.id() == TypeId::kList || t.id() == TypeId::kMap;
    for (int64_t e = 0; e < n; ++e) {
      if (reps[e] <= static_cast<uint32_t>(rep) && def[e] >= static_cast<uint32_t>(slot_def)) {
        valid.push_back(def[e] >= nonnull);
        if (repeated) offsets.push_back(static_cast<int32_t>(elements));
      }
      if (repeated && reps[e] <= static_cast<uint32_t>(rep + 1) && def[e] >= nonnull + 1) {
        if (offsets.empty()) return Status::Corruption("list element before its list");
        if (++elements > INT32_MAX) return Status::NotImplemented("list of over 2^31 elements");
      }
    }
    const auto length = static_cast<int64_t>(valid.size());
    int64_t nulls = 0;
    std::shared_ptr<Buffer> validity;
    for (uint8_t v : valid) nulls += v == 0;
    if (nulls > 0) {
      ASSIGN_OR_RAISE(auto bits, MutableBuffer::Allocate(bit_util::BytesForBits(length)));
      std::fill(bits->mutable_data(), bits->mutable_data() + bits->size(), 0);
      for (int64_t i = 0; i < length; ++i) {
        if (valid[i]) bit_util::SetBit(bits->mutable_data(), i);
      }
      validity = std::move(bits);
    }
    std::vector<Array> children;
    std::vector<std::shared_ptr<Buffer>> buffers{validity};
    if (t.id() == TypeId::kStruct) {
      int offset = 0;
      for (const Field& child : t.children()) {
        ASSIGN_OR_RAISE(
            Array c, Build(child, leaves + offset, slot_def, static_cast<int16_t>(nonnull), rep));
        if (c.length() != length) {
          return Status::Corruption("struct '" + f.name + "' has children of different lengths");
        }
        children.push_back(std::move(c));
        offset += CountLeaves(child.type);
      }
    } else if (repeated) {
      offsets.push_back(static_cast<int32_t>(elements));
      const auto inner = static_cast<int16_t>(nonnull + 1);
      ASSIGN_OR_RAISE(Array c,
                      Build(t.child(0), leaves, inner, inner, static_cast<int16_t>(rep + 1)));
      if (c.length() != elements) {
        return Status::Corruption("list '" + f.name + "' holds " + std::to_string(elements) +
                                  " elements, its values " + std::to_string(c.length()));
      }
      children.push_back(std::move(c));
      ASSIGN_OR_RAISE(auto offsets_buffer,
                      MutableBuffer::Allocate(static_cast<int64_t>(offsets.size()) * 4));
      std::copy(offsets.begin(), offsets.end(),
                reinterpret_cast<int32_t*>(offsets_buffer->mutable_data()));
      buffers.push_back(std::move(offsets_buffer));
    } else {
      return Status::NotImplemented("assembling " + t.ToString());
    }
    return Array::MakeNested(t, length, std::move(buffers), std::move(children), nulls);
  }
};

}  // namespace

Status AppendField(const Field& field, std::vector<SchemaElement>* elements, SchemaTree* tree) {
  tree->first_leaf.push_back(static_cast<int>(tree->leaves.size()));
  Appender appender{elements, tree, {}, {}};
  RETURN_NOT_OK(appender.Append(field, 0, 0));
  tree->fields.push_back(field);
  return Status::OK();
}

Result<SchemaTree> ParseSchema(const std::vector<SchemaElement>& elements) {
  if (elements.empty()) return Status::Corruption("parquet footer: empty schema");
  SchemaTree tree;
  Parser parser{elements, &tree};
  const int32_t n = elements[0].num_children.value_or(0);
  if (n < 0 || static_cast<size_t>(n) > elements.size() - 1) {
    return Status::Corruption("parquet footer: root has " + std::to_string(n) +
                              " children but the schema lists " +
                              std::to_string(elements.size() - 1) + " elements");
  }
  for (int32_t i = 0; i < n; ++i) {
    tree.first_leaf.push_back(static_cast<int>(tree.leaves.size()));
    ASSIGN_OR_RAISE(Field f, parser.Parse(0, 0, 0));
    tree.fields.push_back(std::move(f));
  }
  tree.first_leaf.push_back(static_cast<int>(tree.leaves.size()));
  if (parser.pos != elements.size()) {
    return Status::Corruption("parquet footer: root has " + std::to_string(n) +
                              " children but the schema lists " +
                              std::to_string(elements.size() - 1) + " columns");
  }
  FillPaths(elements, &tree);
  return tree;
}

Status ShredLeaf(const Field& top, const Array& column, int64_t offset, int64_t length,
                 const LeafColumn& leaf, ShreddedLeaf* out) {
  out->def.clear();
  out->rep.clear();
  out->rows.clear();
  out->values = Array();
  Shredder shredder{leaf, out};
  for (int64_t i = offset; i < offset + length; ++i) shredder.Visit(top, column, i, 0, 0, 0, 0);
  if (shredder.null_in_required) {
    return Status::Invalid("parquet writer: column '" + top.name + "': its not-null field '" +
                           shredder.null_in_required->name + "' holds a null");
  }
  return Status::OK();
}

Result<Array> Assemble(const Field& top, const std::vector<DecodedLeaf>& leaves, int64_t num_rows) {
  if (static_cast<int>(leaves.size()) != CountLeaves(top.type)) {
    return Status::Corruption("column '" + top.name + "': leaf count differs from its type");
  }
  Assembler assembler;
  ASSIGN_OR_RAISE(Array a, assembler.Build(top, leaves.data(), 0, 0, 0));
  if (a.length() != num_rows) {
    return Status::Corruption("column '" + top.name + "' holds " + std::to_string(a.length()) +
                              " rows, its row group " + std::to_string(num_rows));
  }
  return a;
}

}  // namespace oxbow::parquet::internal
