"""Enrichment: provider-filled columns (embeddings, judge replies) that metrics declare."""
