//! `rubbo url` as a user runs it: the real binary, its stdout, stderr and exit code.

use std::process::Command;

fn rubbo(args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rubbo"))
        .args(args)
        .output()
        .expect("run rubbo");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn prints_every_part_with_nulls_for_absent_ones() {
    let (code, j, _) = rubbo(&[
        "url",
        "dubbo://admin:pw@10.0.0.1:20880/org.Foo?version=1.0&timeout=300",
    ]);
    assert_eq!(code, 0);
    assert_eq!(j["protocol"], "dubbo");
    assert_eq!(j["username"], "admin");
    assert_eq!(j["password"], "pw");
    assert_eq!(j["host"], "10.0.0.1");
    assert_eq!(j["port"], 20880);
    assert_eq!(j["path"], "org.Foo");
    assert_eq!(j["parameters"]["timeout"], "300");
    assert!(j["nested"]["export"].is_null());

    let (code, j, _) = rubbo(&["url", "/home/user1/router.js"]);
    assert_eq!(code, 0);
    assert!(j["protocol"].is_null() && j["host"].is_null() && j["port"].is_null());
    assert_eq!(j["path"], "home/user1/router.js");
}

#[test]
fn decodes_a_zookeeper_node_name_and_nested_export_and_refer() {
    let node = "dubbo%3A%2F%2F192.168.1.2%3A20880%2Forg.apache.dubbo.demo.DemoService%3Fanyhost%3Dtrue%26application%3Ddemo-provider%26methods%3DsayHello%2CsayHelloAsync%26side%3Dprovider";
    let (code, j, _) = rubbo(&["url", node]);
    assert_eq!(code, 0);
    assert_eq!(j["host"], "192.168.1.2");
    assert_eq!(j["parameters"]["methods"], "sayHello,sayHelloAsync");

    let reg = "registry://127.0.0.1:2181/org.apache.dubbo.registry.RegistryService?registry=zookeeper&export=dubbo%3A%2F%2F10.0.0.1%3A20880%2Fa.B%3Fapplication%3Dx%26side%3Dprovider&refer=application%3Dc%26interface%3Da.B";
    let (code, j, _) = rubbo(&["url", reg]);
    assert_eq!(code, 0);
    assert_eq!(j["nested"]["export"]["protocol"], "dubbo");
    assert_eq!(j["nested"]["export"]["port"], 20880);
    assert_eq!(j["nested"]["export"]["parameters"]["side"], "provider");
    assert_eq!(j["nested"]["refer"]["parameters"]["interface"], "a.B");
    assert_eq!(
        j["parameters"]["export"],
        "dubbo://10.0.0.1:20880/a.B?application=x&side=provider"
    );
}

#[test]
fn malformed_urls_exit_2_with_one_line_on_stderr() {
    for bad in [
        "dubbo://:pw@host:1/p",
        "dubbo://host:abc/p",
        "dubbo://[::1:20880/p",
        "://x",
    ] {
        let (code, _, err) = rubbo(&["url", bad]);
        assert_eq!(code, 2, "{bad}");
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
        assert!(err.contains("malformed URL"), "{err}");
    }
}
