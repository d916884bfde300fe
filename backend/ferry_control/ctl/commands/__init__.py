"""One module per command group; each exposes the click command(s) `main` adds to the root."""
