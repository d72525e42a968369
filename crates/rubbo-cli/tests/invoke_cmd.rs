//! `rubbo invoke` against a running provider on 127.0.0.1.

use std::process::Command;

fn invoke(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rubbo"))
        .arg("invoke")
        .args(args)
        .output()
        .expect("run rubbo invoke");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_calls_print_json_and_failures_exit_1() {
    let provider = interop::serve("invoke-test", "127.0.0.1", 0, &[])
        .await
        .unwrap();
    let url = format!(
        "dubbo://127.0.0.1:{}/org.rubbo.interop.InteropService?version=1.0.0",
        provider.addr.port()
    );
    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            invoke(&refs)
        })
    };

    let (code, out, err) = run(vec![url.clone(), "echo".into(), "\"hi 😀\"".into()])
        .await
        .unwrap();
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "\"hi 😀\"");

    let (code, out, _) = run(vec![url.clone(), "echoInt".into(), "262144".into()])
        .await
        .unwrap();
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "262144");

    let (code, out, err) = run(vec![url.clone(), "listUsers".into(), "2".into()])
        .await
        .unwrap();
    assert_eq!(code, 0, "{err}");
    let users: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(users[1]["name"], "user-1");
    assert_eq!(
        users[1]["class"], "org.rubbo.interop.User",
        "POJOs come back generalized as maps"
    );

    let user = r#"{"@class":"org.rubbo.interop.User","id":5,"name":"five","gender":{"@class":"org.rubbo.interop.Gender","name":"MALE"}}"#;
    let (code, out, err) = run(vec![url.clone(), "echoUser".into(), user.into()])
        .await
        .unwrap();
    assert_eq!(code, 0, "{err}");
    let back: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(back["name"], "five");
    assert_eq!(back["gender"], "MALE");

    let (code, _, err) = run(vec![url.clone(), "fail".into(), "\"boom\"".into()])
        .await
        .unwrap();
    assert_eq!(code, 1);
    assert!(
        err.contains("org.rubbo.interop.InteropException") && err.contains("boom"),
        "{err}"
    );

    let (code, _, err) = run(vec![url.clone(), "noSuchMethod".into()]).await.unwrap();
    assert_eq!(code, 1);
    assert!(err.contains("noSuchMethod"), "{err}");

    let (code, _, err) = run(vec![url.clone(), "echo".into(), "{not json".into()])
        .await
        .unwrap();
    assert_eq!(code, 2);
    assert!(err.contains("not JSON"), "{err}");

    provider.shutdown().await;
}
