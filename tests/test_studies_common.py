"""What every study shares: the verdict rule, claims, numbers with errors, tables, steps, summaries."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

from rosenblatt.studies._common import (
    ALPHA,
    Claim,
    Row,
    Steps,
    claim_lines,
    decide,
    markdown_table,
    pm,
    rows_table,
    verdict_of,
    verdict_reason,
    write_summary,
)

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("margin", "sd", "verdict"),
    [
        (0.3, 0.1, "held"),  # 3 sd
        (0.19, 0.1, "not decidable"),  # 1.9 sd
        (0.2, 0.1, "not decidable"),  # exactly 2 sd is not beyond
        (-0.15, 0.1, "not decidable"),
        (-0.25, 0.1, "did not hold"),
        (0.3, math.nan, "not decidable"),  # an uncertainty was expected and is missing
        (0.3, 0.0, "not decidable"),
        (math.nan, 0.1, "not decidable"),
        (0.0, None, "held"),  # no uncertainty by nature: the value decides
        (1e-12, None, "held"),
        (-1e-12, None, "did not hold"),
    ],
)
def test_one_rule_decides_every_claim(margin: float, sd: float | None, verdict: str) -> None:
    assert decide(margin, sd) == verdict


def test_the_reason_says_how_many_sd() -> None:
    assert verdict_reason(0.0724, 0.0724 / 1.5, "larger", "smaller") == (
        "difference +0.0724 is 1.5 sd, within 2 sd"
    )
    assert verdict_reason(0.5, 0.1, "larger", "smaller") == "larger by 5.0 sd"
    assert verdict_reason(-0.5, 0.1, "larger", "smaller") == "smaller by 5.0 sd"
    assert verdict_reason(0.5, math.nan, "larger", "smaller") == (
        "no bootstrap uncertainty for this difference"
    )


def test_alpha_is_the_two_sided_tail_beyond_two_sd() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    assert scipy_stats.norm.sf(2.0) * 2 == pytest.approx(ALPHA, rel=1e-12)
    assert 0.0455 < ALPHA < 0.0456


def test_a_claim_writes_the_keys_of_the_summary_format() -> None:
    held = Claim("a", "1 vs 0", margin=1.0, uncertainty=0.1)
    open_ = Claim("b", "1 vs 0.9", margin=0.1, uncertainty=0.1)
    failed = Claim("c", [1, 2], margin=-1.0)
    assert [c.verdict for c in (held, open_, failed)] == ["held", "not decidable", "did not hold"]
    written = [c.to_json() for c in (held, open_, failed)]
    assert written == [
        {"claim": "a", "held": True, "value": "1 vs 0"},
        {"claim": "b", "held": None, "value": "1 vs 0.9"},
        {"claim": "c", "held": False, "value": [1, 2]},
    ]
    assert [verdict_of(json.loads(json.dumps(c))) for c in written] == [
        "held",
        "not decidable",
        "did not hold",
    ]
    assert claim_lines(written[:2]) == ("- **held**: a (1 vs 0)\n- **not decidable**: b (1 vs 0.9)")
    assert claim_lines(written[2:], with_value=False) == "- **did not hold**: c"


@pytest.mark.parametrize(
    ("value", "err", "fmt", "text"),
    [
        (0.95678, 0.00123, ".4f", "0.9568 ± 0.0012"),
        (0.95678, None, ".4f", "0.9568"),
        (0.95678, math.nan, ".4f", "0.9568"),
        (None, 0.1, ".4f", "–"),
        (0.0123, 0.004, "+.3f", "+0.012 ± 0.004"),
        (1.02e-4, 1.02e-4, ".2e", "1.02e-04 ± 1.02e-04"),
    ],
)
def test_pm(value: float | None, err: float | None, fmt: str, text: str) -> None:
    assert pm(value, err, fmt) == text


def test_tables_from_rows_given_as_data() -> None:
    entries = [{"auc": 0.9, "auc_err": 0.01, "n": 3}, {"auc": 0.8, "n": 4}]
    rows = [Row("AUC", "auc", "auc_err", ".2f"), Row("events", "n", fmt="d"), ["note", "a", "b"]]
    expected = [
        "| | one | two |",
        "|---|---|---|",
        "| AUC | 0.90 ± 0.01 | 0.80 |",
        "| events | 3 | 4 |",
        "| note | a | b |",
    ]
    assert rows_table(["", "one", "two"], rows, entries).splitlines() == expected
    assert markdown_table(["a"], [["1"], ["2"]]) == "| a |\n|---|\n| 1 |\n| 2 |"


def test_steps_time_and_log_each_step(caplog: pytest.LogCaptureFixture) -> None:
    steps = Steps(("one", "two"), logging.getLogger("rosenblatt.test"), digits=2)
    with caplog.at_level(logging.INFO, logger="rosenblatt.test"):
        assert steps.run("one", lambda a, b: a + b, 1, 2) == 3
    assert "step 1 of 2: one" in caplog.text
    with steps.timed("two"):
        pass
    assert list(steps.seconds) == ["one", "two"]
    assert all(s >= 0 and round(s, 2) == s for s in steps.seconds.values())
    with pytest.raises(ZeroDivisionError), steps.timed("three"):
        _ = 1 / 0
    assert "three" not in steps.seconds  # a step that failed has no time


def test_a_step_that_counts_events_logs_its_rate(caplog: pytest.LogCaptureFixture) -> None:
    steps = Steps(("read", "write"), logging.getLogger("rosenblatt.test"))
    with caplog.at_level(logging.INFO, logger="rosenblatt.test"):
        with steps.timed("read"):
            steps.count("read", 1000)
            steps.count("read", 500)
        steps.run("write", lambda: None)
    assert steps.events == {"read": 1500}
    rate = steps.rate("read")
    assert rate == pytest.approx(1500 / steps.seconds["read"])
    assert f"step read: 1500 events in {steps.seconds['read']:.1f} s, " in caplog.text
    assert "events/s" in caplog.text
    assert caplog.text.count("events/s") == 1  # a step without a count says no rate
    assert steps.rate("write") is None
    assert steps.rate("never") is None


def test_write_summary(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    path = write_summary(tmp_path, {"a": np.float64(0.5), "b": [1, None]})
    assert path == tmp_path / "summary.json"
    assert json.loads(path.read_text()) == {"a": 0.5, "b": [1, None]}
    with pytest.raises(ValueError, match="not JSON compliant"):
        write_summary(tmp_path, {"a": math.nan}, strict=True)


def test_a_step_run_counts_the_events_of_its_result(caplog: pytest.LogCaptureFixture) -> None:
    """``events`` counts from the step's result; a step shorter than the rounding has a rate."""
    steps = Steps(("table",), logging.getLogger("rosenblatt.test"), digits=0)
    with caplog.at_level(logging.INFO, logger="rosenblatt.test"):
        table = steps.run("table", lambda n: list(range(n)), 3000, events=len)
    assert len(table) == 3000
    assert steps.events == {"table": 3000}
    assert steps.seconds["table"] == 0.0  # rounded to whole seconds
    rate = steps.rate("table")
    assert rate is not None
    assert rate > 3000 / 0.5
    assert "step table: 3000 events in 0.0 s, " in caplog.text
