//! `rubbo qos HOST:PORT CMD [ARGS]` against a running application's QoS port.

use std::process::Command;

use rubbo::Rubbo;

fn rubbo(args: Vec<String>) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rubbo"))
        .args(args)
        .output()
        .expect("run rubbo");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prints_the_answer_and_exits_1_unless_200() {
    let app = Rubbo::builder()
        .application("qos-cli")
        .port(0)
        .qos_port(0)
        .build()
        .expect("build");
    let addr = app.qos_address().expect("qos running").to_string();
    let run = |cmd: &[&str]| {
        let mut args = vec!["qos".to_owned(), addr.clone()];
        args.extend(cmd.iter().map(|s| (*s).to_owned()));
        tokio::task::spawn_blocking(move || rubbo(args))
    };
    let (code, out) = run(&["version"]).await.expect("join");
    let version = format!("dubbo version \"rubbo-{}\"", env!("CARGO_PKG_VERSION"));
    assert_eq!((code, out.trim()), (0, version.as_str()));
    // Nothing exported or referred yet: the startup probe fails with 503.
    let (code, out) = run(&["startup"]).await.expect("join");
    assert_eq!((code, out.trim()), (1, "false"));
    let (code, _) = run(&["nope"]).await.expect("join");
    assert_eq!(code, 1);
    let (code, out) = run(&["offline", "org.none.*"]).await.expect("join");
    assert_eq!((code, out.trim()), (0, "service not found"));
    app.shutdown().await;
}
