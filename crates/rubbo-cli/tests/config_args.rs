//! `--config FILE` and `--set KEY=VALUE` as a user passes them to the real binary.

use std::process::Command;

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
fn a_set_without_equals_is_a_usage_error() {
    let (code, _, err) = rubbo(&["--set", "dubbo.consumer.timeout", "demo", "--calls", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--set expects KEY=VALUE"), "{err}");
}

#[test]
fn a_type_error_names_the_key_and_where_it_was_set() {
    let (code, _, err) = rubbo(&[
        "invoke",
        "--set",
        "dubbo.consumer.timeout=soon",
        "dubbo://127.0.0.1:1/org.Foo",
        "m",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("dubbo.consumer.timeout"), "{err}");
    assert!(err.contains("--set"), "{err}");

    let dir = tempfile_dir();
    let file = dir.join("bad.yml");
    std::fs::write(&file, "dubbo:\n  consumer:\n    retries: many\n").unwrap();
    let (code, _, err) = rubbo(&[
        "--config",
        file.to_str().unwrap(),
        "invoke",
        "dubbo://127.0.0.1:1/org.Foo",
        "m",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("dubbo.consumer.retries"), "{err}");
    assert!(err.contains("bad.yml:3"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn demo_takes_its_consumer_settings_from_set_and_a_flag_wins() {
    // A cluster name that does not exist fails the demo's reference: --set reaches it.
    let (code, _, err) = rubbo(&[
        "demo",
        "--providers",
        "1",
        "--calls",
        "4",
        "--set",
        "dubbo.consumer.cluster=nosuchcluster",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("nosuchcluster"), "{err}");
    // The explicit flag beats --set.
    let (code, out, err) = rubbo(&[
        "demo",
        "--providers",
        "1",
        "--calls",
        "4",
        "--cluster",
        "failover",
        "--set",
        "dubbo.consumer.cluster=nosuchcluster",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"ok\":4"), "{out}");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "rubbo-cli-config-args-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_takes_the_consumer_timeout_from_set_unless_the_url_has_one() {
    let provider = interop::serve("config-args-test", "127.0.0.1", 0, &[])
        .await
        .unwrap();
    let url = format!(
        "dubbo://127.0.0.1:{}/org.rubbo.interop.InteropService?version=1.0.0",
        provider.addr.port()
    );
    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let started = std::time::Instant::now();
            (rubbo(&refs), started.elapsed())
        })
    };
    let set = "dubbo.consumer.timeout=200".to_owned();
    let ((code, _, err), took) = run(vec![
        "--set".into(),
        set.clone(),
        "invoke".into(),
        url.clone(),
        "slow".into(),
        "1500".into(),
    ])
    .await
    .unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(err.to_lowercase().contains("timeout"), "{err}");
    assert!(took < std::time::Duration::from_millis(1400), "{took:?}");

    // The URL's own timeout wins over --set.
    let ((code, out, err), _) = run(vec![
        "--set".into(),
        set,
        "invoke".into(),
        format!("{url}&timeout=5000"),
        "slow".into(),
        "300".into(),
    ])
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "\"done\"");
    provider.shutdown().await;
}
