#[test]
fn halves() {
    let q = calc::divide(1, 2);
    assert!(q == 1, "expected 1, got {}", q);
}
