"""Tests of the runnable examples under docs/examples."""
