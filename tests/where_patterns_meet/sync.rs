//! The deferred sync worker never stalls on one event, and version records ahead of their source (issue 27 Build 3 and item 9).
