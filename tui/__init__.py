"""threadloom's Textual interface; reads the ledger only through `core`'s API."""
