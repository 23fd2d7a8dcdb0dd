"""The typed nouns every stage shares, below all of them: a case's spec and its label (`case`), and the
device tokens a run names (`device_tokens`). They import nothing of arraybench but its errors."""
