"""rich on a terminal (colour, ETA), plain text in pipes and CI logs, NO_COLOR honoured."""

import dataclasses
import io

import pytest

from arraybench.execution.parent import Progress
from arraybench.output import terminal
from arraybench.report.table import text_table
from arraybench.results.record import CaseRecord

HEADER = ["backend·mode", "size 2"]
ROWS = [["numpy·eager", "1.2 ms ±3%"], ["jax·jit", "WRONG (rel err 1.0e-01)"], ["torch·eager", "2 ms ±40% (noisy)"]]
RED = "\x1b[1;31m"


@pytest.fixture
def no_tty_env(monkeypatch):
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_not_a_terminal_gets_the_plain_table_and_line_progress(no_tty_env):
    out = io.StringIO()
    terminal.print_table(HEADER, ROWS, "linreg", stream=out)
    assert out.getvalue() == "linreg\n" + text_table(HEADER, ROWS) + "\n"
    assert type(terminal.progress(3, io.StringIO())) is Progress


def test_a_terminal_gets_colour_wrong_in_red_and_noisy_in_yellow(no_tty_env):
    no_tty_env.setenv("TTY_COMPATIBLE", "1")
    out = io.StringIO()
    terminal.print_table(HEADER, ROWS, "linreg", stream=out)
    text = out.getvalue()
    assert f"{RED}WRONG" in text and "\x1b[33m2 ms ±40% (noisy)" in text
    assert "\x1b[" not in text.split("numpy·eager")[1].split("1.2 ms")[0]  # an ok cell stays plain


def test_no_color_keeps_the_layout_and_drops_the_colour(no_tty_env):
    no_tty_env.setenv("TTY_COMPATIBLE", "1")
    no_tty_env.setenv("NO_COLOR", "1")
    out = io.StringIO()
    terminal.print_table(HEADER, ROWS, "linreg", stream=out)
    text = out.getvalue()
    assert "WRONG" in text and "┃" in text  # rich's layout
    assert "\x1b[31m" not in text and RED not in text and "\x1b[33m" not in text


def test_the_progress_bar_shows_count_eta_and_the_last_result(no_tty_env):
    no_tty_env.setenv("TTY_COMPATIBLE", "1")
    out = io.StringIO()
    bar = terminal.progress(2, out)
    assert isinstance(bar, terminal.ProgressBar)
    rec = CaseRecord(id="a", workload="linreg", size=2, backend="numpy", mode="eager", status="ok", median_s=1e-3)
    bar(rec)
    bar(dataclasses.replace(rec, id="b", backend="jax", status="crashed", median_s=None))
    text = out.getvalue()
    assert "2/2" in text and "ETA" in text and "linreg[2] jax·eager" in text and "CRASHED" in text
    assert bar.bar.finished and not bar.bar.live.is_started  # stopped itself at the last case


def test_the_progress_bar_counts_processes_and_names_the_device(no_tty_env):
    no_tty_env.setenv("TTY_COMPATIBLE", "1")
    out = io.StringIO()
    bar = terminal.progress(2, out)
    bar.processes = 3
    bar.resumed({"a": ["kept"]})  # a --resume reuses one process of case a
    rec = CaseRecord(id="a", workload="linreg", size=2, backend="torch", mode="eager", device="cpu:2", status="ok",
                     median_s=1e-3)
    bar.replicate(rec, 1)
    bar.close()  # draws the last state
    text = out.getvalue()
    assert "processes" in text and "2/6" in text and "linreg[2] torch·eager·cpu:2 process 2/3" in text


def test_an_interrupted_run_leaves_no_bar_redrawing(no_tty_env):
    no_tty_env.setenv("TTY_COMPATIBLE", "1")
    with pytest.raises(KeyboardInterrupt), terminal.progress_display(io.StringIO()) as on_start:
        bar = on_start(3)
        assert bar.bar.live.is_started
        raise KeyboardInterrupt
    assert not bar.bar.live.is_started


def test_compare_tables_colour_slower_and_faster_on_a_terminal_only(no_tty_env):
    rows = [["sort·n=1000 numpy·eager", "1.30", "slower"], ["fft·n=1000 jax·jit", "0.70", "faster"]]
    header = ["case", "new/base", "verdict"]
    assert terminal.table_renderer(io.StringIO())(header, rows) == text_table(header, rows)
    no_tty_env.setenv("TTY_COMPATIBLE", "1")
    text = terminal.table_renderer(io.StringIO())(header, rows)
    assert "\x1b[31mslower" in text and "\x1b[32mfaster" in text


def test_the_tables_after_a_run_are_coloured_on_a_terminal(no_tty_env):
    from arraybench.report.table import render_text
    from arraybench.results.record import CaseRecord
    from tests.report.test_report import record

    recs = [CaseRecord.from_json(record("sort", 8, "numpy", "eager", 1e-3)),
            CaseRecord.from_json(record("sort", 8, "jax", "jit", 2e-3, status="wrong"))]
    plain = render_text(recs, terminal.table_renderer(io.StringIO()))
    assert plain == render_text(recs) and "\x1b[" not in plain
    no_tty_env.setenv("TTY_COMPATIBLE", "1")
    assert f"{RED}WRONG" in render_text(recs, terminal.table_renderer(io.StringIO()))
