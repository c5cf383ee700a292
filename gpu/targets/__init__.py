"""The GPU targets, one module per target (its name, dots as underscores) or case model, and their bases."""
