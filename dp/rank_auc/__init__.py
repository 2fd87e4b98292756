"""Private AUC with scores *and* labels secret (beyond Sun et al.): noisy ``2U`` and ``P`` from the complete AUC
on MPyC (:mod:`dp.umpc.complete`), ``AUC = (2U/2) / (P (n - P))``.  Derivations and threat model: docs/rank_auc.md.

:class:`Query` (keyword-only, validated once); :func:`release` on parties; :func:`simulate` in one process;
:func:`exact` in the clear; :class:`RankAucRelease` with ``.table()`` and ``.record()``; the public calibration
in :mod:`dp.rank_auc.query`."""
from dp.rank_auc.face import exact as exact
from dp.rank_auc.face import exact_sums as exact_sums
from dp.rank_auc.face import release as release
from dp.rank_auc.face import release_runs as release_runs
from dp.rank_auc.face import simulate as simulate
from dp.rank_auc.query import Query as Query
from dp.rank_auc.query import account_query as account_query
from dp.rank_auc.query import check_bit_length as check_bit_length
from dp.rank_auc.query import plans_for_rows as plans_for_rows
from dp.rank_auc.query import release_guarantee as release_guarantee
from dp.rank_auc.report import RankAucRelease as RankAucRelease
