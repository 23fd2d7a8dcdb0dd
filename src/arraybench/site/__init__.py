"""Site: a static website from a results store — the answer across machines, each workload, each framework's
versions, a page per run and the latest runs' full reports — readable from file:// with no server and no network.

`publishing` writes the site (write_site) and keeps a run's full report by its rule; `site_data` is what it is
drawn from (every stored run, each machine's latest cases per framework version); `across_machines` the answer
across machines; `pages` its pages; `history_pages` each case over time and the changes found."""

from arraybench.site.across_machines import Across, across, answer_text
from arraybench.site.publishing import (
    FULL_REPORTS,
    MADE_HERE,
    PAGE_BATCH,
    PAGE_FOLDERS,
    REPORT_FILES,
    RULE,
    STAMP,
    RunPage,
    Site,
    full_report_runs,
    rule,
    write_site,
)
from arraybench.site.site_data import SiteData, load_store

__all__ = ["FULL_REPORTS", "MADE_HERE", "PAGE_BATCH", "PAGE_FOLDERS", "REPORT_FILES", "RULE", "STAMP", "Across",
           "RunPage", "Site", "SiteData", "across", "answer_text", "full_report_runs", "load_store", "rule",
           "write_site"]
