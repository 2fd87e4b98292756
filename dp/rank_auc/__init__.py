"""Private AUC with scores *and* labels secret (beyond Sun et al.): noisy ``2U`` and ``P`` from the complete AUC
on MPyC (:mod:`dp.umpc.complete`), ``AUC = (2U/2) / (P (n - P))``.  Derivations and threat model: docs/rank_auc.md."""
from dp.rank_auc.face import (Query, RankAucRelease, account_query, check_bit_length, exact, exact_sums, plans_for_rows,
                              release, release_guarantee, release_runs, simulate)

__all__ = ["exact", "exact_sums", "release", "release_runs", "simulate", "Query", "account_query", "check_bit_length",
           "plans_for_rows", "release_guarantee", "RankAucRelease"]
