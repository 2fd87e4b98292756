"""Monotone smoothing of a tree-mechanism ECDF (Barczewski, Mawass & Ramon, Sec. 3.2, eq. 3).

Least-``p``-norm corrections over the tree nodes (sparse CVXPY problem) so the curve is non-decreasing
and in [0, 1].  Post-processing of released values: no privacy cost.  Derivation, solvers and measured
timings: docs/smoothing.md."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, Sequence

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

__all__ = ["DEFAULT_SOLVERS", "SmoothingError", "SmoothingResult", "default_solvers", "smooth_ecdf", "smooth_many"]

#: Preference order per norm before filtering by what CVXPY has installed.
DEFAULT_SOLVERS: dict[int, tuple[str, ...]] = {2: ("CLARABEL", "OSQP", "SCS"), 1: ("CLARABEL", "HIGHS", "SCS")}

#: Solver options, tighter than some defaults so that the repair step only ever removes round-off.
_SOLVER_OPTIONS: dict[str, dict[str, Any]] = {
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
    "OSQP": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iter": 200_000},
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
}


try:  # OSQP renamed ``polish`` to ``polishing`` in version 1
    _OSQP_MAJOR = int(version("osqp").split(".")[0])
except Exception:  # noqa: BLE001 - not installed or odd version string: keep the old name
    _OSQP_MAJOR = 0
_SOLVER_OPTIONS["OSQP"]["polishing" if _OSQP_MAJOR >= 1 else "polish"] = True

_ACCEPTED = (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)


class SmoothingError(RuntimeError):
    """Every solver tried for eq. (3) failed; ``failures`` holds ``(solver, reason)`` in the order tried."""

    def __init__(self, failures: Sequence[tuple[str, str]]) -> None:
        self.failures: tuple[tuple[str, str], ...] = tuple(failures)  # never empty: a solver is always tried or named
        detail = "; ".join(f"{name}: {reason}" for name, reason in self.failures)
        super().__init__(f"monotone smoothing failed with every solver tried ({detail})")


@dataclass(frozen=True)
class SmoothingResult:
    """Outcome of :func:`smooth_ecdf`: the smoothed ``values`` on the grid positions ``subset``, the node
    ``corrections`` and how the solve went (fields: docs/smoothing.md)."""

    subset: np.ndarray
    values: np.ndarray
    corrections: np.ndarray
    solver: str
    status: str
    objective: float
    seconds: float
    solver_seconds: float | None
    repair: float
    attempts: tuple[tuple[str, str], ...] = field(default=())


def default_solvers(norm: int) -> list[str]:
    """The preference list for ``norm`` (1 or 2) restricted to the solvers CVXPY has installed (possibly empty)."""
    norm = _check_norm(norm)
    installed = set(cp.installed_solvers())
    return [name for name in DEFAULT_SOLVERS[norm] if name in installed]


def smooth_ecdf(noisy: np.ndarray, incidence: sp.spmatrix | sp.sparray, *, subset: np.ndarray | None = None,
                norm: int = 2, solvers: Sequence[str] | None = None, tolerance: float = 1e-6,
                accept_inaccurate: bool = True) -> SmoothingResult:
    """Smooth a noisy tree-mechanism ECDF (on the grid of the sparse ``N x nodes`` ``incidence``, or on ``subset``)
    into a non-decreasing curve in [0, 1] (paper eq. 3, ``p = norm``); the arguments, the solvers tried and
    SmoothingError: docs/smoothing.md."""
    started = time.perf_counter()
    norm = _check_norm(norm)
    if not sp.issparse(incidence):
        raise TypeError(f"incidence must be a scipy sparse matrix, got {type(incidence).__name__}")
    if incidence.ndim != 2:
        raise ValueError(f"incidence must be 2-dimensional, got shape {incidence.shape}")
    rows, nodes = incidence.shape
    if rows < 1 or nodes < 1:
        raise ValueError(f"incidence must have at least one row and one column, got shape {incidence.shape}")
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be positive, got {tolerance}")
    positions = _check_subset(subset, rows)
    values_on_subset = _check_noisy(noisy, rows, positions)
    names = _check_solvers(solvers, norm)

    matrix = sp.csr_array(incidence, dtype=float)
    if not np.all(np.isfinite(matrix.data)):
        raise ValueError("incidence must contain only finite entries")
    restricted = matrix[positions]
    used = np.flatnonzero(np.asarray(abs(restricted).sum(axis=0)).ravel() > 0)
    if used.size == 0:
        raise ValueError("incidence rows of the subset touch no tree node, so nothing can be corrected")
    restricted = sp.csc_array(restricted)[:, used].tocsr()

    problem, variable = _build_problem(values_on_subset, restricted, norm)
    attempts: list[tuple[str, str]] = []
    # the first optimal (or, accept_inaccurate, the first) solution, else the first merely inaccurate one
    chosen: tuple[str, str, np.ndarray, float | None] | None = None
    for name in names:
        outcome = _solve_once(problem, variable, name, values_on_subset, restricted, tolerance)
        attempts.append((name, outcome if isinstance(outcome, str) else outcome[0]))
        if isinstance(outcome, str):
            continue
        if chosen is None or outcome[0] == cp.OPTIMAL:
            chosen = (name, *outcome)
        if outcome[0] == cp.OPTIMAL or accept_inaccurate:
            break
    if chosen is None:
        raise SmoothingError(attempts)  # every attempt failed
    name, status, solution, solver_seconds = chosen
    corrected = values_on_subset + restricted @ solution
    repaired = np.clip(np.maximum.accumulate(corrected), 0.0, 1.0)
    corrections = np.zeros(nodes)
    corrections[used] = solution
    objective = float(np.sum(np.abs(solution) ** norm))
    return SmoothingResult(subset=positions, values=repaired, corrections=corrections, solver=name, status=status,
                           objective=objective, seconds=time.perf_counter() - started, solver_seconds=solver_seconds,
                           repair=float(np.max(np.abs(repaired - corrected))) if corrected.size else 0.0,
                           attempts=tuple(attempts))


def smooth_many(noisy: np.ndarray, incidence: sp.spmatrix | sp.sparray, *, norm: int = 2,
                tolerance: float = 1e-6) -> np.ndarray:
    """Eq. (3) on the whole grid for the ``(R, N)`` curves ``noisy`` at once (arguments as :func:`smooth_ecdf`): one
    problem, solved per row. Details: docs/smoothing.md."""
    norm = _check_norm(norm)
    curves = np.asarray(noisy, dtype=float)
    if not sp.issparse(incidence) or incidence.ndim != 2:
        raise TypeError("incidence must be a 2-dimensional scipy sparse matrix")
    if curves.ndim != 2 or curves.shape[1] != incidence.shape[0]:
        raise ValueError(f"noisy must have shape (R, {incidence.shape[0]}), got {curves.shape}")
    if not np.all(np.isfinite(curves)):
        raise ValueError("noisy must contain only finite values")
    if curves.shape[0] > 1:  # equal rows (e.g. copies without noise) are solved once
        distinct, inverse = np.unique(curves, axis=0, return_inverse=True)
        if distinct.shape[0] < curves.shape[0]:
            return smooth_many(distinct, incidence, norm=norm, tolerance=tolerance)[np.ravel(inverse)]
    size = curves.shape[1]
    matrix = sp.csr_array(incidence, dtype=float)
    used = np.flatnonzero(np.asarray(abs(matrix).sum(axis=0)).ravel() > 0)
    restricted = sp.csc_array(matrix)[:, used].tocsr()
    names = default_solvers(norm)
    out = np.empty_like(curves)
    if names and curves.shape[0]:
        parameter = cp.Parameter(size)  # one problem, its data the curve: compiled once, solved per row
        problem, variable = _build_problem(parameter, restricted, norm)
    for r in range(curves.shape[0]):
        outcome: tuple[str, np.ndarray, float | None] | str = "no solver installed"
        if names:
            parameter.value = curves[r]
            outcome = _solve_once(problem, variable, names[0], curves[r], restricted, tolerance)
        if isinstance(outcome, str):  # smooth_ecdf tries every solver (or says that none is installed)
            out[r] = smooth_ecdf(curves[r], incidence, norm=norm, tolerance=tolerance).values
        else:
            out[r] = np.clip(np.maximum.accumulate(curves[r] + restricted @ outcome[1]), 0.0, 1.0)
    return out


def _build_problem(values: np.ndarray | cp.Parameter, restricted: sp.csr_array,
                   norm: int) -> tuple[cp.Problem, cp.Variable]:
    """The CVXPY problem of eq. (3) on B in the node corrections: ``values`` F-hat on B (or a parameter of its size),
    ``restricted`` the incidence rows of B and columns of the nodes B touches."""
    size = values.shape[0]
    variable = cp.Variable(restricted.shape[1], name="corrections")
    constraints = [restricted[[0]] @ variable >= -values[:1],
                   restricted[[size - 1]] @ variable <= 1.0 - values[size - 1:]]
    if size > 1:
        difference = sp.diags_array([-np.ones(size - 1), np.ones(size - 1)], offsets=[0, 1],
                                    shape=(size - 1, size), format="csr")
        steps = (difference @ restricted).tocsr()
        steps.eliminate_zeros()
        constraints.append(steps @ variable >= -(difference @ values))
    objective = cp.sum_squares(variable) if norm == 2 else cp.norm1(variable)
    return cp.Problem(cp.Minimize(objective), constraints), variable


def _solve_once(problem: cp.Problem, variable: cp.Variable, name: str, values: np.ndarray, restricted: sp.csr_array,
                tolerance: float) -> tuple[str, np.ndarray, float | None] | str:
    """Try one solver; return ``(status, nu, solver seconds)`` or a string saying why it failed."""
    installed = cp.installed_solvers()
    if name not in installed:
        return f"not installed (installed: {', '.join(installed)})"
    try:
        with warnings.catch_warnings():
            # an inaccurate solve is reported through the status, which the caller sees
            warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
            problem.solve(solver=name, **_SOLVER_OPTIONS.get(name, {}))
    except Exception as error:  # noqa: BLE001 - any solver crash means: try the next one
        return f"{type(error).__name__}: {error}"
    status = str(problem.status)
    if status not in _ACCEPTED:
        return f"status {status}"
    if variable.value is None:
        return f"status {status} but no solution returned"
    solution = np.asarray(variable.value, dtype=float).ravel()
    if not np.all(np.isfinite(solution)):
        return "non-finite solution"
    curve = values + restricted @ solution  # violation of monotonicity and of the bounds at the ends
    violation = max(float(np.max(-np.diff(curve), initial=0.0)), -float(curve[0]), float(curve[-1]) - 1.0, 0.0)
    if violation > tolerance:
        return f"status {status} but constraints violated by {violation:.3g} > tolerance {tolerance:g}"
    stats = problem.solver_stats
    seconds = None if stats is None or stats.solve_time is None else float(stats.solve_time)
    return status, solution, seconds


def _check_norm(norm: int) -> int:
    if isinstance(norm, bool) or norm not in (1, 2):
        raise ValueError(f"norm must be 1 or 2, got {norm!r}")
    return int(norm)


def _check_subset(subset: np.ndarray | None, rows: int) -> np.ndarray:
    if subset is None:
        return np.arange(rows)
    positions = np.asarray(subset)
    if positions.ndim != 1:
        raise ValueError(f"subset must be 1-dimensional, got shape {positions.shape}")
    if positions.size == 0:
        raise ValueError("subset must contain at least one grid position, got none")
    if positions.dtype == bool:
        raise TypeError("subset must hold integer grid positions, got a boolean array")
    if not np.issubdtype(positions.dtype, np.integer):
        raise TypeError(f"subset must hold integer grid positions, got dtype {positions.dtype}")
    positions = np.unique(positions.astype(np.int64))
    if positions[0] < 0 or positions[-1] >= rows:
        raise ValueError(f"subset positions must lie in [0, {rows - 1}], got {positions[0]}..{positions[-1]}")
    return positions


def _check_noisy(noisy: np.ndarray, rows: int, positions: np.ndarray) -> np.ndarray:
    values = np.asarray(noisy, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"noisy must be 1-dimensional, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("noisy must contain only finite values")
    if values.size == rows:
        return values[positions].copy()
    if values.size == positions.size:
        return values.copy()
    raise ValueError(f"noisy must have length {rows} (whole grid) or {positions.size} (subset), "
                     f"got {values.size}")


def _check_solvers(solvers: Sequence[str] | None, norm: int) -> list[str]:
    if solvers is None:
        names = default_solvers(norm)
        if not names:
            raise SmoothingError([(name, "not installed") for name in DEFAULT_SOLVERS[norm]])
        return names
    if isinstance(solvers, str):
        raise TypeError(f"solvers must be a sequence of solver names, got the string {solvers!r}")
    names = [str(name).upper() for name in solvers]
    if not names:
        raise ValueError("solvers must name at least one solver, got none")
    return names
