"""The studies' figures: one style per method, units on the axes, nothing outside the canvas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mplhep")

import matplotlib.colors as mcolors

from rosenblatt import plotting


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every figure saved by the code under test, checked to lie within its canvas first."""
    figures: list[Any] = []
    save = plotting.save_figure

    def checked_save(fig: Any, path: str | Path) -> Path:
        assert_inside_canvas(fig)
        figures.append(fig)
        return save(fig, path)

    monkeypatch.setattr(plotting, "save_figure", checked_save)
    return figures


def assert_inside_canvas(fig: Any) -> None:
    """Every axes (with its labels, ticks, titles and keys), key and text lies on the canvas."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    parts = [
        *((f"axes {ax.get_xlabel()!r}/{ax.get_ylabel()!r}", ax) for ax in fig.axes),
        *((f"key {i}", legend) for i, legend in enumerate(fig.legends)),
        *((f"text {text.get_text()!r}", text) for text in fig.texts),
    ]
    if fig._suptitle is not None:
        parts.append(("title", fig._suptitle))
    outside = []
    for name, artist in parts:
        box = artist.get_tightbbox(renderer)
        if box is None:
            continue
        if (
            box.x0 < canvas.x0 - 1
            or box.y0 < canvas.y0 - 1
            or box.x1 > canvas.x1 + 1
            or box.y1 > canvas.y1 + 1
        ):
            outside.append(name)
    assert not outside, f"beyond the canvas: {outside}"
    # the figure's title and its keys do not cover each other
    if fig._suptitle is not None and fig._suptitle.get_text():
        title = fig._suptitle.get_window_extent(renderer)
        for legend in fig.legends:
            assert not title.overlaps(legend.get_window_extent(renderer))


def rgba(colour: Any) -> tuple[float, ...]:
    return tuple(np.round(mcolors.to_rgba(colour), 4))


def legend_entries(fig: Any) -> dict[str, Any]:
    """The legend handles of a figure (its own key and its axes' keys) by label."""
    entries: dict[str, Any] = {}
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if legend is None:
            continue
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            entries[text.get_text()] = handle
    return entries


def handle_colour(handle: Any) -> tuple[float, ...]:
    """The colour a key shows for an entry: a line's, a marker set's face, an outline's edge."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if isinstance(handle, Line2D):
        return rgba(handle.get_color())
    if isinstance(handle, Patch):
        face = mcolors.to_rgba(handle.get_facecolor())
        return rgba(handle.get_edgecolor() if face[3] == 0 else face)
    assert isinstance(handle, Collection), handle
    faces = handle.get_facecolor()
    return rgba(faces[0] if len(faces) else handle.get_edgecolor()[0])


def test_every_method_has_its_own_colour_and_marker() -> None:
    styles = plotting.METHOD_STYLES
    colours = [rgba(s.colour) for s in styles.values()]
    markers = [s.marker for s in styles.values()]
    labels = [s.label for s in styles.values()]
    assert len(set(colours)) == len(styles)
    assert len(set(markers)) == len(styles)
    assert len(set(labels)) == len(styles)
    # the studies' other names of a method draw it alike
    assert plotting.method_style("baseline") == styles["raw"]
    assert plotting.method_style("score") == styles["raw"]
    assert plotting.method_style("gridkde") == styles["grid_kde"]
    # a name the user chose is drawn apart from every known method, under its own name
    other = plotting.method_style("my_transform")
    assert other.label == "my_transform"
    assert rgba(other.colour) not in colours
    assert other.marker not in markers


def test_quantity_labels_carry_units() -> None:
    for name in ("mjj", "mj1", "mj2", "pt_j1"):
        assert plotting.quantity_label(name).endswith(" [GeV]"), name
    assert plotting.quantity_label("mjj") == "$m_{jj}$ [GeV]"
    assert plotting.quantity_label("deta_jj") == r"$|\Delta\eta_{jj}|$"
    assert plotting.quantity_label("my_branch") == "my_branch"
    assert plotting.quantity_label("my_branch", unit="TeV") == "my_branch [TeV]"
    assert plotting.quantity_label("mjj", label="dijet mass", unit="") == "dijet mass"


def peers_rows() -> dict[str, dict[str, Any]]:
    """An evaluation of every method as :func:`rosenblatt.studies.peers.evaluate` returns it."""
    rows = {}
    for i, name in enumerate(("raw", "rarity", "ddt", "flow", "irgi", "kde", "grid_kde", "disco")):
        given = name in ("raw", "disco")
        rows[name] = {
            "kind": "score" if given else "transform",
            "rms_exact": None if given else 0.01 * (i + 1),
            "dcc": 1e-4 * (i + 1),
            "dcc_floor": 2e-5,
            "dcc_floor_std": 5e-6,
            "fit_seconds": 10.0 ** (i - 4),
            "transform_seconds_per_1e6": 0.2,
        }
    return rows


@pytest.mark.slow
def test_peers_figure_draws_each_method_in_its_colour(drawn: list[Any], tmp_path: Path) -> None:
    from rosenblatt.studies import peers

    rows = peers_rows()
    assert peers.plot(rows, tmp_path / "peers.png") == "peers.png"
    (fig,) = drawn
    entries = legend_entries(fig)
    for name in rows:
        handle = entries[peers.LABELS[name]]
        assert handle_colour(handle) == rgba(plotting.method_style(name).colour), name
    # the points themselves carry the colours and markers of their methods
    by_label = {peers.LABELS[name]: name for name in rows}
    points = [c for c in fig.axes[-1].collections if c.get_label() in by_label]
    assert len(points) == 6  # every method with a fit; the raw score and DisCo are lines
    for collection in points:
        method = plotting.method_style(by_label[collection.get_label()])
        assert rgba(collection.get_facecolor()[0]) == rgba(method.colour)
    # the key lies beside the panels, on no data
    fig.canvas.draw()
    legend = fig.legends[0]
    for axes in fig.axes:
        for text in legend.get_texts():
            assert not text.get_window_extent().overlaps(axes.get_window_extent())
        for collection in axes.collections:
            shown = collection.get_transform().transform(collection.get_offsets())
            assert not legend.get_window_extent().count_contains(shown)


def abcd_output(x_label: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """ABCD and plane histograms of a raw score and one transform, with their closure scans."""
    from rosenblatt.abcd import closure_scan
    from rosenblatt.processors.analysis import PlaneBinning, Variant, empty_output, fill_variants

    rng = np.random.default_rng(3)
    n = 20_000
    x = rng.uniform(2000.0, 5000.0, n)
    score = rng.uniform(size=n)
    process = (rng.uniform(size=n) < 0.05).astype(np.int64)
    variants = [
        Variant("score", "score", (0.3, 0.5, 0.7)),
        Variant("irgi", "score", (0.3, 0.5, 0.7)),
    ]
    x0 = (2500.0, 3000.0, 3500.0)
    output = empty_output(variants, x0, PlaneBinning(40, (2000.0, 5000.0), 20), x_label)
    fill_variants(
        output, variants, dataset="qcd", x=x, scores={"score": score}, process=process,
        weight=np.ones(n),
    )  # fmt: skip
    scans = {v: closure_scan(h[{"dataset": sum}]) for v, h in output["abcd"].items()}
    return output, scans


@pytest.mark.slow
def test_abcd_figures_have_units_labelled_colour_bars_and_the_cut(
    drawn: list[Any], tmp_path: Path
) -> None:
    from rosenblatt.studies.abcd.config import AbcdCuts
    from rosenblatt.studies.abcd.outputs import draw_figures

    cuts = AbcdCuts.parse(
        {"x": "mjj", "x0": [2500.0, 3500.0], "n_x0": 3, "y0": [0.3, 0.7], "n_y0": 3}, "c.yaml"
    )
    assert cuts.x_axis_label == "$m_{jj}$ [GeV]"
    output, scans = abcd_output(cuts.x_label)
    names = draw_figures(tmp_path, output, scans, cuts.x_axis_label, {"irgi": (3000.0, 0.5)})
    assert names == {"score": "abcd_score.png", "irgi": "abcd_irgi.png"}
    assert all((tmp_path / name).is_file() for name in names.values())
    for fig, variant in zip(drawn, ("score", "irgi"), strict=True):
        plane, bar_plane, eta, bar_eta = (
            fig.axes[0], fig.axes[2], fig.axes[1], fig.axes[3]
        )  # fmt: skip
        assert plane.get_xlabel() == "$m_{jj}$ [GeV]"
        assert eta.get_xlabel().endswith("$m_{jj}$ [GeV]")
        assert bar_plane.get_ylabel() == "background events per bin"
        assert "eta" in bar_eta.get_ylabel()
        assert ("chosen cut" in legend_entries(fig)) == (variant == "irgi")
    # the chosen cut is drawn where it was chosen, on both panels
    fig = drawn[1]
    plane = fig.axes[0]
    lines = [line for line in plane.get_lines() if line.get_linestyle() == "--"]
    assert max(float(np.asarray(line.get_xdata())[0]) for line in lines) == 3000.0
    assert any(float(np.asarray(line.get_ydata())[0]) == 0.5 for line in lines)
    marker = next(c for c in fig.axes[1].collections if c.get_label() == "chosen cut")
    np.testing.assert_allclose(marker.get_offsets(), [[3000.0, 0.5]])


def test_abcd_axis_label_and_unit_come_from_the_configuration() -> None:
    from rosenblatt.studies.abcd.config import AbcdCuts, ConfigError

    base = {"x0": [1.0, 2.0], "y0": [0.3, 0.7]}
    given = AbcdCuts.parse(
        {**base, "x": "dijet_mass", "x_axis": {"label": "$m_{jj}$", "unit": "TeV"}}, "c.yaml"
    )
    assert given.x_axis_label == "$m_{jj}$ [TeV]"
    assert AbcdCuts.parse({**base, "x": "dijet_mass"}, "c.yaml").x_axis_label == "dijet_mass"
    assert AbcdCuts.parse({**base, "x": "pt_j1"}, "c.yaml").x_axis_label == "$p_{T,j1}$ [GeV]"
    with pytest.raises(ConfigError, match=r"abcd\.x_axis\.label.*mathtext"):
        AbcdCuts.parse({**base, "x": "mjj", "x_axis": {"label": r"$\notacommand$"}}, "c.yaml")
    with pytest.raises(ConfigError, match=r"abcd\.x_axis.*unknown|abcd\.x_axis.*colour"):
        AbcdCuts.parse({**base, "x": "mjj", "x_axis": {"colour": "red"}}, "c.yaml")


def closures() -> dict[str, Any]:
    """Closure scans of four classifiers (the LHCO study's) on the same events."""
    from rosenblatt.abcd import closure_scan

    output, _ = abcd_output("mjj")
    scan = closure_scan(output["abcd"]["irgi"][{"dataset": sum}])
    return dict.fromkeys(("baseline", "irgi", "kde", "disco"), scan)


def test_lhco_roc_curves_in_their_methods_colours_with_the_key_off_the_curves(
    drawn: list[Any], tmp_path: Path
) -> None:
    from rosenblatt.studies.lhco import report_figures as report

    rng = np.random.default_rng(5)
    label = np.r_[np.zeros(5000, dtype=np.int64), np.ones(500, dtype=np.int64)]
    scores = {
        name: np.r_[rng.uniform(size=5000), rng.beta(3 + i, 1, size=500)]
        for i, name in enumerate(("baseline", "irgi", "kde", "disco"))
    }
    summary = {name: {"auc": 0.9, "auc_err": 0.01} for name in scores}
    assert report._roc(tmp_path, summary, label, scores) == "roc.png"
    (fig,) = drawn
    ax = fig.axes[0]
    assert {line.get_label().split(" (")[0]: rgba(line.get_color()) for line in ax.lines} == {
        report.LABELS[name]: rgba(plotting.method_style(name).colour) for name in scores
    }
    assert len({line.get_marker() for line in ax.lines}) == 4
    # the key sits outside the axes, so no curve runs under it
    fig.canvas.draw()
    for text in ax.get_legend().get_texts():
        assert not text.get_window_extent().overlaps(ax.get_window_extent())
    # no point at a background efficiency of zero (an infinite rejection)
    assert all(np.isfinite(line.get_ydata()).all() for line in ax.lines)


@pytest.mark.slow
def test_lhco_eta_lines_have_a_key_for_their_cut(drawn: list[Any], tmp_path: Path) -> None:
    from rosenblatt.studies.lhco import report_figures as report

    scans = closures()
    assert report._eta_lines(tmp_path, scans) == "eta_vs_y0.png"
    (fig,) = drawn
    panels, bars = fig.axes[:4], fig.axes[4:]
    assert len(bars) == 1
    assert "$x_0$" in bars[0].get_ylabel()
    assert "[TeV]" in bars[0].get_ylabel()
    # each line's colour is the colour bar's at its x0
    colorbar = bars[0]._colorbar
    x0 = next(iter(scans.values())).x0 / 1000
    assert len(panels[0].lines) == len(x0)
    for line, value in zip(panels[0].lines, x0, strict=True):
        assert rgba(line.get_color()) == rgba(colorbar.cmap(colorbar.norm(value)))


@pytest.mark.slow
def test_lhco_contamination_and_histograms_stay_on_the_canvas(
    drawn: list[Any], tmp_path: Path
) -> None:
    from rosenblatt.studies.lhco import report_figures as report

    rows = [
        {
            "classifier": name,
            "fraction": fraction,
            "signal_bias": -fraction,
            "signal_bias_err": 0.05,
            "auc": 0.95 - fraction,
            "auc_err": 0.001,
            "dcc": 1e-4 + fraction / 10,
            "dcc_err": 1e-5,
        }
        for name in ("irgi", "kde")
        for fraction in (0.0, 0.001, 0.01, 0.05, 0.1)
    ]
    assert report._contamination_figure(tmp_path, rows) == "contamination.png"
    assert report._eta_histograms(tmp_path, closures()) == "eta_histograms.png"
    contamination, histograms = drawn
    for fig in (contamination, histograms):
        for name, handle in legend_entries(fig).items():
            method = next(n for n, label in report.LABELS.items() if label == name)
            assert handle_colour(handle) == rgba(plotting.method_style(method).colour)


@pytest.mark.slow
def test_fairness_methods_take_their_decorrelation_methods_style(
    drawn: list[Any], tmp_path: Path
) -> None:
    from rosenblatt.studies.fairness import report as fairness_report

    rows = [
        {
            "name": name,
            "label": name,
            "dcc": 1e-3 * (i + 1),
            "dcc_sd": 1e-4,
            "auc": 0.7 + 0.01 * i,
            "auc_sd": 0.005,
            "dcc_floor": 2e-4,
            **{
                f"{spread}{sd}": [0.1 + 0.01 * i, 0.05, 0.02]
                for spread in ("demographic_parity", "equalised_odds")
                for sd in ("", "_sd")
            },
        }
        for i, name in enumerate(fairness_report.METHODS)
    ]
    section = {"methods": rows, "working_points": [0.2, 0.5, 0.8]}
    assert set(fairness_report._spread_figures(tmp_path, section).values()) == {
        "spread_demographic_parity.png",
        "spread_equalised_odds.png",
    }
    for spread in drawn:
        lines = {line.get_label(): line for line in spread.axes[0].lines}
        for name, (method, line_style, _) in fairness_report.METHODS.items():
            assert rgba(lines[name].get_color()) == rgba(plotting.method_style(method).colour)
            assert lines[name].get_linestyle() == line_style
    drawn.clear()
    assert fairness_report._auc_vs_dcc(tmp_path, rows) == "auc_vs_dcc.png"
    (fig,) = drawn
    points = {c.get_label(): c.lines[0] for c in fig.axes[0].containers}
    assert set(points) == set(fairness_report.METHODS)
    assert set(points) <= set(legend_entries(fig))
    for name, (method, _, fill) in fairness_report.METHODS.items():
        style = plotting.method_style(method)
        assert rgba(points[name].get_color()) == rgba(style.colour), name
        assert points[name].get_marker() == style.marker
        assert points[name].get_fillstyle() == fill
    # the two classifiers of one method differ in how their markers are filled
    assert points["lr_gridkde"].get_fillstyle() != points["hgb_gridkde"].get_fillstyle()


@pytest.mark.slow
def test_blob_figures_stay_on_the_canvas_in_their_methods_colours(
    drawn: list[Any], tmp_path: Path
) -> None:
    from rosenblatt.studies.blobs import report as blobs_report

    summary = {
        "irgi": {"values": [1, 2, 3, 4], "rms_exact": [0.2, 0.1, 0.05, 0.03]},
        "kde": {"values": [0.02, 0.1, 0.5, 1.0], "rms_exact": [0.04, 0.02, 0.03, 0.1]},
        "variants": [
            {
                "estimator": estimator,
                "chosen": chosen,
                "selection": {"values": values, "scores": [0.2, 0.17, 0.18]},
            }
            for estimator, chosen, values in (
                ("IRGI depth=auto", 2, [1, 2, 3]),
                ("KDE sigma_r=auto", 0.1, [0.05, 0.1, 0.2]),
                ("GridKDE degree 2, sigma_r=auto", 0.1, [0.05, 0.1, 0.2]),
            )
        ],
    }
    assert blobs_report._rms_figure(tmp_path, summary) == "rms_vs_exact.png"
    assert blobs_report._selection_figure(tmp_path, summary) == "automatic_selection.png"
    rms, selection = drawn
    colours = {
        line.get_label().split(" ")[0]: rgba(line.get_color())
        for line in rms.legends[0].get_lines()
    }
    assert colours == {
        "IRGI": rgba(plotting.METHOD_STYLES["irgi"].colour),
        "KDE": rgba(plotting.METHOD_STYLES["kde"].colour),
    }
    for ax, method in zip(selection.axes, ("irgi", "kde", "grid_kde"), strict=True):
        assert rgba(ax.lines[0].get_color()) == rgba(plotting.METHOD_STYLES[method].colour)


@pytest.mark.slow
def test_lhco_2d_figures_name_the_observables_with_units(drawn: list[Any], tmp_path: Path) -> None:
    from rosenblatt.studies.lhco import report_2d

    targets = ("mjj", "pt_j1", "joint")
    methods = {
        key: {"label": key, "dcc": {t: {"value": 1e-3, "floor": 2e-4} for t in targets}}
        for key in ("baseline", "irgi_1d", "irgi_joint")
    }
    profile = {"x": [1300.0, 1500.0], "mean": [0.4, 0.5], "error": [0.01, 0.01]}
    summary = {
        "protected": ["mjj", "pt_j1"],
        "methods": methods,
        "profiles": {
            "slice_edges": [1500.0, 2500.0, 5000.0],
            "profiles": {key: [profile, profile] for key in methods},
        },
    }
    assert report_2d._dcor_figure(tmp_path, summary) == "dcor2.png"
    assert report_2d._profile_figure(tmp_path, summary) == "profiles.png"
    dcor, profiles = drawn
    assert "permutation floor" in legend_entries(dcor)
    for ax in profiles.axes:
        assert ax.get_xlabel().startswith("$p_{T,j1}$ [GeV]")
    assert set(legend_entries(profiles)) == {
        "1500 < $m_{jj}$ < 2500 GeV",
        "2500 < $m_{jj}$ < 5000 GeV",
    }


def test_every_blob_figure_stays_on_the_canvas(drawn: list[Any], tmp_path: Path) -> None:
    import rosenblatt as rb
    from rosenblatt.studies.blobs import report as blobs_report
    from rosenblatt.studies.blobs import study as blobs

    rng = np.random.default_rng(2)
    x, y = blobs.sample_background(4000, 0.6, rng)
    xs, ys = blobs.sample_signal(500, [1.5, 2.5], [[0.25, -0.1], [-0.1, 0.25]], rng)
    fitted: dict[str, dict[float, Any]] = {
        "irgi": {3: rb.IRGI(depth=3).fit(x[:2000], y[:2000])},
        "kde": {0.1: rb.KDE(sigma_r=0.1).fit(x[:2000], y[:2000])},
    }
    scan = {
        "dcc": [[1e-2, 1e-3], [2e-2, 2e-3]],
        "subsamples": [{"dcc_floor": 5e-4}, {"dcc_floor": 6e-4}],
        "rms_exact": [0.05, 0.03],
    }
    summary = {
        "irgi": {"values": [2, 3], "parameter": "depth", **scan},
        "kde": {"values": [0.1, 0.5], "parameter": "sigma_r", **scan},
        "dcc_xy": [0.3, 0.3],
    }
    names = blobs_report.draw_figures(
        tmp_path,
        summary,
        fitted,
        blobs_report.Events(x[:2000], y[:2000], xs[:250], ys[:250]),
        blobs_report.Events(x[2000:], y[2000:], xs[250:], ys[250:]),
        {"grid_depths": [3], "kde_sigmas": [0.1]},
    )
    assert len(drawn) == len(names) == 6
    for fig in drawn:
        assert all(ax.get_xlabel() for ax in fig.axes if ax.get_label() != "<colorbar>")
        assert all(ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>")


def test_lhco_sensitivity_leaves_out_and_names_a_classifier_without_a_map(
    drawn: list[Any], tmp_path: Path
) -> None:
    from rosenblatt.abcd import SensitivityMap
    from rosenblatt.studies.lhco import report_figures as report

    x0, y0 = np.linspace(2000.0, 3700.0, 4), np.linspace(0.1, 0.85, 3)
    computed = np.arange(12.0).reshape(4, 3) / 4
    computed[0, 0] = np.nan

    def sensitivity(significance: Any) -> SensitivityMap:
        return SensitivityMap(x0, y0, significance, significance, seconds=0.0)

    maps = {
        "baseline": sensitivity(computed),
        "disco": sensitivity(np.full((4, 3), np.nan)),
        "irgi": sensitivity(computed),
    }
    assert report._sensitivity(tmp_path, maps) == "sensitivity_map.png"
    nothing = {name: sensitivity(np.full((4, 3), np.nan)) for name in ("baseline", "kde")}
    assert report._sensitivity(tmp_path, nothing) == "sensitivity_map.png"
    partial, empty = drawn
    panels = [ax for ax in partial.axes if ax.get_label() != "<colorbar>"]
    assert [ax.get_title() for ax in panels] == ["Baseline", "IRGI"]
    assert all(len(ax.collections[0].get_offsets()) == 11 for ax in panels)
    assert "DisCo: not computable" in partial._suptitle.get_text()
    # no classifier with a map: one panel holding the message, no data
    (message,) = empty.axes
    assert not message.axison
    assert not message.collections
    (text,) = message.texts
    assert text.get_text().splitlines()[1:] == ["Baseline: not computable", "KDE: not computable"]
