"""Built-in CPU targets, one module per target named after it (GPU targets live in ``gpu/targets/``)."""
