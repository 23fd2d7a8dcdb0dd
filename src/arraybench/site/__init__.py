"""Site: a static website from a results store — the answer across machines, each workload, each framework's
versions, a page per run and the latest runs' full reports — readable from file:// with no server and no network.

`publishing` writes the site (write_site) and keeps a run's full report by its rule; `model` is what it is
drawn from (every stored run, each machine's latest cases per framework version); `answer` the answer
across machines; `html` its pages; `history` each case over time and the changes found."""

from arraybench.site.answer import Across, across, answer_text
from arraybench.site.model import SiteData, load_store
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

__all__ = ["FULL_REPORTS", "MADE_HERE", "PAGE_BATCH", "PAGE_FOLDERS", "REPORT_FILES", "RULE", "STAMP", "Across",
           "RunPage", "Site", "SiteData", "across", "answer_text", "full_report_runs", "load_store", "rule",
           "write_site"]
