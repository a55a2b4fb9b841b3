"""The storage client: one account's Table, Queue and Blob services over kept-alive HTTP connections, signed requests, transactions, and surviving a lost answer."""
