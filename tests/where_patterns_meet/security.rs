//! Bad input and reads that decide writes (issue 27 items 6 and 17).
