//! The interop binaries take `--config FILE` and `--set KEY=VALUE`, mapped onto their
//! flags: an explicit flag beats `--set`, which beats the file, which beats the
//! flags' defaults.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A provider process, killed on drop.
struct Provider {
    child: Child,
    port: u16,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `interop-provider` and waits (bounded) for its `READY dubbo <port>`.
fn provider(args: &[&str]) -> Provider {
    let mut child = Command::new(env!("CARGO_BIN_EXE_interop-provider"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start interop-provider");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("READY line within 30 s");
    let port = line
        .strip_prefix("READY dubbo ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    Provider { child, port }
}

/// Runs `interop-consumer` to the end: its exit code and stdout.
fn consumer(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_interop-consumer"))
        .args(args)
        .args(["--deadline", "60000"])
        .output()
        .expect("run interop-consumer");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn set_and_config_reach_the_provider_and_explicit_flags_win() {
    let dir = std::env::temp_dir().join(format!("interop-config-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("provider.yml");
    std::fs::write(
        &file,
        "dubbo:\n  application:\n    name: from-file\n  protocol:\n    port: 0\n    host: 127.0.0.1\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();

    // --set beats the file.
    let p = provider(&["--config", file, "--set", "dubbo.application.name=from-set"]);
    let url = format!("dubbo://127.0.0.1:{}", p.port);
    let want = format!("from-set@127.0.0.1:{}", p.port);
    let (code, out, err) = consumer(&["--url", &url, "--expect-whoami", &want]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.trim_end().ends_with(" passed, 0 failed"), "{out}");
    drop(p);

    // The explicit flag beats --set; the file's port 0 beats the flag's default 20880.
    let p = provider(&[
        "--config",
        file,
        "--set",
        "dubbo.application.name=from-set",
        "--application",
        "from-flag",
    ]);
    assert_ne!(p.port, 20880);
    let url = format!("dubbo://127.0.0.1:{}", p.port);
    let want = format!("from-flag@127.0.0.1:{}", p.port);
    let (code, out, err) = consumer(&["--url", &url, "--expect-whoami", &want]);
    assert_eq!(code, 0, "{out}\n{err}");
    drop(p);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_settings_fail_before_serving_or_calling() {
    let out = Command::new(env!("CARGO_BIN_EXE_interop-provider"))
        .args(["--set", "dubbo.protocol.port=abc"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dubbo.protocol.port"), "{err}");

    let (code, _, err) = consumer(&["--url", "dubbo://127.0.0.1:1", "--set", "no-equals"]);
    assert_ne!(code, 0);
    assert!(err.contains("KEY=VALUE"), "{err}");

    // Neither --url nor a registry: a usage error, as before.
    let (code, _, err) = consumer(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--url"), "{err}");
}
