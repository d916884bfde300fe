"""Every SQL statement of the service lives in this package: one repository per aggregate, each bound to the
caller's session. Repositories add, query and flush; they never commit (the session's owner does)."""
