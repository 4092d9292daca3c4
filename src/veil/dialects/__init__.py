"""The wire dialects model providers speak: one module per API (see each module)."""
