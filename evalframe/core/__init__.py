"""Core: schema, errors, readers, the runner, Run, aggregation and statistics.

The lowest layer: it imports no other evalframe package.
"""
