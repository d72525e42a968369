//! Revisions and JSON against vectors computed by real Java Dubbo 3.3.6
//! (`tests/fixtures/regen-revisions.sh` re-produces `revisions.json` from
//! `revisions-input.json`). The `interop-provider` vector is the MetadataInfo a live
//! Java provider served, with the revision it registered.

use rubbo_metadata::{MetadataInfo, ServiceInfo};
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let text = include_str!("fixtures/revisions.json");
    serde_json::from_str(text).expect("fixture parses")
}

fn build(input: &Value) -> MetadataInfo {
    let mut info = MetadataInfo::new(input["app"].as_str().expect("app"));
    for s in input["services"].as_array().expect("services") {
        let service: ServiceInfo = serde_json::from_value(s.clone()).expect("service info");
        info.add_service(service);
    }
    info
}

#[test]
fn revisions_are_javas_byte_for_byte() {
    let vectors = vectors();
    assert!(vectors.len() >= 4);
    for v in &vectors {
        let info = build(&v["input"]);
        assert_eq!(
            info.revision(),
            v["revision"].as_str().expect("revision"),
            "app {}",
            v["input"]["app"]
        );
    }
}

#[test]
fn json_is_javas_and_parses_back() {
    for v in vectors() {
        let info = build(&v["input"]);
        let java_text = v["json"].as_str().expect("json");
        let ours: Value = serde_json::from_str(&info.to_json()).expect("ours parses");
        let java: Value = serde_json::from_str(java_text).expect("java's parses");
        assert_eq!(ours, java, "app {}", v["input"]["app"]);
        // Java's JSON read back is the same MetadataInfo, with the same revision.
        let back = MetadataInfo::from_json(java_text).expect("reads java's");
        assert_eq!(back, info);
        assert_eq!(back.calculate_revision(), info.revision());
    }
}

#[test]
fn the_revision_is_stable_across_runs_and_insertion_orders() {
    for v in vectors() {
        let a = build(&v["input"]);
        let mut reversed = v["input"].clone();
        if let Some(list) = reversed["services"].as_array_mut() {
            list.reverse();
        }
        let b = build(&reversed);
        assert_eq!(a.revision(), b.revision());
        assert_eq!(a.to_json(), b.to_json());
    }
}
