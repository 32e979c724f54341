"""The basket demo server."""
