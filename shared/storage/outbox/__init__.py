"""The outbox: a change's events kept in the row whose change they announce, and the marks that say which are out."""
