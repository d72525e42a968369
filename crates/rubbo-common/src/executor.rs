//! The provider's bound on calls executing at once: Java's `threadpool`, `threads` and
//! `queues` keys, for an async runtime.
//!
//! Java runs each request on a thread of the server's pool (`FixedThreadPool` by
//! default: 200 threads, no queue) and answers a request the pool rejects with status
//! 100 `SERVER_THREADPOOL_EXHAUSTED_ERROR` (`AbortPolicyWithReport`). Rubbo runs each
//! request as a task, which costs little, so the bound is not about threads: it caps
//! the work a provider has accepted (the memory of the requests it holds, the load it
//! puts on what the service calls), so an overloaded provider refuses at once and a
//! consumer's failover moves the call elsewhere, instead of every call getting slower.
//! The default stays Java's 200, so a provider configured for Java is bounded the same
//! way; raise `threads` for services that mostly wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::keys::{Queues, THREADPOOL_KEY, THREADS_KEY, ThreadPool, Threads};
use crate::{ErrorKind, RpcError, Url};

/// The executor kinds Java knows, as Rubbo maps them.
const KNOWN: &str = "fixed, limited, cached, eager, virtual";

/// How many calls a provider runs at once and how many more wait for a slot.
///
/// From a provider URL ([`from_url`](Self::from_url)), per `threadpool`:
///
/// | `threadpool` | `threads` unset | `queues` |
/// |---|---|---|
/// | `fixed` (default), `limited` | 200 | 0: none; N: N wait; below 0: no bound |
/// | `cached`, `eager` | no bound | as for `fixed` (`eager` waits at least 1, as its `TaskQueue`) |
/// | `virtual` | no bound (a thread per call) | ignored |
///
/// ```
/// use rubbo_common::Url;
/// use rubbo_common::executor::ExecutorBound;
///
/// let url = Url::parse("dubbo://127.0.0.1:20880/S").unwrap();
/// assert_eq!(ExecutorBound::from_url(&url).unwrap(), Some(ExecutorBound { threads: 200, queues: 0 }));
/// let url = Url::parse("dubbo://127.0.0.1:20880/S?threadpool=cached").unwrap();
/// assert_eq!(ExecutorBound::from_url(&url).unwrap(), None);
/// assert!(ExecutorBound::from_url(&Url::parse("dubbo://h:1/S?threadpool=nope").unwrap()).is_err());
/// assert!(ExecutorBound::from_url(&Url::parse("dubbo://h:1/S?threads=abc").unwrap()).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorBound {
    /// Calls running at once.
    pub threads: usize,
    /// Calls admitted beyond `threads`, waiting for one to end (`usize::MAX`: no bound).
    pub queues: usize,
}

impl ExecutorBound {
    /// The bound a provider URL asks for; `None` when it asks for none. An unknown
    /// `threadpool` or a `threads` of 0 or less is a configuration error.
    pub fn from_url(url: &Url) -> Result<Option<ExecutorBound>, RpcError> {
        let kind = url.str_param::<ThreadPool>();
        let threads = match url.get_param(THREADS_KEY) {
            None => None,
            Some(raw) => Some(raw.trim().parse::<i64>().map_err(|_| {
                RpcError::new(
                    ErrorKind::Unknown,
                    format!("threads must be a whole number, got {raw:?}"),
                )
            })?),
        };
        let default_threads = match kind {
            "fixed" | "limited" => Some(Threads::DEFAULT),
            "cached" | "eager" => None,
            "virtual" => return Ok(None),
            other => {
                return Err(RpcError::new(
                    ErrorKind::Unknown,
                    format!("unknown {THREADPOOL_KEY} {other:?}, known: {KNOWN}"),
                ));
            }
        };
        let Some(threads) = threads.or(default_threads) else {
            return Ok(None);
        };
        if threads <= 0 {
            return Err(RpcError::new(
                ErrorKind::Unknown,
                format!("threads must be at least 1, got {threads}"),
            ));
        }
        let queues = match url.param::<Queues>() {
            q if q < 0 => usize::MAX,
            q => usize::try_from(q).unwrap_or(usize::MAX),
        };
        let queues = if kind == "eager" {
            queues.max(1)
        } else {
            queues
        };
        Ok(Some(ExecutorBound {
            threads: usize::try_from(threads).unwrap_or(usize::MAX),
            queues,
        }))
    }
}

/// The calls a bounded server has admitted: at most `threads` run, at most `queues`
/// more wait; one more is refused ([`Exhausted`]).
///
/// ```
/// use rubbo_common::executor::{ExecutorBound, Executions};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let pool = Executions::new(ExecutorBound { threads: 1, queues: 0 });
/// let first = pool.try_admit().unwrap().run().await; // runs
/// assert!(pool.try_admit().is_err());                  // refused: the pool is full
/// drop(first);
/// assert!(pool.try_admit().is_ok());
/// assert_eq!(pool.rejected(), 1);
/// # });
/// ```
#[derive(Debug)]
pub struct Executions {
    bound: ExecutorBound,
    /// Slots to run in: `threads` permits.
    running: Arc<Semaphore>,
    /// Calls admitted and not yet ended (running or waiting).
    admitted: AtomicUsize,
    largest: AtomicUsize,
    tasks: AtomicU64,
    completed: AtomicU64,
    rejected: AtomicU64,
    /// When a refusal was last logged, for [`Exhausted::should_log`].
    last_log: Mutex<Option<Instant>>,
}

/// How often a refusal is logged at most (the rest are counted).
const LOG_EVERY: Duration = Duration::from_secs(1);

impl Executions {
    /// An empty pool with this bound.
    pub fn new(bound: ExecutorBound) -> Arc<Executions> {
        let permits = bound.threads.min(Semaphore::MAX_PERMITS);
        Arc::new(Executions {
            bound,
            running: Arc::new(Semaphore::new(permits)),
            admitted: AtomicUsize::new(0),
            largest: AtomicUsize::new(0),
            tasks: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            last_log: Mutex::new(None),
        })
    }

    /// The bound.
    pub fn bound(&self) -> ExecutorBound {
        self.bound
    }

    /// Admits one call if there is room, counting nothing when there is none (for a
    /// caller that will try again before refusing; see [`try_admit`](Self::try_admit)).
    pub fn admit_if_free(self: &Arc<Self>) -> Option<Admitted> {
        self.admit().ok()
    }

    fn admit(self: &Arc<Self>) -> Result<Admitted, usize> {
        let max = self.bound.threads.saturating_add(self.bound.queues);
        let admitted = self
            .admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        admitted.map(|before| {
            self.tasks.fetch_add(1, Ordering::Relaxed);
            let running = (before + 1).min(self.bound.threads);
            self.largest.fetch_max(running, Ordering::Relaxed);
            Admitted { pool: self.clone() }
        })
    }

    /// Admits one call, or refuses it (and counts the refusal) when `threads + queues`
    /// calls are admitted.
    pub fn try_admit(self: &Arc<Self>) -> Result<Admitted, Exhausted> {
        match self.admit() {
            Ok(admitted) => Ok(admitted),
            Err(now) => {
                let rejected = self.rejected.fetch_add(1, Ordering::Relaxed) + 1;
                let should_log = {
                    let mut last = self.last_log.lock();
                    let due = last.is_none_or(|t| t.elapsed() >= LOG_EVERY);
                    if due {
                        *last = Some(Instant::now());
                    }
                    due
                };
                Err(Exhausted {
                    bound: self.bound,
                    active: now.min(self.bound.threads),
                    largest: self.largest.load(Ordering::Relaxed),
                    tasks: self.tasks.load(Ordering::Relaxed),
                    completed: self.completed.load(Ordering::Relaxed),
                    rejected,
                    should_log,
                })
            }
        }
    }

    /// Calls admitted now (running or waiting).
    pub fn admitted(&self) -> usize {
        self.admitted.load(Ordering::Acquire)
    }

    /// Calls refused so far.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Calls running now (holding one of the `threads` slots, as far as admission
    /// tells): Java's `getActiveCount`.
    pub fn running(&self) -> usize {
        self.admitted().min(self.bound.threads)
    }

    /// Calls admitted and waiting for a slot now: Java's `getQueue().size()`.
    pub fn queued(&self) -> usize {
        self.admitted().saturating_sub(self.bound.threads)
    }

    /// The most calls that ever ran at once: Java's `getLargestPoolSize`.
    pub fn largest(&self) -> usize {
        self.largest.load(Ordering::Relaxed)
    }

    /// Calls admitted so far: Java's `getTaskCount`.
    pub fn tasks(&self) -> u64 {
        self.tasks.load(Ordering::Relaxed)
    }

    /// Admitted calls that ended so far: Java's `getCompletedTaskCount`.
    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }
}

/// A call admitted by [`Executions::try_admit`]; it counts until dropped.
#[derive(Debug)]
pub struct Admitted {
    pool: Arc<Executions>,
}

impl Admitted {
    /// Waits for a slot to run in (at once unless the call was queued).
    pub async fn run(self) -> Running {
        // The semaphore is never closed; if it were, run without a slot rather than
        // drop an admitted call.
        let permit = self.pool.running.clone().acquire_owned().await.ok();
        Running {
            _permit: permit,
            _admitted: self,
        }
    }

    /// A slot to run in now, or the call back when every slot is taken (it was
    /// queued: [`run`](Self::run) waits for one). Calls already waiting keep their
    /// turn: a freed slot goes to them first.
    pub fn try_run(self) -> Result<Running, Admitted> {
        match self.pool.running.clone().try_acquire_owned() {
            Ok(permit) => Ok(Running {
                _permit: Some(permit),
                _admitted: self,
            }),
            // Never closed (see `run`).
            Err(tokio::sync::TryAcquireError::Closed) => Ok(Running {
                _permit: None,
                _admitted: self,
            }),
            Err(tokio::sync::TryAcquireError::NoPermits) => Err(self),
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.pool.admitted.fetch_sub(1, Ordering::AcqRel);
        self.pool.completed.fetch_add(1, Ordering::Relaxed);
    }
}

/// A call holding a slot to run in; dropping it frees the slot.
#[derive(Debug)]
pub struct Running {
    _permit: Option<OwnedSemaphorePermit>,
    _admitted: Admitted,
}

/// A refused call: the pool's state when it was refused.
#[derive(Debug, Clone)]
pub struct Exhausted {
    bound: ExecutorBound,
    active: usize,
    largest: usize,
    tasks: u64,
    completed: u64,
    rejected: u64,
    should_log: bool,
}

impl Exhausted {
    /// Calls refused so far by this pool, this one included.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// Whether to log this refusal: at most one a second is, the rest are counted.
    pub fn should_log(&self) -> bool {
        self.should_log
    }

    /// The bound that was full.
    pub fn bound(&self) -> ExecutorBound {
        self.bound
    }

    /// The text Java's provider answers with status 100 (`WrappedChannelHandler`'s
    /// `sendFeedback` around `AbortPolicyWithReport`'s message), for a server of
    /// `protocol` on `ip:port`.
    pub fn message(&self, protocol: &str, ip: &str, port: u16) -> String {
        let threads = self.bound.threads;
        format!(
            "Server side({ip},{port}) thread pool is exhausted, detail msg:Thread pool is EXHAUSTED! \
             Thread Name: DubboServerHandler-{ip}:{port}, Pool Size: {active} (active: {active}, \
             core: {threads}, max: {threads}, largest: {largest}), Task: {tasks} (completed: {completed}), \
             Executor status:(isShutdown:false, isTerminated:false, isTerminating:false), in {protocol}://{ip}:{port}!",
            active = self.active,
            largest = self.largest,
            tasks = self.tasks,
            completed = self.completed,
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn url(query: &str) -> Url {
        Url::parse(&format!("dubbo://127.0.0.1:20880/S?{query}")).unwrap()
    }

    fn bound(query: &str) -> Option<ExecutorBound> {
        ExecutorBound::from_url(&url(query)).unwrap()
    }

    #[test]
    fn java_keys_map_to_bounds() {
        let b = |threads, queues| Some(ExecutorBound { threads, queues });
        assert_eq!(bound(""), b(200, 0));
        assert_eq!(bound("threads=8&queues=2"), b(8, 2));
        assert_eq!(bound("threadpool=limited&threads=3"), b(3, 0));
        assert_eq!(bound("queues=-1"), b(200, usize::MAX));
        assert_eq!(bound("threadpool=cached"), None);
        assert_eq!(bound("threadpool=cached&threads=5"), b(5, 0));
        assert_eq!(bound("threadpool=eager&threads=5"), b(5, 1));
        assert_eq!(bound("threadpool=virtual&threads=5"), None);
        let unknown = ExecutorBound::from_url(&url("threadpool=huge")).unwrap_err();
        assert!(unknown.message().contains("known: fixed"), "{unknown}");
        assert!(ExecutorBound::from_url(&url("threads=0")).is_err());
    }

    #[tokio::test]
    async fn queued_calls_wait_for_a_slot_and_one_more_is_refused() {
        let pool = Executions::new(ExecutorBound {
            threads: 1,
            queues: 1,
        });
        let first = pool.try_admit().unwrap().run().await;
        let queued = pool.try_admit().unwrap();
        let refused = pool.try_admit().unwrap_err();
        assert_eq!(refused.rejected(), 1);
        assert!(refused.should_log());
        let waiting = tokio::spawn(queued.run());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the queued call waits for the slot");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(pool.admitted(), 1);
        drop(second);
        assert_eq!(pool.admitted(), 0);
        assert!(pool.try_admit().is_ok(), "free again");
    }

    #[test]
    fn try_run_takes_a_free_slot_and_hands_back_a_queued_call() {
        let pool = Executions::new(ExecutorBound {
            threads: 1,
            queues: 1,
        });
        let first = pool.try_admit().unwrap().try_run().unwrap();
        let queued = pool.try_admit().unwrap().try_run().unwrap_err();
        assert_eq!(pool.admitted(), 2, "handed back, still admitted");
        drop(first);
        let second = queued.try_run().unwrap();
        drop(second);
        assert_eq!(pool.admitted(), 0);
    }

    #[test]
    fn the_refusal_reads_as_javas() {
        let pool = Executions::new(ExecutorBound {
            threads: 1,
            queues: 0,
        });
        let _held = pool.try_admit().unwrap();
        let text = pool
            .try_admit()
            .unwrap_err()
            .message("dubbo", "10.0.0.1", 20880);
        assert_eq!(
            text,
            "Server side(10.0.0.1,20880) thread pool is exhausted, detail msg:Thread pool is EXHAUSTED! \
             Thread Name: DubboServerHandler-10.0.0.1:20880, Pool Size: 1 (active: 1, core: 1, max: 1, \
             largest: 1), Task: 1 (completed: 0), Executor status:(isShutdown:false, isTerminated:false, \
             isTerminating:false), in dubbo://10.0.0.1:20880!"
        );
    }
}
