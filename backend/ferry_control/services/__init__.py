"""The control plane's logic: clusters and servers, discovery, the collector, topology, positions, interleavings,
tokens and audit. Services take a session (owned by their caller) and raise `core.errors` for the API to map."""
