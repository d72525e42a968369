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
    assert!(
        err.contains("provider demo-provider-0 QoS port at 127.0.0.1:"),
        "the demo prints its QoS address: {err}"
    );
}

/// The number of calls made before the crash, from the demo's "crashing … after N
/// calls" line.
fn calls_before_crash(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("crashing demo-provider-0 after "))
        .unwrap_or_else(|| panic!("no crash line: {stderr}"));
    line["crashing demo-provider-0 after ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad crash line: {line}"))
}

#[test]
fn failover_loses_no_call_when_a_provider_crashes() {
    let (code, j, err) = demo(&["--providers", "3", "--calls", "1000", "--kill-one"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["ok"], 1000, "{j}");
    assert_eq!(j["failed"], 0, "{j}");
    // The crash found calls in flight to the victim: failover retried them elsewhere.
    let in_flight = j["in_flight_at_crash"].as_u64().unwrap_or(0);
    assert!(in_flight >= 1, "the crash happened with calls inside: {j}");
    let by = j["by_provider"].as_object().unwrap();
    let total: u64 = by.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, 1000);
    let crashed = by
        .iter()
        .find(|(k, _)| k.starts_with("demo-provider-0@"))
        .map(|(_, v)| v.as_u64().unwrap())
        .unwrap_or(0);
    let before = calls_before_crash(&err);
    assert!(
        crashed <= before,
        "the crashed provider answered only calls made before the crash ({before}): {j}"
    );
}

#[test]
fn failfast_fails_exactly_the_calls_in_flight_to_the_crashed_provider() {
    let (code, j, err) = demo(&[
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
    assert_eq!(j["calls"], 400, "{j}");
    // Round robin over two providers: 4 of each batch of 8 are inside the victim.
    assert_eq!(j["in_flight_at_crash"], 4, "{j}");
    // Failfast does not retry them, and sends nothing more to the dead provider.
    assert_eq!(j["failed"], 4, "{j} {err}");
    assert_eq!(j["ok"], 396, "{j}");
    assert_eq!(code, 1);
    assert_eq!(calls_before_crash(&err), 200, "{err}");
}
