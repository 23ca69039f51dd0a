"""The task locked tool and its subagent loop on the client's model (sampling)."""
