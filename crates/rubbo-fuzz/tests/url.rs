//! Fuzz: the URL parser, its percent-encoded (ZooKeeper node) form and URL lists.

#[test]
fn urls() {
    rubbo_fuzz::targets::URL.fuzz();
}
