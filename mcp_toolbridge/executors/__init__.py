"""Executors: how a validated, permitted call is carried out (process, HTTP, built-in)."""
