"""Where outcomes go: the SQLite store, JSON reports and pass-rate tables."""
