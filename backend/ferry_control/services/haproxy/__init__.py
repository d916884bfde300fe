"""HAProxy in front of clusters: the configuration Ferry renders (config.py) and its runtime API (runtime.py)."""
