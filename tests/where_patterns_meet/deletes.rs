//! Deletes where patterns meet: NULLIFY, cascade cycles, cascades into subset children, bucket pages racing a parent delete (issue 27).
