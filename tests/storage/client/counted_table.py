"""A table client that counts the queries sent through it, for tests of how many a step costs."""


class CountedQueries:
    def __init__(self, table) -> None:
        self.table = table
        self.queries = 0
        self.pages: list[int | None] = []   # the page size each query asked for

    def query_entities(self, *args, **kwargs):
        self.queries += 1
        self.pages.append(kwargs.get("results_per_page"))
        return self.table.query_entities(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.table, name)
