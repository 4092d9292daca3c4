"""The ``veil`` command."""
