// The primary-key table (docs/primary-keys.md): current rows in the data dir's key-value store,
// every change in a changelog that is the table's log, the second kind of engine::Table.
#pragma once

#include <memory>

#include "oxbow/engine/kv_snapshot_internal.h"
#include "oxbow/engine/log_table_internal.h"
#include "oxbow/kv/store.h"

namespace oxbow::engine::internal {

// The changelog's extra column: "+I", "-U", "+U" or "-D".
inline constexpr const char* kChangeTypeColumn = "_change_type";

// Checks what only a primary-key table needs (key column types, merge-engine properties);
// InvalidArgument naming the problem otherwise.
Status CheckPrimaryKeyTable(const catalog::TableDescriptor& descriptor);

// Whether a prefix lookup can match more than one key: the bucket key is a strict prefix of
// the primary key. Otherwise a prefix lookup is a lookup.
bool HasKeyPrefixes(const catalog::TableDescriptor& descriptor);

// How the key-value store finds the table's rows: by key prefix too when HasKeyPrefixes.
kv::KeyAccess KeyAccessOf(const catalog::TableDescriptor& descriptor);

// Opens the table's changelog, then brings its rows in `store` up to the changelog's end; when
// `replicated` (cluster mode), leaves them where they are: its replicas bring them up to what
// they commit (Table::PrepareToLead, Table::ApplyReplicated). KV snapshots go to `snapshots`.
Result<std::shared_ptr<Table>> OpenPrimaryKeyTable(const catalog::TableDescriptor& descriptor,
                                                   LogTableOptions changelog, kv::TableStore* store,
                                                   bool replicated, KvSnapshotStore snapshots);

}  // namespace oxbow::engine::internal
