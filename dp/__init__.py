"""Differential privacy on top of :mod:`secure`: validation, calibration, tuple sampling, protocols.

- :mod:`dp.validation`       parameter checks with plain messages (``epsilon must be positive, got 0``).
- :mod:`dp.calibration`      noise calibration: discrete Laplace from Polya shares, binomial (eps, delta).
- :mod:`dp.sampling`         tuple samplers: BalancedSamp (Sinh & Ramon, Alg. 1), uniform, Bernoulli.
- :mod:`dp.umpc.protocol`            protocol Pi_U-MPC (Sinh & Ramon, Protocol 3.1): secure and simulated paths.
- :mod:`dp.ecdf.tree`             tree mechanism for private ECDFs (Barczewski, Mawass & Ramon, eq. 2, Thm 1, 3).
- :mod:`dp.ecdf.secure_release`     the private ECDF across parties (per-party counts, distributed tree noise).
- :mod:`dp.ecdf.hosmer_lemeshow`  private Hosmer-Lemeshow statistic (Algorithm 2, Theorem 2).
- :mod:`dp.fedauc.mechanisms`           FedAUC with label DP (Sun et al.): randomized response, Laplace/Gaussian, adaptive;
                                        ranks, closed forms and Monte Carlo in dp.fedauc.ranks, .closed_forms, .montecarlo.
- :mod:`dp.rank_auc`    AUC with scores and labels secret: secure sorting and distributed noise.
- :mod:`dp.bell.generic`      Bell et al.: generic local-DP protocol for degree-2 U-statistics (k-RR, A^Mid/A^Avg).
- :mod:`dp.bell.auc`          Bell et al.: local-DP AUC by Hadamard response and pruned hierarchical histograms.
- :mod:`dp.bell.subsampled_pairs` Bell et al.: subsampled-pairs protocol on MPyC (P permutations, per-pair noise);
                                  its Theorem 5 error and all-pairs baseline in dp.bell.subsampled_analysis.
- :mod:`dp.baselines.ghazi`            Ghazi et al. baseline: factorized kernel matrix, Laplace reports (simulated).
- :mod:`dp.umpc.delegation` threat model M_HF: only a subgroup Z drawn from fresh joint randomness draws the noise.
- :mod:`dp.secret_noise`     discrete Laplace sampled inside MPC: public plan, truncation delta, plaintext mirror.
- :mod:`dp.umpc.sampler_variance` exact E_inc + E_DP of the tuple samplers (Sinh & Ramon, App. D.1.2).
- :mod:`dp.umpc.costs`            communication and computation models (Sinh & Ramon, Table 1, App. D.2).
- :mod:`dp.audit.engine`            empirical DP auditor (Clopper-Pearson hockey-stick bound); exact epsilon of honest noise.
- :mod:`dp.audit.central_cases`      audit cases of every central and distributed mechanism, and negative controls.
- :mod:`dp.budget`            the per-party privacy ledger and its accountants (``dp.budget.Budget``).
- :mod:`dp.audit.local_cases` audit cases of every local / label-DP randomizer, and negative controls;
                              their sample sizes planned in dp.audit.planning.

Public API (what a script imports; ``import dp`` never imports ``mpyc.runtime``, which would parse
``sys.argv`` and launch parties itself; subpackages load on first use, PEP 562):

- column declarations by role, checked on entry (from :mod:`secure.columns`): :func:`numeric`
  (``lower=``, ``upper=``, ``bits=``), :func:`label` (0/1), :func:`classes` (``k`` classes),
  :func:`categorical` (``categories=[...]``);
- :mod:`dp.umpc`: ``Query`` (the statistic by name; precision follows the columns; ``tuples="2n"``),
  ``release`` (across parties, inside :func:`secure.run`), ``simulate`` (Monte Carlo), ``exact``;
- :mod:`dp.ecdf`, :mod:`dp.rank_auc` and the other subpackages as listed above.
Scripts run as parties through :func:`secure.run` (README, "Scripting").
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from secure.columns import categorical, classes, label, numeric
from secure.intake import ColumnSpec

if TYPE_CHECKING:
    from dp import audit, baselines, bell, budget, calibration, ecdf, fedauc, rank_auc, sampling, umpc, validation

__all__ = ["numeric", "label", "classes", "categorical", "ColumnSpec", "umpc", "ecdf", "rank_auc", "bell", "fedauc",
           "baselines", "audit", "budget", "calibration", "sampling", "validation"]

#: subpackages and modules loaded on first attribute access (``dp.umpc.Query``)
_SUBMODULES = frozenset({"umpc", "ecdf", "rank_auc", "bell", "fedauc", "baselines", "audit", "budget", "calibration",
                         "sampling", "validation"})

if not TYPE_CHECKING:  # the type checker sees only the names imported above, so a typo (dp.umpcc) fails it

    def __getattr__(name: str) -> Any:
        if name in _SUBMODULES:
            return importlib.import_module(f"dp.{name}")
        raise AttributeError(f"module 'dp' has no attribute {name!r}")
