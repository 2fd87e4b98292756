"""CVXPY post-processing of released ECDFs (monotone smoothing, inverse ECDF, ROC build).

Pure numpy/cvxpy; never imports :mod:`secure`.  Its modules arrive with the ECDF work (issue 4).
"""
