"""The collector's parts, one concern each: checking what a server answered (`validation`), remembering when each
master reached each position (`timeline`, for lag in seconds measured by the control plane itself)."""
