"""The caller's data as the releases see it: the only package that reads raw rows.
Counting in every engine (`dpmodels.data.counting`, `dpmodels.data.engines`), the
schema and columns, the argument checks and clipping.
"""
