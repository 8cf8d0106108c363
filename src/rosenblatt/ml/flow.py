"""A conditional normalizing flow of the score given ``x``, its CDF used as ``gamma``.

The approach of the conditional-flow decorrelation literature (Klein & Golling
2022; Algren et al. 2023): a one-dimensional monotone rational-quadratic spline
flow (``zuko.flows.NSF``) maps the score ``y``, standardised, to a standard
normal ``z`` given the standardised ``x``; ``gamma(x, y) = Phi(z)`` is the
flow's conditional CDF. The flow is trained by maximum likelihood on the
defining sample with Adam, a learning rate that falls on plateaus of the
held-out loss, and early stopping on a held-out part of the sample.

Needs the ``ml`` extra (torch and zuko). The fitted flow saves to and loads
from the JSON format of the other transforms (kind ``"conditional_flow"``):
its weights are written as lists of numbers.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from scipy.special import ndtr

from rosenblatt._extras import optional_imports
from rosenblatt._schema import SchemaError, check_array, check_domain
from rosenblatt._validation import check_int, is_int
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.typing import FloatArray, Int64Array

with optional_imports(__name__):
    import torch
    import zuko

__all__ = ["ConditionalFlow"]


def _weighted_moments(values: FloatArray, w: FloatArray | None) -> tuple[float, float]:
    if w is None:
        return float(values.mean()), float(values.std())
    total = float(w.sum())
    mean = float(np.dot(w, values) / total)
    var = float(np.dot(w, (values - mean) ** 2) / total)
    return mean, math.sqrt(max(var, 0.0))


class ConditionalFlow(ConditionalCDFTransform):
    """Conditional CDF of ``y`` given ``x`` from a rational-quadratic spline flow (zuko).

    Parameters
    ----------
    bins
        Number of spline bins of each transform.
    transforms
        Number of spline transforms composed.
    hidden
        Widths of the hidden layers of the network that maps ``x`` to the
        spline parameters.
    learning_rate
        Initial learning rate of Adam; multiplied by 0.3 after each two
        epochs without improvement of the held-out loss.
    batch_size
        Events per gradient step.
    max_epochs
        Most passes over the training part.
    patience
        Stop after this many epochs without improvement of the held-out loss;
        the weights of the best epoch are kept.
    validation_fraction
        Share of the defining sample held out for early stopping, in (0, 1).
    max_seconds
        Stop training after this wall time (``None``: no limit).
    seed
        Seed of the split, the initial weights and the batches.
    threads
        Torch threads during training and evaluation (``None``: torch's
        setting). The tensors are small, so one thread is usually fastest.

    Attributes
    ----------
    x_scale_, y_scale_ : tuple of float
        Mean and standard deviation of ``x`` and ``y`` in the defining sample.
    history_ : dict
        Training and held-out loss per epoch, the best epoch, the number of
        epochs and the training time in seconds.

    Examples
    --------
    >>> from rosenblatt.ml import ConditionalFlow        # doctest: +SKIP
    >>> flow = ConditionalFlow().fit(x, y)               # doctest: +SKIP
    >>> gamma = flow.transform(x_test, y_test)           # doctest: +SKIP
    """

    kind: ClassVar[str] = "conditional_flow"

    x_scale_: tuple[float, float]
    y_scale_: tuple[float, float]
    history_: dict[str, Any]

    def __init__(
        self,
        bins: int = 16,
        transforms: int = 2,
        hidden: Sequence[int] = (64, 64),
        learning_rate: float = 1e-2,
        batch_size: int = 4096,
        max_epochs: int = 200,
        patience: int = 8,
        validation_fraction: float = 0.2,
        max_seconds: float | None = None,
        seed: int = 0,
        threads: int | None = 1,
    ) -> None:
        self.bins = bins
        self.transforms = transforms
        self.hidden = hidden
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.max_seconds = max_seconds
        self.seed = seed
        self.threads = threads

    def __repr__(self) -> str:
        return (
            f"ConditionalFlow(bins={self.bins!r}, transforms={self.transforms!r}, "
            f"hidden={tuple(self.hidden)!r})"
        )

    # ------------------------------------------------------------ parameters
    def _check_params(self) -> None:
        for name in ("bins", "transforms", "batch_size", "max_epochs", "patience"):
            check_int(getattr(self, name), name, low=1)
        hidden = tuple(self.hidden)
        if not hidden or not all(is_int(h) and h >= 1 for h in hidden):
            msg = f"hidden must be a non-empty sequence of positive integers, got {self.hidden!r}"
            raise ValueError(msg)
        if not 0.0 < float(self.validation_fraction) < 1.0:
            msg = f"validation_fraction must lie in (0, 1), got {self.validation_fraction!r}"
            raise ValueError(msg)
        if not float(self.learning_rate) > 0.0:
            msg = f"learning_rate must be positive, got {self.learning_rate!r}"
            raise ValueError(msg)
        if self.max_seconds is not None and not float(self.max_seconds) > 0.0:
            msg = f"max_seconds must be positive or None, got {self.max_seconds!r}"
            raise ValueError(msg)

    def _network(self) -> zuko.flows.NSF:
        return zuko.flows.NSF(
            features=1,
            context=1,
            bins=int(self.bins),
            transforms=int(self.transforms),
            hidden_features=tuple(int(h) for h in self.hidden),
        )

    # ------------------------------------------------------------ fit
    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        self._check_params()
        n = len(x)
        n_val = round(n * float(self.validation_fraction))
        if n_val < 1 or n - n_val < 2:
            msg = f"a conditional flow needs a defining sample of at least 3 events, got {n}"
            raise ValueError(msg)
        x_mean, x_sd = _weighted_moments(x, w)
        y_mean, y_sd = _weighted_moments(y, w)
        if not (x_sd > 0 and y_sd > 0):
            msg = "x and y of the defining sample must not be constant"
            raise ValueError(msg)
        self.x_scale_ = (x_mean, x_sd)
        self.y_scale_ = (y_mean, y_sd)

        rng = np.random.default_rng(self.seed)
        order = rng.permutation(n)
        val_idx, train_idx = order[:n_val], order[n_val:]
        xs = torch.as_tensor((x - x_mean) / x_sd, dtype=torch.float32).unsqueeze(1)
        ys = torch.as_tensor((y - y_mean) / y_sd, dtype=torch.float32).unsqueeze(1)
        ws = torch.ones(n) if w is None else torch.as_tensor(w / w.mean(), dtype=torch.float32)

        with _threads(self.threads):
            torch.manual_seed(int(self.seed))
            flow = self._network()
            self.history_ = _train(self, flow, (xs, ys, ws), train_idx, val_idx)
        self._flow = flow.eval()
        self.domain_ = ((float(x.min()), float(x.max())), (float(y.min()), float(y.max())))

    # ------------------------------------------------------------ evaluate
    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        (x_lo, x_hi), (y_lo, y_hi) = self.domain_
        out = np.empty(len(x))
        x_std = (np.clip(x, x_lo, x_hi) - self.x_scale_[0]) / self.x_scale_[1]
        y_std = (y - self.y_scale_[0]) / self.y_scale_[1]
        chunk = 1 << 17
        with _threads(self.threads), torch.no_grad():
            for start in range(0, len(x), chunk):
                c = torch.as_tensor(x_std[start : start + chunk], dtype=torch.float32).unsqueeze(1)
                v = torch.as_tensor(y_std[start : start + chunk], dtype=torch.float32).unsqueeze(1)
                z = self._flow(c).transform(v).squeeze(1).double().numpy()
                out[start : start + chunk] = ndtr(z)
        out[y < y_lo] = 0.0
        out[y > y_hi] = 1.0
        return np.clip(out, 0.0, 1.0)

    def describe(self) -> str:
        """The flow's shape and how long it trained."""
        return (
            f"conditional rational-quadratic spline flow ({self.transforms} transforms of "
            f"{self.bins} bins, hidden {list(self.hidden)}), gamma = Phi(z)"
        )

    def fitted_params(self) -> dict[str, Any]:
        """The flow's hyper-parameters and the epoch whose weights were kept."""
        params = self._params()
        if self.is_fitted():
            params["best_epoch"] = int(self.history_["best_epoch"])
        return params

    # ------------------------------------------------------------ state
    def _params(self) -> dict[str, Any]:
        return {
            "bins": int(self.bins),
            "transforms": int(self.transforms),
            "hidden": [int(h) for h in self.hidden],
            "learning_rate": float(self.learning_rate),
            "batch_size": int(self.batch_size),
            "max_epochs": int(self.max_epochs),
            "patience": int(self.patience),
            "validation_fraction": float(self.validation_fraction),
            "max_seconds": None if self.max_seconds is None else float(self.max_seconds),
            "seed": int(self.seed),
        }

    def get_state(self) -> dict[str, Any]:
        """Hyper-parameters, scales, domain, training history and the flow's weights."""
        self._check_fitted()
        weights = {
            name: value.detach().cpu().tolist() for name, value in self._flow.state_dict().items()
        }
        return {
            "params": self._params(),
            "domain": [list(axis) for axis in self.domain_],
            "x_scale": list(self.x_scale_),
            "y_scale": list(self.y_scale_),
            "history": self.history_,
            "weights": weights,
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ConditionalFlow:
        """Rebuild the flow from :meth:`get_state` output, checking every weight's shape."""
        params = dict(state["params"])
        params["hidden"] = tuple(params["hidden"])
        obj = cls(**params)
        try:
            obj._check_params()
        except ValueError as err:
            raise SchemaError(str(err)) from err
        obj.domain_ = check_domain(state["domain"])
        x_scale = check_array(state["x_scale"], "x_scale", (2,))
        y_scale = check_array(state["y_scale"], "y_scale", (2,))
        if x_scale[1] <= 0 or y_scale[1] <= 0:
            msg = "the scales' standard deviations must be positive"
            raise SchemaError(msg)
        obj.x_scale_ = (float(x_scale[0]), float(x_scale[1]))
        obj.y_scale_ = (float(y_scale[0]), float(y_scale[1]))
        flow = obj._network()
        expected = flow.state_dict()
        weights = state["weights"]
        if not isinstance(weights, dict) or set(weights) != set(expected):
            msg = f"weights must name exactly the flow's tensors {sorted(expected)}"
            raise SchemaError(msg)
        loaded = {
            name: torch.as_tensor(
                check_array(weights[name], f"weights[{name!r}]", tuple(tensor.shape)),
                dtype=tensor.dtype,
            )
            for name, tensor in expected.items()
        }
        flow.load_state_dict(loaded)
        obj._flow = flow.eval()
        obj.history_ = dict(state.get("history", {}))
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        return obj


class _threads:
    """Set torch's thread count inside a ``with`` block and restore it after."""

    def __init__(self, n: int | None) -> None:
        self.n = n
        self.before = torch.get_num_threads()

    def __enter__(self) -> None:
        if self.n is not None:
            torch.set_num_threads(int(self.n))

    def __exit__(self, *exc: object) -> None:
        torch.set_num_threads(self.before)


def _train(
    options: ConditionalFlow,
    flow: zuko.flows.NSF,
    data: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    train_idx: Int64Array,
    val_idx: Int64Array,
) -> dict[str, Any]:
    """Adam on the weighted negative log-likelihood, early stopping on the held-out part."""
    xs, ys, ws = data
    x_val, y_val, w_val = xs[val_idx], ys[val_idx], ws[val_idx]
    w_val_sum = float(w_val.sum())
    optimiser = torch.optim.Adam(flow.parameters(), lr=float(options.learning_rate))
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimiser, factor=0.3, patience=1)
    generator = torch.Generator().manual_seed(int(options.seed))
    train = torch.as_tensor(train_idx)
    batch = int(options.batch_size)
    best_loss, best_epoch, best_state = math.inf, -1, copy.deepcopy(flow.state_dict())
    train_losses: list[float] = []
    val_losses: list[float] = []
    start = time.perf_counter()
    epoch = 0
    for epoch in range(int(options.max_epochs)):
        flow.train()
        perm = train[torch.randperm(len(train), generator=generator)]
        total = 0.0
        for lo in range(0, len(perm), batch):
            idx = perm[lo : lo + batch]
            loss = -(ws[idx] * flow(xs[idx]).log_prob(ys[idx])).sum() / ws[idx].sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(idx)
        train_losses.append(total / len(perm))
        flow.eval()
        with torch.no_grad():
            val_loss = float(-(w_val * flow(x_val).log_prob(y_val)).sum() / w_val_sum)
        val_losses.append(val_loss)
        scheduler.step(val_loss)
        if val_loss < best_loss - 1e-5:
            best_loss, best_epoch, best_state = val_loss, epoch, copy.deepcopy(flow.state_dict())
        if epoch - best_epoch >= int(options.patience):
            break
        if options.max_seconds is not None and time.perf_counter() - start > float(
            options.max_seconds
        ):
            break
    flow.load_state_dict(best_state)
    return {
        "train_loss": train_losses,
        "validation_loss": val_losses,
        "best_epoch": best_epoch,
        "epochs": epoch + 1,
        "seconds": time.perf_counter() - start,
    }
