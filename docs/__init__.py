"""Documentation; ``docs.examples`` holds runnable, tested examples."""
