//! `rubbo demo` as the README runs it: providers and a consumer over real sockets,
//! discovery through the embedded registry, no call lost when a provider crashes.

use std::process::Command;

fn demo(args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rubbo"))
        .arg("demo")
        .args(args)
        .output()
        .expect("run rubbo demo");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = stdout.lines().last().unwrap_or_default().to_owned();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&last).unwrap_or(serde_json::Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn spreads_calls_over_every_provider() {
    let (code, j, err) = demo(&[
        "--providers",
        "3",
        "--calls",
        "600",
        "--loadbalance",
        "roundrobin",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["calls"], 600);
    assert_eq!(j["ok"], 600);
    assert_eq!(j["failed"], 0);
    let by = j["by_provider"].as_object().unwrap();
    assert_eq!(by.len(), 3, "{j}");
    for (id, n) in by {
        assert_eq!(
            n.as_u64(),
            Some(200),
            "round robin gives each provider a third: {id} {j}"
        );
    }
    assert!(
        err.contains(
            "fail(\"boom\") -> business exception error: org.rubbo.demo.DemoException: boom"
        ),
        "{err}"
    );
}

#[test]
fn failover_loses_no_call_when_a_provider_crashes() {
    let (code, j, err) = demo(&["--providers", "3", "--calls", "1000", "--kill-one"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["ok"], 1000, "{j}");
    assert_eq!(j["failed"], 0, "{j}");
    let by = j["by_provider"].as_object().unwrap();
    let total: u64 = by.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, 1000);
    let crashed = by
        .iter()
        .find(|(k, _)| k.starts_with("demo-provider-0@"))
        .map(|(_, v)| v.as_u64().unwrap())
        .unwrap_or(0);
    assert!(
        crashed <= 520,
        "the crashed provider served only before the crash: {j}"
    );
    assert!(err.contains("crashing demo-provider-0"), "{err}");
}

#[test]
fn failfast_reports_the_calls_that_hit_the_crashed_provider() {
    let (code, j, _) = demo(&[
        "--providers",
        "2",
        "--calls",
        "400",
        "--kill-one",
        "--cluster",
        "failfast",
        "--loadbalance",
        "roundrobin",
    ]);
    // Calls to the dead provider fail until its connection is seen as down.
    assert_eq!(j["calls"], 400, "{j}");
    let failed = j["failed"].as_u64().unwrap();
    assert_eq!(code, if failed == 0 { 0 } else { 1 });
    assert_eq!(j["ok"].as_u64().unwrap() + failed, 400);
}
