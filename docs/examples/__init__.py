"""Examples the documentation includes; each is tested under tests/docs_examples."""
