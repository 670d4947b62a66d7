"""Run records: a run's JSON bundle stored as one canonical tree (kind ``run``).

Terms: run record, bundle (the run's files, read safely from disk), logical name,
descriptor. May import the other contracts' pure rules (a bundle holds their artifacts).
"""
