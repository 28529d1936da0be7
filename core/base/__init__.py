"""Plain helpers with no store and no agent: text and markup, masking secrets, the embedding model,
the clipboard. Everything else may use them."""
