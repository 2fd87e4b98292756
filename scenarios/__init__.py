"""Runnable entry points: ``python -m scenarios.<name> [-M3 ...] [options]``.

Command-line parsing lives here only.  Every scenario also runs as a file
(``python .../scenarios/<name>.py ... -I i``), which is how party 0 launches the other local parties.
"""
