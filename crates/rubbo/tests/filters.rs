//! Filters end to end, through the real bootstrap on 127.0.0.1: the provider's
//! `token`, the consumer's `activelimit`, and user filters installed with
//! `Rubbo::builder().filter(..)` on either side.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rubbo::filter::Activate;
use rubbo::{BoxInvoker, ErrorKind, Invocation, RpcError, Rubbo, Value, filter_fn};

/// A provider whose answer takes a while.
#[rubbo::service(interface = "org.rubbo.test.Sleepy", version = "1.0.0")]
pub trait Sleepy {
    /// `String nap(int millis)`.
    async fn nap(&self, millis: i32) -> Result<String, RpcError>;
}

/// Naps, and remembers how many naps ran at once.
#[derive(Default)]
struct Napper {
    running: AtomicUsize,
    most: AtomicUsize,
}

impl Sleepy for Napper {
    async fn nap(&self, millis: i32) -> Result<String, RpcError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(millis as u64)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok("rested".into())
    }
}

/// A provider of `napper` with `builder`'s settings, and its `dubbo://` address.
async fn provider(builder: rubbo::RubboBuilder, napper: Arc<Napper>) -> (Rubbo, String) {
    let p = builder
        .application("napper")
        .port(0)
        .build()
        .expect("provider config");
    let url = p.export(SleepyServer::new(napper)).await.expect("exported");
    let address = format!("dubbo://{}", url.address());
    (p, address)
}

/// A consumer with `builder`'s settings, referring `address` directly.
async fn consumer(builder: rubbo::RubboBuilder, address: &str) -> (Rubbo, BoxInvoker) {
    let c = builder
        .application("sleeper")
        .build()
        .expect("consumer config");
    let invoker = c
        .refer_url(&SleepyClient::SERVICE, address)
        .await
        .expect("referred");
    (c, invoker)
}

/// A filter that counts the calls it sees.
fn counting(activate: Activate) -> (impl rubbo::Filter, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    let filter = filter_fn(move |inv: Invocation, next: BoxInvoker| {
        count.fetch_add(1, Ordering::SeqCst);
        next.invoke(inv)
    })
    .with_activate(activate);
    (filter, seen)
}

#[tokio::test]
async fn a_provider_with_a_token_refuses_a_consumer_without_it_unless_token_is_removed() {
    let napper = Arc::new(Napper::default());
    let (guarded, address) =
        provider(Rubbo::builder().param("token", "secret"), napper.clone()).await;
    let (c, invoker) = consumer(Rubbo::builder().param("retries", "0"), &address).await;
    let err = SleepyClient::new(invoker).nap(0).await.unwrap_err();
    // The refusal crosses the wire as Java sends it: status 70 (SERVICE_ERROR) with
    // the message, so the consumer cannot tell `Forbidden` from other failures.
    assert!(
        err.message().contains(
            "Invalid token! Forbid invoke remote service org.rubbo.test.Sleepy method nap()"
        ),
        "{err}"
    );
    assert_eq!(
        napper.most.load(Ordering::SeqCst),
        0,
        "the service never ran"
    );

    let (open, address) = provider(
        Rubbo::builder()
            .param("token", "secret")
            .param("service.filter", "-token"),
        napper.clone(),
    )
    .await;
    let invoker = c.refer_url(&SleepyClient::SERVICE, &address).await.unwrap();
    assert_eq!(SleepyClient::new(invoker).nap(0).await.unwrap(), "rested");
    for app in [guarded, open, c] {
        app.shutdown().await;
    }
}

#[tokio::test]
async fn a_consumer_with_actives_1_sends_one_call_at_a_time() {
    let napper = Arc::new(Napper::default());
    let (p, address) = provider(Rubbo::builder(), napper.clone()).await;
    let (c, invoker) = consumer(
        Rubbo::builder()
            .param("actives", "1")
            .param("timeout", "5000")
            .param("retries", "0"),
        &address,
    )
    .await;
    let client = SleepyClient::new(invoker);
    let (a, b) = tokio::join!(client.nap(150), client.nap(150));
    assert_eq!(
        (a.unwrap(), b.unwrap()),
        ("rested".to_owned(), "rested".to_owned()),
        "the second call waited for the first and completed"
    );
    assert_eq!(napper.most.load(Ordering::SeqCst), 1, "never two at once");
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_call_waiting_for_a_slot_times_out_when_its_timeout_is_short() {
    let napper = Arc::new(Napper::default());
    let (p, address) = provider(Rubbo::builder(), napper.clone()).await;
    let (c, invoker) = consumer(
        Rubbo::builder()
            .param("actives", "1")
            .param("timeout", "5000")
            .param("retries", "0"),
        &address,
    )
    .await;
    let slow = SleepyClient::new(invoker.clone());
    // The same method, with a 100 ms timeout of its own (the `timeout` attachment).
    let hasty = Invocation::new("org.rubbo.test.Sleepy", "nap")
        .with_version("1.0.0")
        .with_parameter_types("I")
        .with_arguments(vec![Value::from(0)])
        .with_attachment("timeout", "100");
    let (first, second) = tokio::join!(slow.nap(600), async {
        // Start once the first call holds the slot: it is running on the provider.
        let running = async {
            while napper.running.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), running)
            .await
            .expect("the first call reaches the provider");
        invoker.invoke(hasty).await
    });
    assert_eq!(first.unwrap(), "rested");
    let err = second.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        err.message().contains(
            "Waiting concurrent invoke timeout in client-side for service:  org.rubbo.test.Sleepy, method: nap,"
        ),
        "{err}"
    );
    assert_eq!(napper.most.load(Ordering::SeqCst), 1);
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_users_provider_filter_sees_every_served_call() {
    let (filter, served) = counting(Activate::provider(0));
    let (p, address) = provider(
        Rubbo::builder().filter("served", filter),
        Arc::new(Napper::default()),
    )
    .await;
    let (c, invoker) = consumer(Rubbo::builder(), &address).await;
    let client = SleepyClient::new(invoker);
    for _ in 0..5 {
        client.nap(0).await.unwrap();
    }
    assert_eq!(served.load(Ordering::SeqCst), 5);
    p.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_users_cluster_filter_sees_each_call_once_even_with_retries() {
    let (p, address) = provider(Rubbo::builder(), Arc::new(Napper::default())).await;
    let (calls, per_call) = counting(Activate::cluster(0));
    let (attempts, per_attempt) = counting(Activate::consumer(0));
    let (c, invoker) = consumer(
        Rubbo::builder()
            .param("timeout", "100")
            .param("retries", "2")
            .filter("calls", calls)
            .filter("attempts", attempts),
        &address,
    )
    .await;
    let client = SleepyClient::new(invoker);
    let err = client.nap(400).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(
        per_attempt.load(Ordering::SeqCst),
        3,
        "the call and 2 retries"
    );
    assert_eq!(per_call.load(Ordering::SeqCst), 1, "one call");
    client.nap(0).await.unwrap();
    assert_eq!(per_call.load(Ordering::SeqCst), 2);
    p.shutdown().await;
    c.shutdown().await;
}
