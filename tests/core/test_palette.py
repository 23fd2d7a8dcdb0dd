"""One colour per backend·mode, told apart by colour-blind readers, the same in the report, site and notebook."""

import itertools
import math

import pytest

from arraybench.core.palette import BACKEND_COLOURS, colour, ink
from arraybench.report import write_all
from arraybench.results import Results
from arraybench.results.record import CaseRecord
from arraybench.site.pages import workload_page
from arraybench.site.site_data import load_store
from tests.report.test_report import results_of, sweep_records
from tests.site.test_publish import two_machine_store

# Machado, Oliveira & Fernandes (2009), severity 1: what a protanope, deuteranope and tritanope see, on linear RGB.
CVD = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}
# CIEDE2000: about 2 is a just-noticeable difference side by side; two fills of the map are told apart well above.
APART = 8.0


def linear(hex_colour):
    def one(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return [one(int(hex_colour[i:i + 2], 16) / 255) for i in (1, 3, 5)]


def lab(rgb):
    r, g, b = rgb
    x, y, z = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, \
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t):
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def seen(hex_colour, matrix=None):
    rgb = linear(hex_colour)
    if matrix is not None:
        rgb = [min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb, strict=True)))) for row in matrix]
    return lab(rgb)


def ciede2000(lab1, lab2):
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1, a2 = a1 * (1 + g), a2 * (1 + g)
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1, h2 = math.degrees(math.atan2(b1, a1)) % 360, math.degrees(math.atan2(b2, a2)) % 360
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    big_dh = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    h_mean = h1 + h2 if c1 * c2 == 0 else (h1 + h2) / 2 + (180 if abs(h1 - h2) > 180 else 0)
    t = (1 - 0.17 * math.cos(math.radians(h_mean - 30)) + 0.24 * math.cos(math.radians(2 * h_mean))
         + 0.32 * math.cos(math.radians(3 * h_mean + 6)) - 0.20 * math.cos(math.radians(4 * h_mean - 63)))
    rt = -2 * math.sqrt(c_mean**7 / (c_mean**7 + 25**7)) * math.sin(
        math.radians(60 * math.exp(-(((h_mean - 275) / 25) ** 2))))
    sl = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    sc, sh = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    return math.sqrt(((l2 - l1) / sl) ** 2 + ((c2 - c1) / sc) ** 2 + (big_dh / sh) ** 2
                     + rt * (c2 - c1) / sc * big_dh / sh)


def test_ciede2000_matches_sharmas_reference_pairs():
    assert ciede2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) == pytest.approx(2.0425, abs=1e-4)
    assert ciede2000((50, -1.3802, -84.2814), (50, 0, -82.7485)) == pytest.approx(1.0, abs=1e-4)
    assert ciede2000((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387)) == pytest.approx(1.2644, abs=1e-4)


@pytest.mark.parametrize("vision", [None, *CVD])
def test_every_backend_mode_stays_apart_for_colour_blind_readers(vision):
    labels = [f"{b}·{m}" for b in BACKEND_COLOURS for m in ("jit", "eager")]
    matrix = CVD.get(vision)
    closest = min((ciede2000(seen(colour(a), matrix), seen(colour(b), matrix)), a, b)
                  for a, b in itertools.combinations(labels, 2))
    assert closest[0] >= APART, closest


def test_a_label_keeps_its_colour_whatever_follows_the_mode():
    assert colour("torch·eager") == colour("torch·eager·gpu") == colour("torch·eager @beta") != colour("torch·jit")
    assert colour("numpy·fd") == colour("numba·jit".replace("numba", "numpy"))
    assert colour("mylib·eager") == colour("mylib·jit")  # a user's backend: one colour, not a grey
    assert ink("#004488") == "#ffffff" and ink("#f4ec7a") == "#000000"


def test_the_report_the_site_and_the_notebook_give_a_backend_mode_one_colour(tmp_path):
    write_all([results_of(sweep_records())], tmp_path)
    numpy, jax = colour("numpy·eager"), colour("jax·jit")
    for plot in ("winners", "scaling-linreg", "bars-linreg", "roofline-float32"):
        svg = (tmp_path / "plots" / f"{plot}.svg").read_text().lower()
        assert jax in svg and (numpy in svg or plot == "winners"), plot  # numpy·eager wins no size of linreg
    (tmp_path / "store").mkdir()
    site = load_store(str(two_machine_store(tmp_path / "store")))
    page = workload_page(site, "sort")
    assert f"background:{colour('torch·eager·gpu')}" in page and f"background:{colour('numpy·eager')}" in page
    note = Results({"run_id": "r1"}, [CaseRecord.from_json(r) for r in sweep_records()])._repr_html_()
    assert f"background:{jax}" in note and f"background:{numpy}" in note
