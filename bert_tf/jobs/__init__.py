"""End-to-end jobs behind the runners: each takes plain options and the strategy."""
