// Fuzzes the JSON a client controls: DoGet tickets, command descriptors and action bodies
// (alter_table bodies also applied to a table with nested columns).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/flight/requests.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ticket = oxbow::flight::ParseTicket(text);
  if (ticket.ok()) {
    auto again = oxbow::flight::ParseTicket(oxbow::flight::TicketToJson(*ticket));
    if (!again.ok() || again->table != ticket->table || again->bucket != ticket->bucket ||
        again->kind != ticket->kind || again->lookup_keys != ticket->lookup_keys ||
        again->schema_id != ticket->schema_id) {
      __builtin_trap();  // a ticket we print must parse back to itself
    }
  }
  auto command = oxbow::flight::ParseCommand(text);
  if (command.ok()) {
    auto again = oxbow::flight::ParseCommand(oxbow::flight::CommandToJson(*command));
    if (!again.ok() || again->table != command->table || again->op != command->op) {
      __builtin_trap();
    }
  }
  (void)oxbow::flight::ParseTableNameBody(text);
  auto create = oxbow::catalog::ParseCreateTable(text);
  if (create.ok()) (void)oxbow::catalog::DescriptorToJson(create->table);
  auto alter = oxbow::catalog::ParseAlterTable(text);
  if (alter.ok()) {
    // Applied to a table with a key and every kind of change in reach; an altered descriptor
    // must survive the catalog's JSON round trip.
    static const auto table =
        oxbow::catalog::DescriptorFromJson(
            R"j({"table":"ns.t","schema":{"fields":[{"name":"id","type":"int64","nullable":false},
            {"name":"n","type":"int8"},{"name":"s","type":"string","nullable":false},
            {"name":"p","type":"struct<x: int8, y: list<item: struct<a: int16 not null>>>"},
            {"name":"m","type":"map<string, struct<q: float>>"}]},
            "bucket_key":["id"]})j")
            .ValueOrDie();
    auto altered = oxbow::catalog::ApplyAlter(table, alter->changes);
    if (altered.ok()) {
      auto again = oxbow::catalog::DescriptorFromJson(oxbow::catalog::DescriptorToJson(*altered));
      if (!again.ok() || !again->schema->Equals(*altered->schema) ||
          again->field_ids != altered->field_ids || again->child_ids != altered->child_ids ||
          again->last_field_id != altered->last_field_id ||
          again->previous_schemas.size() != altered->previous_schemas.size()) {
        __builtin_trap();
      }
      for (int i = 0; i < altered->schema->num_fields(); ++i) {  // docs survive it too
        if (oxbow::catalog::FieldDoc(again->schema->field(i)) !=
            oxbow::catalog::FieldDoc(altered->schema->field(i))) {
          __builtin_trap();
        }
      }
    }
  }
  return 0;
}
