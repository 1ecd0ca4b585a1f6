"""The errors publication raises; each message names the file or record at fault."""
from measure.errors import ArchiveError


class PublishError(ArchiveError, ValueError):
    """Input that cannot be published as it is (a broken record, a missing field)."""


class LeakError(PublishError):
    """A file to be published contains guard or sealed wording; nothing was written."""


class SiteError(PublishError):
    """The site generator refused to draw or assemble something a rule forbids."""


class CurveError(SiteError):
    """A curve that would join measurements of different model families or series."""
