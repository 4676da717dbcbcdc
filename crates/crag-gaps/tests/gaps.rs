//! Integration tests of crag-gaps: real and hand-written model replies, and properties of the
//! parser and the gap key on arbitrary input.

mod gaps {
    mod fixtures;
    mod properties;
}
