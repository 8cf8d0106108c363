"""Figures of the studies, drawn with mplhep on hist objects.

One style per decorrelation method (:data:`METHOD_STYLES`: a colour and a
marker, the same in every figure), axis labels with units for the built-in
quantities (:func:`quantity_label`), and figures laid out so that no text
leaves the canvas (:func:`figure` uses matplotlib's constrained layout).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt._atomic import atomic_write
from rosenblatt.typing import ArrayLike, FloatArray

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from rosenblatt.abcd.bumphunt import BumpHunt
    from rosenblatt.abcd.look_elsewhere import GlobalSignificance
    from rosenblatt.abcd.passfail import PassFailFit
    from rosenblatt.transforms import IRGI

__all__ = [
    "METHOD_STYLES",
    "QUANTITIES",
    "MethodStyle",
    "figure",
    "figure_key",
    "legend_above",
    "method_style",
    "plot_brazil",
    "plot_dcc_scan",
    "plot_eta_map",
    "plot_irgi_grid",
    "plot_local_significance",
    "plot_passfail",
    "plot_plane",
    "plot_plane_histogram",
    "quantity_label",
    "save_figure",
]


@dataclass(frozen=True)
class MethodStyle:
    """How one decorrelation method is drawn: its name in legends, colour and marker."""

    label: str
    colour: str
    marker: str


#: every method's style; colours and markers are distinct, colour-blind safe where possible
METHOD_STYLES: dict[str, MethodStyle] = {
    "raw": MethodStyle("raw score", "#000000", "o"),
    "rarity": MethodStyle("rarity", "#7F7F7F", "P"),
    "ddt": MethodStyle("DDT", "#E69F00", "s"),
    "flow": MethodStyle("conditional flow", "#AA3377", "X"),
    "irgi": MethodStyle("IRGI", "#CC3311", "^"),
    "kde": MethodStyle("KDE", "#228833", "v"),
    "grid_kde": MethodStyle("GridKDE", "#33BBEE", "D"),
    "disco": MethodStyle("DisCo", "#0044AA", "h"),
    "information_filter": MethodStyle("information filter", "#CCBB44", "<"),
    "threshold_optimizer": MethodStyle("threshold optimizer", "#995500", ">"),
}

#: other names of the same methods (the studies' keys and the transforms' kinds)
_ALIASES = {
    "baseline": "raw",
    "score": "raw",
    "gridkde": "grid_kde",
    "conditional_flow": "flow",
}

#: the style of a name that is no known method
_OTHER = MethodStyle("", "#555555", "*")


def method_style(name: str) -> MethodStyle:
    """The style of the method called ``name`` (a key of :data:`METHOD_STYLES` or an alias).

    A name that is no known method (a transform the user named) gets a dark grey
    star and its own name as label.
    """
    key = _ALIASES.get(name, name)
    style = METHOD_STYLES.get(key)
    return style if style is not None else MethodStyle(name, _OTHER.colour, _OTHER.marker)


#: the built-in quantities: how they are written and their unit
QUANTITIES: dict[str, tuple[str, str]] = {
    "mjj": (r"$m_{jj}$", "GeV"),
    "mj1": (r"$m_{j1}$", "GeV"),
    "mj2": (r"$m_{j2}$", "GeV"),
    "pt_j1": (r"$p_{T,j1}$", "GeV"),
    "deta_jj": (r"$|\Delta\eta_{jj}|$", ""),
}


def quantity_label(name: str, *, label: str | None = None, unit: str | None = None) -> str:
    """The axis label of a quantity: ``"$m_{jj}$ [GeV]"``.

    Parameters
    ----------
    name : str
        The quantity's name; a built-in one (:data:`QUANTITIES`) gives the
        symbol and unit when ``label`` and ``unit`` are not given.
    label : str, optional
        How the quantity is written; defaults to its symbol, else ``name``.
    unit : str, optional
        Its unit; ``""`` for none. Defaults to the built-in unit, else none.
    """
    symbol, known_unit = QUANTITIES.get(name, (name, ""))
    text = symbol if label is None else label
    unit = known_unit if unit is None else unit
    return f"{text} [{unit}]" if unit else text


def figure(
    ncols: int = 1, width: float = 7.0, height: float = 6.0, nrows: int = 1, key: float = 0.0
) -> tuple[Figure, Any]:
    """A new figure in the mplhep ROOT style, constrained layout, non-interactive backend.

    Each panel is ``width`` by ``height`` inches; ``key`` inches are added to
    the width for a key beside the panels.
    """
    from rosenblatt._extras import optional_imports

    with optional_imports("rosenblatt.plotting"):
        import matplotlib as mpl

        mpl.use("Agg")
        import matplotlib.pyplot as plt
        import mplhep

    plt.style.use(mplhep.style.ROOT)
    return plt.subplots(
        nrows, ncols, figsize=(width * ncols + key, height * nrows), layout="constrained"
    )


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as PNG (cropped to its content) and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    with atomic_write(path) as temporary:
        fig.savefig(temporary, dpi=110, bbox_inches="tight", pad_inches=0.05)
    plt.close(fig)
    return path


#: the colour of the signal's contours and of the chosen cut
SIGNAL_COLOUR = "#EE7733"
CUT_COLOUR = "#CC3311"


def plot_plane(
    ax: Axes,
    x: FloatArray,
    y: FloatArray,
    *,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    bins: int = 100,
    signal: tuple[FloatArray, FloatArray] | None = None,
    xlabel: str = "x",
    ylabel: str = "y",
    cut: tuple[float, float] | None = None,
) -> None:
    """Background as a 2D histogram (log colour) and signal as contour lines."""
    import hist

    h: hist.Hist[hist.storage.Double] = hist.Hist(
        hist.axis.Regular(bins, *x_range, name="x", label=xlabel),
        hist.axis.Regular(bins, *y_range, name="y", label=ylabel),
    ).fill(x=x, y=y)
    s: hist.Hist[hist.storage.Double] | None = (
        None if signal is None else hist.Hist(h.axes[0], h.axes[1]).fill(x=signal[0], y=signal[1])
    )
    plot_plane_histogram(ax, h, s, xlabel=xlabel, ylabel=ylabel, cut=cut)


def plot_plane_histogram(
    ax: Axes,
    background: Any,
    signal: Any = None,
    *,
    xlabel: str = "x",
    ylabel: str = "y",
    cut: tuple[float, float] | None = None,
    zlabel: str = "background events per bin",
) -> None:
    """A filled 2D ``hist`` of the background (log colour), with the signal's as contour lines.

    The colour bar is labelled ``zlabel``; ``cut`` ``(x0, y0)`` is drawn as two
    lines. The signal's contours and the cut are labelled for a key
    (:func:`figure_key`).
    """
    import mplhep
    from matplotlib.colors import LogNorm

    if background.values().max() > 0:
        artists = mplhep.hist2dplot(background, ax=ax, norm=LogNorm(), cmap="Blues", cbar=False)
        ax.figure.colorbar(artists.pcolormesh, ax=ax, label=zlabel)
    if signal is not None:
        values = signal.values().T
        if values.max() > 0:
            centres = (signal.axes[0].centers, signal.axes[1].centers)
            levels = values.max() * np.array([0.05, 0.3, 0.7])
            ax.contour(*centres, values, levels=levels, colors=SIGNAL_COLOUR, linewidths=1.2)
            ax.plot([], [], color=SIGNAL_COLOUR, label="signal (5, 30, 70% of peak)")
    if cut is not None:
        ax.axvline(cut[0], color=CUT_COLOUR, ls="--", lw=1.5, label="chosen cut")
        ax.axhline(cut[1], color=CUT_COLOUR, ls="--", lw=1.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def legend_above(ax: Axes, ncol: int = 1, **kwargs: Any) -> None:
    """The axes' key above its frame, outside the data."""
    options: dict[str, Any] = {
        "loc": "lower left",
        "bbox_to_anchor": (0.0, 1.01),
        "ncol": ncol,
        "fontsize": "small",
        "frameon": False,
        "borderaxespad": 0.0,
        "handlelength": 1.5,
        "columnspacing": 1.0,
    }
    ax.legend(**{**options, **kwargs})


def plot_eta_map(
    ax: Axes,
    scan: Any,
    *,
    x_scale: float = 1.0,
    xlabel: str = r"$x_0$",
    ylabel: str = r"$y_0$",
    chosen: tuple[float, float] | None = None,
) -> None:
    """``|eta_A|`` of a closure scan over the cut grid (log colour).

    The cut of smallest ``|eta_A|`` is starred; ``chosen`` (in the scan's units,
    before ``x_scale``) is marked as the chosen cut; both are labelled for a key.
    """
    from matplotlib.colors import LogNorm

    eta = np.where(scan.valid, np.abs(scan.eta), np.nan)
    mesh = ax.pcolormesh(
        scan.x0 * x_scale,
        scan.y0,
        eta.T,
        norm=LogNorm(vmin=1e-6, vmax=1),
        cmap="viridis",
        shading="nearest",
    )
    ax.figure.colorbar(mesh, ax=ax, label=r"non-closure $|\eta_A^{sig}|$")
    if np.isfinite(eta).any():
        i, j = np.unravel_index(int(np.nanargmin(eta)), eta.shape)
        ax.scatter(
            scan.x0[i] * x_scale,
            scan.y0[j],
            marker="*",
            s=300,
            color="white",
            edgecolors="black",
            label=r"smallest $|\eta_A^{sig}|$",
            zorder=3,
        )
    if chosen is not None:
        ax.scatter(
            chosen[0] * x_scale,
            chosen[1],
            marker="o",
            s=500,
            facecolors="none",
            edgecolors=CUT_COLOUR,
            linewidths=2.5,
            label="chosen cut",
            zorder=4,
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def figure_key(fig: Figure, ncol: int = 4, title: str | None = None) -> None:
    """One key for every labelled artist of the figure's axes, above the panels.

    ``title`` heads the key: the figure's title, above its key and never on it.
    """
    entries: dict[str, Any] = {}
    for ax in fig.axes:
        handles, labels = ax.get_legend_handles_labels()
        entries.update(zip(labels, handles, strict=True))
    if entries:
        fig.legend(
            list(entries.values()),
            list(entries),
            loc="outside upper center",
            ncol=min(ncol, len(entries)),
            fontsize="small",
            frameon=False,
            title=title,
            title_fontsize="medium",
        )
    elif title is not None:
        fig.suptitle(title, fontsize="medium")


def plot_irgi_grid(ax: Axes, transform: IRGI, *, vertex_size: float = 6.0) -> None:
    """Column boundaries, per-column ``y`` edges (black) and vertices (red) of an IRGI grid, labelled."""
    boundaries = transform.x_boundaries_
    edges = transform.y_edges_
    (_, _), (y_lo, y_hi) = transform.domain_
    ax.vlines(boundaries, y_lo, y_hi, colors="black", linewidths=0.6, label="IRGI cells")
    for k in range(len(transform.x_centres_)):
        ax.hlines(edges[k, 1:-1], boundaries[k], boundaries[k + 1], colors="black", linewidths=0.4)
    xs, ys = transform.vertices()
    ax.scatter(
        xs,
        ys,
        s=vertex_size,
        color=METHOD_STYLES["irgi"].colour,
        zorder=3,
        label="IRGI vertices",
    )


def plot_dcc_scan(
    ax: Axes,
    parameter: Sequence[float],
    dcc: FloatArray,
    *,
    dcc_xy: FloatArray,
    floor: FloatArray | None = None,
    xlabel: str,
    log_x: bool = False,
) -> None:
    """dCor^2 versus a transform parameter, one line per sub-sample.

    ``dcc`` has shape ``(n_subsamples, n_parameters)``; dashed lines give each
    sub-sample's dCor^2 before the transform, the grey band the permutation floor.
    The key sits above the axes.
    """
    if dcc.shape[0] > 8:
        # many sub-samples: their median and range
        ax.fill_between(
            parameter,
            dcc.min(axis=0),
            dcc.max(axis=0),
            color="C0",
            alpha=0.3,
            label=f"{dcc.shape[0]} sub-samples: range",
        )
        ax.plot(parameter, np.median(dcc, axis=0), marker="o", ms=4, color="C0", label="median")
        ax.axhline(
            float(np.median(dcc_xy)), color="C0", ls="--", lw=1, label="before the transform"
        )
    else:
        for i in range(dcc.shape[0]):
            colour = f"C{i}"
            ax.plot(parameter, dcc[i], marker="o", ms=4, color=colour, label=f"sub-sample {i + 1}")
            ax.axhline(dcc_xy[i], color=colour, ls="--", lw=1)
        ax.plot([], [], color="grey", ls="--", lw=1, label="dashed: before the transform")
    if floor is not None:
        ax.axhspan(
            float(np.min(floor)),
            float(np.max(floor)),
            color="grey",
            alpha=0.3,
            label="permutation floor",
        )
    ax.set_yscale("log")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"dCor$^2$(x, $\gamma$)")
    legend_above(ax)


def plot_passfail(
    fit: PassFailFit,
    edges: FloatArray,
    failing: FloatArray,
    passing: FloatArray,
    *,
    xlabel: str = r"$x$",
    expected_ratio: float | None = None,
    hidden: ArrayLike | None = None,
) -> Figure:
    """The post-fit spectra of the passing and failing regions, and their ratio.

    Top two panels: the data of each region (points with Poisson errors) over
    the fitted background and signal, stacked. Bottom: the data's pass/fail
    ratio per bin of ``x``, the fitted transfer ratio and, where given, its
    expectation ``eps / (1 - eps)``. The bins of ``hidden`` (indices: a blinded
    signal window) show no passing data and no ratio, whatever ``passing``
    holds there.
    """
    import mplhep

    passing = np.asarray(passing, dtype=np.float64).copy()
    if hidden is not None:
        passing[np.asarray(hidden, dtype=np.intp)] = np.nan
    fig, axes = figure(nrows=3, width=8.0, height=3.6)
    for ax, name, data, background, signal in (
        (axes[0], "pass", passing, fit.background_pass, fit.signal_pass),
        (axes[1], "fail", failing, fit.background_fail, fit.signal_fail),
    ):
        mplhep.histplot(
            [background, signal],
            edges,
            ax=ax,
            stack=True,
            histtype="fill",
            color=["#BBBBBB", SIGNAL_COLOUR],
            label=["background (post-fit)", rf"signal, $\mu$ = {fit.mu:.2f}"],
        )
        mplhep.histplot(
            data, edges, ax=ax, histtype="errorbar", yerr=np.sqrt(data), color="black", label="data"
        )
        ax.set_ylabel(f"events, {name}")
        ax.set_yscale("log")
        legend_above(ax, ncol=2, fontsize="x-small")
    centres = 0.5 * (edges[1:] + edges[:-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = passing / failing
        error = ratio * np.sqrt(1.0 / passing + 1.0 / failing)
    axes[2].errorbar(centres, ratio, yerr=error, fmt="o", color="black", label="data: pass / fail")
    axes[2].axhline(fit.transfer, color=CUT_COLOUR, label=f"fitted ratio {fit.transfer:.4f}")
    if expected_ratio is not None:
        axes[2].axhline(
            expected_ratio, color="grey", ls="--", label=f"expected {expected_ratio:.4f}"
        )
    axes[2].set_xlim(edges[0], edges[-1])
    axes[2].set_ylabel("pass / fail")
    axes[2].set_xlabel(xlabel)
    legend_above(axes[2], ncol=2, fontsize="x-small")
    return fig


#: the colours of the expected limit's bands, +-1 and +-2 standard deviations
BRAZIL_GREEN, BRAZIL_YELLOW = "#00CC00", "#FFCC00"


def plot_brazil(
    hunt: BumpHunt,
    *,
    xlabel: str = "mass hypothesis",
    log: bool = True,
) -> Figure:
    """The expected and observed CLs upper limits on ``mu`` per mass hypothesis.

    The expected median dashed, its +-1 standard deviation band green and its
    +-2 band yellow, the observed limit a solid line with markers (left out
    where it is nowhere finite: a blinded hunt has expected limits only).

    Parameters
    ----------
    hunt
        A :func:`~rosenblatt.abcd.bumphunt.bump_hunt`.
    xlabel
        The label of the mass axis.
    log
        Whether the axis of ``mu`` is logarithmic.
    """
    fig, ax = figure(width=8.0, height=5.5)
    masses, expected = hunt.masses, hunt.expected_limits
    confidence = f"{100 * (1 - hunt.level):.0f}%"
    ax.fill_between(
        masses, expected[:, 0], expected[:, 4], color=BRAZIL_YELLOW, label=r"expected $\pm 2\sigma$"
    )
    ax.fill_between(
        masses, expected[:, 1], expected[:, 3], color=BRAZIL_GREEN, label=r"expected $\pm 1\sigma$"
    )
    single = {"marker": "_", "ms": 12} if masses.size == 1 else {}
    ax.plot(masses, expected[:, 2], color="black", ls="--", label="expected (median)", **single)
    if np.any(np.isfinite(hunt.observed_limit)):
        ax.plot(masses, hunt.observed_limit, color="black", marker="o", ms=4, label="observed")
    if log:
        ax.set_yscale("log")
    if masses[-1] > masses[0]:
        ax.set_xlim(masses[0], masses[-1])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(rf"{confidence} CL$_s$ upper limit on $\mu$")
    legend_above(ax, ncol=2)
    return fig


def plot_local_significance(
    hunt: BumpHunt,
    *,
    xlabel: str = "mass hypothesis",
    global_significance: GlobalSignificance | None = None,
) -> Figure:
    """The local significance per mass hypothesis, with the global one of its largest if given.

    Grey dotted lines mark 1 to 5 standard deviations.
    """
    fig, ax = figure(width=8.0, height=5.0)
    ax.plot(hunt.masses, hunt.local_z, color="black", marker="o", ms=4, label="local significance")
    top = max(float(np.max(hunt.local_z)), 1.0)
    for z in range(1, int(top) + 2):
        ax.axhline(z, color="grey", ls=":", lw=1)
    if global_significance is not None:
        g = global_significance
        n_toys = int(np.size(g.toys_max_z))
        toys = f"< {1 / n_toys:.2g}" if g.p_toys == 0 else f"{g.p_toys:.3g}"
        ax.plot(
            [],
            [],
            " ",
            label=(
                f"global p of {g.local_z:.2f}$\\sigma$: {toys} ({n_toys} toys),\n"
                f"{g.p_gross_vitells:.3g} (Gross-Vitells)"
            ),
        )
    ax.set_ylim(-0.1, top + 1.0)
    if hunt.masses[-1] > hunt.masses[0]:
        ax.set_xlim(hunt.masses[0], hunt.masses[-1])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"local significance [$\sigma$]")
    legend_above(ax)
    return fig
