"""The bottom layer: errors, the version, keyword checks, randomness, the exact
samplers and noise, the budget and accountant, thresholds, and the privacy
report every release carries.  It imports no other dpmodels package.
"""
