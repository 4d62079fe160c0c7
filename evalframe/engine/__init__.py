"""Engines: evaluate() end to end (read, call the system under test, enrich, score, save)."""
