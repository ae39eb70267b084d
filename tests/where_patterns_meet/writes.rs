//! Writes of whole documents: unlink then replace, shard-key changes, inserts that land partly, insert_many (issue 27 items 4, 12, 13, 16).
