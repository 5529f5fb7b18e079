"""What writes public values out: saved-release files (`dpmodels.output.saving`)
and figures (`dpmodels.output.plots`).  Called by releases and results; reads no rows.
"""
