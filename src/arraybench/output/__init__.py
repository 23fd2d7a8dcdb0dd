"""What a run prints: text, Markdown, JSON and CSV formats and the terminal's progress and tables. (The
dashboards' export formats are the report's: report/exports.py; the notebook display is the results':
results/display.py; the palette is core/palette.py.)
"""
