"""Views: the report JSON, Markdown, HTML, charts and comparison rendering."""
