"""The typed nouns every stage shares, below all of them: a case's spec and its label (`case`), the
device tokens a run names (`device_tokens`), what one `--env` environment is (`env_spec`), the colour of
each backend·mode (`palette`) and the user's arraybench cache (`usercache`). They import nothing of
arraybench but its errors."""
