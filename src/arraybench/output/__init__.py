"""What a run prints and exports: text, Markdown, JSON and CSV formats, the dashboards' export formats,
the notebook display and the terminal's progress and tables.
"""
