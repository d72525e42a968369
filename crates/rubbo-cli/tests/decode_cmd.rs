//! `rubbo decode` on frames and values captured from Java Dubbo.

use std::process::Command;

fn fixture(name: &str) -> String {
    format!(
        "{}/../../interop/fixtures/dubbo/{name}.bin",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn rubbo(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rubbo"))
        .args(args)
        .output()
        .expect("run rubbo");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn decodes_a_java_request_frame_with_its_pojo_argument() {
    let (code, out, err) = rubbo(&["decode", "dubbo", &fixture("echo_user.request")]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["header"]["request"], true);
    assert_eq!(j["header"]["two_way"], true);
    assert_eq!(j["body"]["method"], "echoUser");
    assert_eq!(j["body"]["parameter_types"], "Lorg/rubbo/interop/User;");
    let user = &j["body"]["arguments"][0];
    assert_eq!(user["@class"], "org.rubbo.interop.User");
    assert_eq!(user["name"], "user-1");
    assert_eq!(user["createdAt"]["@date"], 1_700_000_000_001i64);
    assert_eq!(user["balance"]["value"], "1.50");
    assert_eq!(
        j["body"]["attachments"]["remote.application"],
        "interop-consumer"
    );
}

#[test]
fn decodes_responses_exceptions_errors_and_heartbeats() {
    let (code, out, _) = rubbo(&["decode", "dubbo", &fixture("fail.response")]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        j["body"]["exception"]["class"],
        "org.rubbo.interop.InteropException"
    );
    assert_eq!(j["body"]["exception"]["message"], "boom");

    let (code, out, _) = rubbo(&["decode", "dubbo", &fixture("unknown_method.response")]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["header"]["status"], 40);
    assert_eq!(j["header"]["status_name"], "BAD_REQUEST");
    assert!(
        j["body"]["error"]
            .as_str()
            .unwrap()
            .contains("noSuchMethod")
    );

    let (code, out, _) = rubbo(&[
        "decode",
        "dubbo",
        "--hex",
        "da bb e2 00 00 00 00 00 00 00 00 07 00 00 00 01 4e",
    ]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["body"]["event"], "heartbeat");
    assert_eq!(j["header"]["id"], 7);
}

#[test]
fn decodes_hessian_values_in_the_documented_json_view() {
    // 1, "hello", [int {1,2}], {a=1} as hessian-lite writes them.
    let (code, out, err) = rubbo(&[
        "decode",
        "hessian2",
        "--hex",
        "91 05 68 65 6c 6c 6f 72 04 5b 69 6e 74 91 92 48 01 61 91 5a",
    ]);
    assert_eq!(code, 0, "{err}");
    let values: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&out)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(values[0], 1);
    assert_eq!(values[1], "hello");
    assert_eq!(
        values[2],
        serde_json::json!({"@type": "[int", "items": [1, 2]})
    );
    assert_eq!(values[3], serde_json::json!({"a": 1}));
}

#[test]
fn bad_input_is_one_line_with_the_offset_and_exit_2() {
    for args in [
        vec!["decode", "hessian2", "--hex", "43 0f"],
        vec!["decode", "hessian2", "--hex", "zz"],
        vec!["decode", "dubbo", "--hex", "da bb c2 00"],
        vec![
            "decode",
            "dubbo",
            "--hex",
            "ca fe 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        ],
    ] {
        let (code, _, err) = rubbo(&args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("byte") || err.contains("offset"),
            "{args:?}: {err}"
        );
    }
}
