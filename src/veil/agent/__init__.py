"""The agent: a loop as plain functions with typed hooks, coding tools, memory tools, sessions."""
