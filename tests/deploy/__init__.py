"""Deployment tests: replicas of the examples behind a real gateway."""
