//! Derived of derived: a copy carried by a subset summary (or another copy), and the subset rebuild (issue 27 headline, items 1 and 8).
