//! Read-idle tracking shared by client and server connections.

use std::time::Duration;

use bytes::BytesMut;
use tokio::time::{Instant, Interval, MissedTickBehavior, interval_at};

pub(crate) const READ_BUF: usize = 64 * 1024;
const MIN_READ: usize = 4 * 1024;

/// Keeps room for the next read without growing the buffer on every call.
pub(crate) fn reserve_read(buf: &mut BytesMut) {
    if buf.capacity() - buf.len() < MIN_READ {
        buf.reserve(READ_BUF);
    }
}

/// Ticks every `period` and reports how long nothing was read.
#[derive(Debug)]
pub(crate) struct IdleTicker {
    interval: Option<Interval>,
    last_read: Instant,
}

impl IdleTicker {
    /// A zero period never ticks.
    pub(crate) fn new(period: Duration) -> Self {
        let interval = (!period.is_zero()).then(|| {
            let mut i = interval_at(Instant::now() + period, period);
            i.set_missed_tick_behavior(MissedTickBehavior::Delay);
            i
        });
        IdleTicker {
            interval,
            last_read: Instant::now(),
        }
    }

    pub(crate) fn touch(&mut self) {
        self.last_read = Instant::now();
    }

    /// Waits for the next tick; returns the time since the last read.
    pub(crate) async fn tick(&mut self) -> Duration {
        match &mut self.interval {
            Some(i) => {
                i.tick().await;
                self.last_read.elapsed()
            }
            None => std::future::pending().await,
        }
    }
}
