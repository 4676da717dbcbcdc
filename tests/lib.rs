//! End-to-end tests of crag live in `e2e.rs`; this library is empty.
