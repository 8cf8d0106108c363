"""The figures of the ABCD study's pass/fail fit: each region's post-fit spectrum and their ratio.

A variant's fit is drawn as ``passfail.png`` (with ``passfail.cuts``, all
categories' passing events together), and each category of ``passfail.cuts``
as ``passfail_pass_<k>.png``, in the variant's folder ``passfail/<variant>/``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from rosenblatt.abcd.passfail import PassFailFit
    from rosenblatt.typing import FloatArray, IntArray

__all__ = ["category_figure", "passfail_figure"]


def passfail_figure(
    where: Path,
    fit: PassFailFit,
    edges: FloatArray,
    failing: FloatArray,
    passing: FloatArray,
    window: IntArray,
    expected: float,
    *,
    x_label: str,
    name: str = "passfail.png",
) -> str:
    """The post-fit spectra of both regions and their ratio, saved in ``where`` as ``name``.

    Parameters
    ----------
    where
        The variant's folder.
    fit
        The pass/fail fit.
    edges
        The fit's bin edges of ``x``.
    failing, passing
        The data failing and passing the cut per bin.
    window
        The blinded signal window's bins, whose passing data are not drawn.
    expected
        The background simulation's transfer ratio, drawn beside the fitted one.
    x_label
        The label of ``x``.
    name
        The file's name.

    Returns
    -------
    str
        The name of the file written.
    """
    from rosenblatt.plotting import plot_passfail, save_figure

    fig = plot_passfail(
        fit,
        edges,
        failing,
        passing,
        xlabel=x_label,
        expected_ratio=expected,
        hidden=window,
    )
    return save_figure(fig, where / name).name


def category_figure(
    where: Path,
    fit: PassFailFit,
    channel: str,
    edges: FloatArray,
    failing: FloatArray,
    passing: FloatArray,
    window: IntArray,
    expected: float,
    *,
    x_label: str,
) -> str:
    """One category's post-fit spectra, ``passfail_<channel>.png``: its channel of ``fit``.

    As :func:`passfail_figure`, with the fitted transfer ratio and passing
    background and signal of the category's channel, and ``passing`` and
    ``expected`` the category's own.
    """
    one = dataclasses.replace(
        fit,
        transfer=fit.transfers[channel],
        background_pass=fit.backgrounds_pass[channel],
        signal_pass=fit.signals_pass[channel],
    )
    return passfail_figure(
        where,
        one,
        edges,
        failing,
        passing,
        window,
        expected,
        x_label=x_label,
        name=f"passfail_{channel}.png",
    )
