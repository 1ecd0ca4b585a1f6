"""Test helper: a back-off sleep that records instead of sleeping.

Every API subject takes ``sleep=`` (see ``llmarchive/subjects/http.py``); a
retry test hands it a :class:`Waits` so the suite never sleeps a back-off
for real and can assert the waits the retry policy asked for.
"""


class Waits(list):
    """A back-off sleep to inject into a subject: it keeps each wait asked for (seconds) and sleeps none."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
