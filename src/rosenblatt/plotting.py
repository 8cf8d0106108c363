"""Figures of the studies, drawn with mplhep on hist objects."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt._atomic import atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from rosenblatt.transforms import IRGI

__all__ = [
    "figure",
    "plot_dcc_scan",
    "plot_eta_map",
    "plot_irgi_grid",
    "plot_plane",
    "plot_plane_histogram",
    "save_figure",
]


def figure(ncols: int = 1, width: float = 7.0, height: float = 6.0) -> tuple[Figure, Any]:
    """A new figure in the mplhep ROOT style (non-interactive backend)."""
    from rosenblatt._extras import optional_imports

    with optional_imports("rosenblatt.plotting"):
        import matplotlib as mpl

        mpl.use("Agg")
        import matplotlib.pyplot as plt
        import mplhep

    plt.style.use(mplhep.style.ROOT)
    return plt.subplots(1, ncols, figsize=(width * ncols, height))


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as PNG and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    with atomic_write(path) as temporary:
        fig.savefig(temporary, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_plane(
    ax: Axes,
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    *,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    bins: int = 100,
    signal: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    xlabel: str = "x",
    ylabel: str = "y",
) -> None:
    """Background as a 2D histogram (log colour) and signal as contour lines."""
    import hist

    h: hist.Hist = hist.Hist(
        hist.axis.Regular(bins, *x_range, name="x", label=xlabel),
        hist.axis.Regular(bins, *y_range, name="y", label=ylabel),
    ).fill(x=x, y=y)
    s: hist.Hist | None = (
        None if signal is None else hist.Hist(h.axes[0], h.axes[1]).fill(x=signal[0], y=signal[1])
    )
    plot_plane_histogram(ax, h, s, xlabel=xlabel, ylabel=ylabel)


def plot_plane_histogram(
    ax: Axes, background: Any, signal: Any = None, *, xlabel: str = "x", ylabel: str = "y"
) -> None:
    """A filled 2D ``hist`` of the background (log colour), with the signal's as contour lines."""
    import mplhep
    from matplotlib.colors import LogNorm

    if background.values().max() > 0:
        mplhep.hist2dplot(background, ax=ax, norm=LogNorm(), cmap="Blues", cbarextend=False)
    if signal is not None:
        values = signal.values().T
        if values.max() > 0:
            centres = (signal.axes[0].centers, signal.axes[1].centers)
            levels = values.max() * np.array([0.05, 0.3, 0.7])
            ax.contour(*centres, values, levels=levels, colors="tab:orange", linewidths=1.2)
            ax.plot([], [], color="tab:orange", label="signal")
            ax.legend(loc="upper left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def plot_eta_map(ax: Axes, scan: Any, *, x_scale: float = 1.0, xlabel: str = r"$x_0$") -> None:
    """``|eta_A|`` of a closure scan over the cut grid (log colour), the best cut starred."""
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
    ax.figure.colorbar(mesh, ax=ax, label=r"|$\eta_A^{sig}$|")
    if np.isfinite(eta).any():
        i, j = np.unravel_index(int(np.nanargmin(eta)), eta.shape)
        ax.scatter(scan.x0[i] * x_scale, scan.y0[j], marker="*", s=300, color="tab:red")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"$y_0$")


def plot_irgi_grid(ax: Axes, transform: IRGI, *, vertex_size: float = 6.0) -> None:
    """Column boundaries, per-column ``y`` edges (black) and vertices (red) of an IRGI grid."""
    boundaries = transform.x_boundaries_
    edges = transform.y_edges_
    (_, _), (y_lo, y_hi) = transform.domain_
    ax.vlines(boundaries, y_lo, y_hi, colors="black", linewidths=0.6)
    for k in range(len(transform.x_centres_)):
        ax.hlines(edges[k, 1:-1], boundaries[k], boundaries[k + 1], colors="black", linewidths=0.4)
    xs, ys = transform.vertices()
    ax.scatter(xs, ys, s=vertex_size, color="tab:red", zorder=3, label="vertices")


def plot_dcc_scan(
    ax: Axes,
    parameter: Sequence[float],
    dcc: NDArray[np.float64],
    *,
    dcc_xy: NDArray[np.float64],
    floor: NDArray[np.float64] | None = None,
    xlabel: str,
    log_x: bool = False,
) -> None:
    """dCor^2 versus a transform parameter, one line per sub-sample.

    ``dcc`` has shape ``(n_subsamples, n_parameters)``; dashed lines give each
    sub-sample's dCor^2 before the transform, the grey band the permutation floor.
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
    ax.legend(fontsize="small", ncol=2)
