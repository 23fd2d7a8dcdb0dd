"""Code the tests share: paths, the tiny run's options and readers of its records (`common`), synthetic
sweeps shaped like real ones (`report_data`), a throwaway PostgreSQL server (`pg_server`)."""
