"""Report: what a person looks at — terminal tables, Markdown, CSV, plots and one self-contained HTML page.

`writer` writes a report's files and its summary (write_all, publish) from `data` (ReportData: every
record as the report shows it, `view`); each section is a module of its own: the winners map
(`winners`), the answer in words (`answer`), tables (`table`), crossovers, plots, devices, GPU, vmap,
memory (`memory_section`), fits, environments, the bound of each case (`bound`), the HTML page (`page`);
`exports` gives a run in the formats dashboards read.
"""

from arraybench.report.writer import (
    Report,
    host_warnings,
    markdown_text,
    publish,
    rate_notes,
    summary_text,
    write_all,
)

__all__ = ["Report", "host_warnings", "markdown_text", "publish", "rate_notes", "summary_text", "write_all"]
