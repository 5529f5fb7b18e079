"""What the analyst calls: the registry of mechanisms and its routes, the dp_*
functions, loading saved releases, planning and the example data sets.
"""
