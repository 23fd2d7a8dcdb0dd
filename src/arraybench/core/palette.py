"""One colour per backend·mode, the same in every plot, the winners map, the published site and the notebook.

A leaf (it imports nothing of arraybench), so the results' notebook display (results/display.py) and site/ can use
it without pulling in the report.
"""

from __future__ import annotations

# backend -> (jit and every other compiled mode, eager: the lighter one of the same hue). Chosen from
# Paul Tol's and Okabe & Ito's colour-blind-safe schemes and their tints so that the twelve stay
# apart for everyone: no two closer than CIEDE2000 8.5 under normal vision or simulated protanopia,
# deuteranopia or tritanopia (Machado et al. 2009), where the earlier palette came to 2.3
# (numba·eager against tensorflow·eager, for a protanope). tests/core/test_palette.py measures it.
BACKEND_COLOURS = {
    "numpy": ("#004488", "#b2c6db"),
    "numba": ("#009988", "#88bbaa"),
    "jax": ("#882255", "#f9d1d6"),
    "tensorflow": ("#db7058", "#eaae7f"),
    "torch": ("#997700", "#f4ec7a"),
    "cupy": ("#33bbee", "#cceeff"),
}
# A backend outside the registry (a user's) takes one of these by its name, in every mode; no grey,
# which the report keeps for cases that failed or did not run.
OTHER_COLOURS = ("#bbcc33", "#aa4499", "#332288", "#ee8866")
# What is not a result: a case that failed or was wrong (grey, hatched, its word in red) and one that did not run.
FAILED_GREY, FAILED_RED, NOT_RUN_GREY = "#9a9a9a", "#b00020", "#e4e4e4"


def colour(label: str) -> str:
    """The colour of a 'backend·mode' label (anything after the mode, a device or a machine, is ignored)."""
    backend, _, rest = label.partition("·")
    mode = rest.split("·", 1)[0].split(" ", 1)[0]
    if backend in BACKEND_COLOURS:
        compiled, eager = BACKEND_COLOURS[backend]
        return eager if mode == "eager" else compiled
    return OTHER_COLOURS[sum(map(ord, backend)) % len(OTHER_COLOURS)]


def ink(background: str) -> str:
    """Black or white, whichever reads better on `background` (WCAG relative luminance)."""
    def linear(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(background[i:i + 2], 16)) for i in (1, 3, 5))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    # Contrast with black is (L + 0.05) / 0.05, with white 1.05 / (L + 0.05): equal at L ≈ 0.179.
    return "#000000" if luminance > 0.179 else "#ffffff"
