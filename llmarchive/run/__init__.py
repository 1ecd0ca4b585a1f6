"""One run of a protocol: its plan, its calls, the resumable runner, what an alarm does to it, progress."""
