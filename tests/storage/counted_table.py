"""A table client that counts the queries sent through it, for tests of how many a step costs."""


class CountedQueries:
    def __init__(self, table) -> None:
        self.table = table
        self.queries = 0

    def query_entities(self, *args, **kwargs):
        self.queries += 1
        return self.table.query_entities(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.table, name)
