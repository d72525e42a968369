//! `MemoryRegistry`: a registry inside one process, with full notification semantics.

use std::collections::VecDeque;
use std::fmt;

use parking_lot::Mutex;
use rubbo_common::{BoxFuture, Url};

use crate::category::{categories, category_of, empty_url, is_match};
use crate::{
    Registry, RegistryError, RegistryResult, SharedListener, notify_safely, same_listener,
};

/// A registry held in memory: providers and consumers of one process (tests, demos).
///
/// Every subscriber gets each of its categories' whole list when it subscribes and after
/// each change of that category (`empty://` when empty). Notifications are delivered in
/// order, outside the registry's lock, so a listener may call the registry.
pub struct MemoryRegistry {
    url: Url,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    destroyed: bool,
    registered: Vec<Url>,
    subscribers: Vec<(Url, SharedListener)>,
    queue: VecDeque<(SharedListener, Vec<Url>)>,
    delivering: bool,
}

impl fmt::Debug for MemoryRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("MemoryRegistry")
            .field("url", &self.url)
            .field("registered", &s.registered.len())
            .field("subscribers", &s.subscribers.len())
            .finish()
    }
}

impl MemoryRegistry {
    /// An empty registry whose own URL is `url`.
    pub fn new(url: Url) -> Self {
        MemoryRegistry {
            url,
            state: Mutex::new(State::default()),
        }
    }

    /// The URLs registered now.
    pub fn registered(&self) -> Vec<Url> {
        self.state.lock().registered.clone()
    }

    fn check(&self, s: &State) -> RegistryResult<()> {
        if s.destroyed {
            Err(RegistryError::Destroyed(self.url.address()))
        } else {
            Ok(())
        }
    }

    /// The current list of `category` for subscription `sub`.
    fn list(registered: &[Url], sub: &Url, category: &str) -> Vec<Url> {
        let list: Vec<Url> = registered
            .iter()
            .filter(|u| category_of(u) == category && is_match(sub, u))
            .cloned()
            .collect();
        if list.is_empty() {
            vec![empty_url(sub, category)]
        } else {
            list
        }
    }

    /// Queues, for each subscriber matching `changed`, the new list of its category.
    fn queue_change(s: &mut State, changed: &Url) {
        let category = category_of(changed).to_owned();
        let mut out = Vec::new();
        for (sub, listener) in &s.subscribers {
            if is_match(sub, changed) {
                out.push((listener.clone(), Self::list(&s.registered, sub, &category)));
            }
        }
        s.queue.extend(out);
    }

    /// Delivers queued notifications, unless another caller is already doing so.
    fn drain(&self) {
        {
            let mut s = self.state.lock();
            if s.delivering {
                return;
            }
            s.delivering = true;
        }
        loop {
            let next = {
                let mut s = self.state.lock();
                match s.queue.pop_front() {
                    Some(n) => n,
                    None => {
                        s.delivering = false;
                        return;
                    }
                }
            };
            notify_safely(&*next.0, next.1);
        }
    }

    fn do_register(&self, url: Url) -> RegistryResult<()> {
        {
            let mut s = self.state.lock();
            self.check(&s)?;
            if s.registered.contains(&url) {
                return Ok(());
            }
            s.registered.push(url.clone());
            Self::queue_change(&mut s, &url);
        }
        self.drain();
        Ok(())
    }

    fn do_unregister(&self, url: Url) -> RegistryResult<()> {
        {
            let mut s = self.state.lock();
            self.check(&s)?;
            let before = s.registered.len();
            s.registered.retain(|u| *u != url);
            if s.registered.len() == before {
                return Ok(());
            }
            Self::queue_change(&mut s, &url);
        }
        self.drain();
        Ok(())
    }

    fn do_subscribe(&self, url: Url, listener: SharedListener) -> RegistryResult<()> {
        {
            let mut s = self.state.lock();
            self.check(&s)?;
            if !s
                .subscribers
                .iter()
                .any(|(u, l)| *u == url && same_listener(l, &listener))
            {
                s.subscribers.push((url.clone(), listener.clone()));
            }
            let lists: Vec<_> = categories(&url)
                .into_iter()
                .map(|c| (listener.clone(), Self::list(&s.registered, &url, c)))
                .collect();
            s.queue.extend(lists);
        }
        self.drain();
        Ok(())
    }
}

impl Registry for MemoryRegistry {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        !self.state.lock().destroyed
    }

    fn register(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move { self.do_register(url) })
    }

    fn unregister(&self, url: Url) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move { self.do_unregister(url) })
    }

    fn subscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move { self.do_subscribe(url, listener) })
    }

    fn unsubscribe(&self, url: Url, listener: SharedListener) -> BoxFuture<'_, RegistryResult<()>> {
        Box::pin(async move {
            let mut s = self.state.lock();
            s.subscribers
                .retain(|(u, l)| !(*u == url && same_listener(l, &listener)));
            Ok(())
        })
    }

    fn lookup(&self, url: Url) -> BoxFuture<'_, RegistryResult<Vec<Url>>> {
        Box::pin(async move {
            let s = self.state.lock();
            self.check(&s)?;
            Ok(s.registered
                .iter()
                .filter(|u| is_match(&url, u))
                .cloned()
                .collect())
        })
    }

    fn destroy(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut s = self.state.lock();
            s.destroyed = true;
            s.registered.clear();
            s.subscribers.clear();
            s.queue.clear();
        })
    }
}

#[cfg(test)]
mod tests;
