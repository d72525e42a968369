//! Fuzz: the Hessian 2 reader, as values, streams of values (skipped, written back
//! byte-stable) and typed serde shapes.

use rubbo_fuzz::targets;

#[test]
fn values() {
    targets::HESSIAN_VALUE.fuzz();
}

#[test]
fn streams_of_values() {
    targets::HESSIAN_STREAM.fuzz();
}

#[test]
fn typed_shapes() {
    targets::HESSIAN_SERDE.fuzz();
}
