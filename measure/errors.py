"""The one base class of every error the archive reports to a person.

Each layer raises its own subclass (a bad protocol file, a budget that
refuses, a subject that answered 401, a chain that does not verify), named
for what went wrong; the entry points catch only this base and print its
message.  An ``ArchiveError`` is therefore a promise: its message names the
problem and the file or field, and it is safe to show (no secret, no
scenario text).  Anything else that escapes is a programming error and keeps
its traceback.

It lives in :mod:`measure`, the lowest layer, so every layer can subclass it
without importing upwards (method §13.2: still pure standard library).
"""


class ArchiveError(Exception):
    """Bad input or state, reported as one line; the CLI exits with status 2."""
