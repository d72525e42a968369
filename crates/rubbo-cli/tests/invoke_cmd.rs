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

/// `--registry … --repeat`: the whole consumer path (directory, load balance) over
/// two providers found through a registry, one result per line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_registry_each_call_prints_the_provider_that_answered() {
    let registry = rubbo::dev_registry::DevRegistryServer::serve("127.0.0.1", 0)
        .await
        .unwrap();
    let address = registry.address();
    let registries = [address.clone()];
    let a = interop::serve("invoke-reg-a", "127.0.0.1", 0, &registries)
        .await
        .unwrap();
    let b = interop::serve("invoke-reg-b", "127.0.0.1", 0, &registries)
        .await
        .unwrap();
    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            invoke(&refs)
        })
    };
    let args = |service: &str, extra: &[&str]| {
        let mut v: Vec<String> = vec![
            "--registry".into(),
            address.clone(),
            // Round robin: the two providers answer in turn, whatever the seed.
            "--set".into(),
            "dubbo.consumer.loadbalance=roundrobin".into(),
            service.into(),
        ];
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };

    let (code, out, err) = run(args(
        "org.rubbo.interop.InteropService:1.0.0",
        &["whoami", "--repeat", "20"],
    ))
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 20, "one line per call: {out}");
    let ida = format!("\"invoke-reg-a@127.0.0.1:{}\"", a.addr.port());
    let idb = format!("\"invoke-reg-b@127.0.0.1:{}\"", b.addr.port());
    let from_a = lines.iter().filter(|l| **l == ida).count();
    let from_b = lines.iter().filter(|l| **l == idb).count();
    assert_eq!(from_a + from_b, 20, "every line names a provider: {out}");
    assert_eq!((from_a, from_b), (10, 10), "round robin over both: {out}");

    // Arguments go through too, and a business exception fails the run.
    let (code, out, err) = run(args(
        "org.rubbo.interop.InteropService:1.0.0",
        &["echo", "\"via registry\""],
    ))
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "\"via registry\"");
    let (code, _, err) = run(args(
        "org.rubbo.interop.InteropService:1.0.0",
        &["fail", "\"boom\"", "--repeat", "2"],
    ))
    .await
    .unwrap();
    assert_eq!(code, 1);
    assert!(err.contains("2 of 2 calls failed"), "{err}");

    // A service nobody provides: the reference fails (Java's check=true), clearly.
    let (code, _, err) = run(args("org.rubbo.NoSuchService:9.9.9", &["whoami"]))
        .await
        .unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("org.rubbo.NoSuchService:9.9.9") && err.contains("no provider"),
        "{err}"
    );

    // A service key needs a registry.
    let (code, _, err) = run(vec![
        "org.rubbo.interop.InteropService:1.0.0".into(),
        "whoami".into(),
    ])
    .await
    .unwrap();
    assert_eq!(code, 2);
    assert!(err.contains("no registry is configured"), "{err}");

    a.shutdown().await;
    b.shutdown().await;
    registry.shutdown().await;
}

/// A `tri://` URL is called over Triple (wrapper mode, `$invoke` inside).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_triple_url_is_invoked_over_triple() {
    let provider = interop::serve_on("tri", "invoke-tri", "127.0.0.1", 0, &[])
        .await
        .unwrap();
    let url = format!(
        "tri://127.0.0.1:{}/org.rubbo.interop.InteropService?version=1.0.0",
        provider.addr.port()
    );
    let out = tokio::task::spawn_blocking(move || {
        let a = invoke(&[&url, "echo", "\"over tri\""]);
        let b = invoke(&[&url, "whoami", "--repeat", "3"]);
        let c = invoke(&["rsocket://127.0.0.1:1/x.Y", "whoami"]);
        (a, b, c)
    })
    .await
    .unwrap();
    let ((code, out_a, err), (code_b, out_b, err_b), (code_c, _, err_c)) = out;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out_a.trim(), "\"over tri\"");
    assert_eq!(code_b, 0, "{err_b}");
    let id = format!("\"invoke-tri@127.0.0.1:{}\"", provider.addr.port());
    assert_eq!(out_b.lines().collect::<Vec<_>>(), vec![id.as_str(); 3]);
    assert_eq!(code_c, 2);
    assert!(
        err_c.contains("rsocket") && err_c.contains("dubbo") && err_c.contains("tri"),
        "{err_c}"
    );
    provider.shutdown().await;
}
