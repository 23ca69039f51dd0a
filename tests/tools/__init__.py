"""Small programs the executor tests run as real child processes (stdlib only, run with -S)."""
