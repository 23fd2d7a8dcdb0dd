"""Report: what a person looks at — terminal tables, Markdown, plots and one HTML page."""
