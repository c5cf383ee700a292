"""Built-in CPU targets (GPU targets live in ``gpu/``)."""
