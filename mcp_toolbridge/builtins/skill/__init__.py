"""The skill locked tool and skill discovery (folders holding a ``SKILL.md``)."""
