"""The store: the SQLite ledger (connection, schema, upgrades), the one-writer lock, the search index,
the registry of derived tables and the stored bytes of every file."""
