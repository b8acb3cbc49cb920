// Fuzzes the JSON a client controls: DoGet tickets and action bodies.
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
    if (!again.ok() || again->table != ticket->table || again->bucket != ticket->bucket) {
      __builtin_trap();  // a ticket we print must parse back to itself
    }
  }
  (void)oxbow::flight::ParseTableNameBody(text);
  auto create = oxbow::catalog::ParseCreateTable(text);
  if (create.ok()) (void)oxbow::catalog::DescriptorToJson(create->table);
  return 0;
}
