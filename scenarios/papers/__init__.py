"""Figure and table reproductions of the seed papers: ``python -m scenarios.papers.<name> [--quick]``.

Sinh & Ramon: ``umpc_samplers``, ``umpc_bins_and_uci``, ``umpc_vs_baselines``, ``umpc_costs``.
Bell et al.: ``bell_kendall``, ``bell_auc_synthetic``, ``bell_auc_domain``.
Barczewski, Mawass & Ramon: ``ecdf_smoothing``, ``ecdf_inverse``, ``roc_curve``, ``hosmer_lemeshow`` (Fig. 6),
``ecdf_fss_costs`` (§4.2 costs beside §4.1, ``-M3``).
Sun et al.: ``fedauc_tables``, ``fedauc_figures``.
The sweeps run through :mod:`scenarios.kit.sweep`; each paper's method, data and findings beside ours are in
``docs/papers/`` (``sinh_ramon.md``, ``bell.md``, ``barczewski.md``, ``fedauc.md``)."""
