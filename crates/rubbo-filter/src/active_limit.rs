//! `activelimit`: at most `actives` calls of a method in flight from this consumer to
//! one provider (Java's `ActiveLimitFilter`); more wait for a slot, until their
//! timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rubbo_common::filter::Activate;
use rubbo_common::keys::{ACTIVES_KEY, Actives, Timeout};
use rubbo_common::{BoxInvoker, ErrorKind, Filter, Invocation, InvokeFuture, Invoker, RpcError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::debug;

use crate::support::{MethodSlots, delegate_to_next};

/// Lets at most `actives` calls of a method (the method-level `{method}.actives` or
/// the reference's `actives`) be in flight to one provider. A call over the limit
/// waits, without blocking a thread, until a call ends or its timeout passes: the
/// time left before the call's deadline (set by `deadline`, which runs first), or
/// else the URL's `{method}.timeout` / `timeout`. Then it fails with `Timeout`.
/// Consumer side (per provider), order 0, when the URL has `actives`.
///
/// Java counts in the global `RpcStatus` that `leastactive` also reads. Rubbo's
/// counters for the balancers live in `rubbo-cluster`, above this crate, and count
/// without a way to wait; the slots here are a semaphore per method, owned by the
/// provider's chain and dropped with it.
#[derive(Debug, Default, Clone, Copy)]
pub struct ActiveLimitFilter;

impl Filter for ActiveLimitFilter {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        Arc::new(ActiveLimit {
            next,
            methods: MethodSlots::default(),
        })
    }

    fn activate(&self) -> Activate {
        Activate::consumer(0).when_keys(&[ACTIVES_KEY])
    }
}

#[derive(Debug)]
struct ActiveLimit {
    next: BoxInvoker,
    /// The free slots of each limited method.
    methods: MethodSlots,
}

/// The call, holding its slot until it ends (or is dropped).
fn holding(permit: OwnedSemaphorePermit, call: InvokeFuture) -> InvokeFuture {
    Box::pin(async move {
        let result = call.await;
        drop(permit);
        result
    })
}

impl Invoker for ActiveLimit {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let url = self.next.url();
        let max = url.method_param::<Actives>(inv.method());
        if max == 0 {
            return self.next.invoke(inv);
        }
        let slots = self.methods.get(inv.method(), max);
        if let Ok(permit) = slots.clone().try_acquire_owned() {
            return holding(permit, self.next.invoke(inv));
        }
        let start = Instant::now();
        let timeout = match inv.deadline() {
            Some(deadline) => deadline.saturating_duration_since(start),
            None => url.method_param::<Timeout>(inv.method()),
        };
        let next = self.next.clone();
        Box::pin(async move {
            match tokio::time::timeout(timeout, slots.clone().acquire_owned()).await {
                Ok(Ok(permit)) => holding(permit, next.invoke(inv)).await,
                // The semaphore is never closed; fail like a timeout if it ever is.
                Ok(Err(_)) | Err(_) => Err(waited_too_long(&inv, &slots, max, start, timeout)),
            }
        })
    }

    delegate_to_next!();
}

/// Java's error for a call that found no slot in time.
fn waited_too_long(
    inv: &Invocation,
    slots: &Semaphore,
    max: u32,
    start: Instant,
    timeout: Duration,
) -> RpcError {
    let elapsed = start.elapsed().as_millis();
    let active = (max as usize).saturating_sub(slots.available_permits());
    debug!(service = %inv.interface(), method = %inv.method(), max, active, "actives limit: no slot in time");
    RpcError::new(
        ErrorKind::Timeout,
        format!(
            "Waiting concurrent invoke timeout in client-side for service:  {}, method: {}, elapsed: {}, timeout: {}. concurrent invokes: {}. max concurrent invoke limit: {}",
            inv.interface(),
            inv.method(),
            elapsed,
            // Rounded: a deadline set a moment ago leaves 99.9 of 100 ms.
            (timeout + Duration::from_micros(500)).as_millis(),
            active,
            max
        ),
    )
}
