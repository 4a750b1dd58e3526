"""What a load reports: the error that stops it, and its progress as it goes."""


class CatalogueError(Exception):
    """A catalogue that cannot be loaded, and where and why."""


class Progress:
    """Receives the progress of a load; this one ignores it."""

    def file_started(self, name, size):
        pass

    def advanced(self, size, records):
        pass

    def file_finished(self, name, records):
        pass

    def stage(self, description):
        pass

    def reading(self, table, rows):
        """While importing a dump: the table being read and its rows so far."""
