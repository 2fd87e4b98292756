"""Threat-model drills: run them with ``python -m scenarios.drills.<name>`` (``make drills`` runs all); what each
drill does and must show, module by module: docs/drills.md."""
