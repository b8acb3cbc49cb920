// Fuzzes the JSON a client controls: DoGet tickets, command descriptors and action bodies.
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
        again->kind != ticket->kind || again->lookup_keys != ticket->lookup_keys) {
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
  return 0;
}
