//! Live override rules for one exported service, from the config center (Java's
//! `RegistryProtocol.ProviderConfigurationListener`, `ServiceConfigurationListener` and
//! `OverrideListener.doOverrideIfNecessary`).
//!
//! The exported service listens to `{app}.configurators` and
//! `{interface}:{version}:{group}.configurators` (group `dubbo`). The provider URL as
//! exported is re-shaped by the application's rules, then the service's (so service
//! scope wins), before it is first registered; after every change the new URL replaces
//! the registered one (unregister the old, register the new: Java's `reExport`), and
//! withdrawing every rule registers the exported URL again.
//!
//! Only rules meant for providers apply, as in Java's `AbstractConfigurator`
//! ([`RuleSide::Provider`]): a `configVersion` rule with `side: provider`, whose host
//! (`addresses`) is `0.0.0.0` or this provider's, whose `providerAddresses` (when
//! given) name this provider, whose service is `*` or this service's, whose
//! `application` (when given) is the provider's, and whose v3.0 `match` holds. A
//! legacy rule (no `configVersion`) applies when its port is this provider's, or when
//! it has no port and its host is `0.0.0.0`.
//!
//! A rule `disabled: true` (Dubbo Admin's "disable provider") is applied like any
//! other: the provider stays registered with `disabled=true`, and consumers (Java's
//! `RegistryDirectory.toInvokers`, Rubbo's subscription) leave it out.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_cluster::Configurators;
#[cfg(test)]
use rubbo_cluster::configurator::Configurator;
use rubbo_cluster::configurator::RuleSide;
use rubbo_common::Url;
use rubbo_common::keys;
use rubbo_registry::{
    CONFIGURATORS_SUFFIX, DEFAULT_GROUP, SharedConfigListener, SharedDynamicConfiguration, rule_key,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::exporter::ServerExport;
use super::governance::Target;
use super::registration::Registration;

/// How long to wait before registering again after a re-registration failed (Java's
/// `DEFAULT_REGISTRY_RETRY_PERIOD`).
const RETRY_PERIOD: Duration = Duration::from_secs(5);

/// The override rules of one exported service, by scope.
#[derive(Debug, Clone, Default)]
struct ProviderSets {
    app: Arc<Configurators>,
    service: Arc<Configurators>,
}

impl ProviderSets {
    /// `origin` re-shaped by the rules meant for it: the application's, then the
    /// service's.
    fn configure(&self, origin: &Url) -> Url {
        let url = self.app.configure(origin, RuleSide::Provider);
        self.service.configure(&url, RuleSide::Provider)
    }
}

/// Whether `rule` is meant for the provider `provider` (see the [module docs](self)).
#[cfg(test)]
fn applies_to_provider(rule: &Configurator, provider: &Url) -> bool {
    rule.matches(provider, RuleSide::Provider)
}

/// The config center listeners of one exported service and the task re-registering
/// it; [`close`](Self::close) (or dropping) ends both.
pub(super) struct ProviderRules {
    cc: SharedDynamicConfiguration,
    listening: Mutex<Vec<(String, SharedConfigListener)>>,
    sets: ProviderSets,
    changes: Mutex<Option<mpsc::UnboundedReceiver<()>>>,
    token: CancellationToken,
}

impl fmt::Debug for ProviderRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self
            .listening
            .lock()
            .iter()
            .map(|(k, _)| k.clone())
            .collect();
        f.debug_struct("ProviderRules")
            .field("keys", &keys)
            .finish()
    }
}

impl ProviderRules {
    /// Listens to the rule keys of `provider` and reads what they hold now, so
    /// [`configure`](Self::configure) gives the URL to register first.
    pub(super) async fn start(cc: SharedDynamicConfiguration, provider: &Url) -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel::<()>();
        let this = Arc::new(ProviderRules {
            cc,
            listening: Mutex::new(Vec::new()),
            sets: ProviderSets::default(),
            changes: Mutex::new(Some(rx)),
            token: CancellationToken::new(),
        });
        let changed: super::governance::Changed = Arc::new(move || {
            let _ = tx.send(());
        });
        let mut keys = Vec::new();
        if let Some(app) = provider
            .get_param(keys::APPLICATION_KEY)
            .filter(|a| !a.is_empty())
        {
            keys.push((
                format!("{app}{CONFIGURATORS_SUFFIX}"),
                Target::Overrides(this.sets.app.clone(), changed.clone()),
            ));
        }
        keys.push((
            format!("{}{CONFIGURATORS_SUFFIX}", rule_key(provider)),
            Target::Overrides(this.sets.service.clone(), changed),
        ));
        for (key, target) in keys {
            let listener = target.listen(&this.cc, &key).await;
            this.listening.lock().push((key, listener));
        }
        this
    }

    /// `origin` re-shaped by the rules in force now.
    pub(super) fn configure(&self, origin: &Url) -> Url {
        self.sets.configure(origin)
    }

    /// Spawns the task that re-registers `registration` after every rule change (and
    /// first exports `server` again when the change [needs
    /// it](super::exporter::needs_reexport)), until [`close`](Self::close). Call once.
    pub(super) fn follow(
        self: &Arc<Self>,
        registration: Arc<Registration>,
        server: Option<Arc<ServerExport>>,
    ) {
        let Some(mut rx) = self.changes.lock().take() else {
            return;
        };
        let this = self.clone();
        tokio::spawn(async move {
            let mut retry = false;
            loop {
                let wait = async {
                    if retry {
                        tokio::time::sleep(RETRY_PERIOD).await;
                        Some(())
                    } else {
                        rx.recv().await
                    }
                };
                tokio::select! {
                    biased;
                    () = this.token.cancelled() => break,
                    got = wait => if got.is_none() { break },
                }
                // Several changes in a row: one re-registration, with the last rules.
                while rx.try_recv().is_ok() {}
                let url = this.configure(registration.origin());
                retry = false;
                if let Some(server) = &server {
                    if let Err(e) = server.reexport_if_needed(&url).await {
                        warn!(provider = %registration.origin().address(), error = %e, "exporting the provider again failed; it serves with its previous URL");
                    }
                }
                // Unexported while re-exporting: register nothing again.
                if this.token.is_cancelled() {
                    break;
                }
                match registration.reexport(url).await {
                    Ok(changed) => {
                        debug!(provider = %registration.origin().address(), changed, "override rules applied to the provider");
                    }
                    Err(e) => {
                        warn!(provider = %registration.origin().address(), error = %e, "re-registering the re-shaped provider URL failed; retrying");
                        retry = true;
                    }
                }
                if retry {
                    if let Err(e) = registration.set_registered(true).await {
                        debug!(error = %e, "registering again failed");
                    } else {
                        retry = false;
                    }
                }
            }
        });
    }

    /// Removes every listener and ends the task.
    pub(super) fn close(&self) {
        self.token.cancel();
        for (key, l) in self.listening.lock().drain(..) {
            self.cc.remove_listener(&key, DEFAULT_GROUP, &l);
        }
    }
}

impl Drop for ProviderRules {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Configurator {
        Configurator::from_url(&Url::parse(text).unwrap()).unwrap()
    }

    fn provider() -> Url {
        Url::parse("dubbo://10.0.0.1:20880/a.B?interface=a.B&version=1.0.0&application=p&side=provider&weight=100").unwrap()
    }

    #[test]
    fn only_provider_side_rules_for_this_service_and_address_apply() {
        let p = provider();
        let ok = "override://10.0.0.1:20880/a.B?version=1.0.0&category=dynamicconfigurators&side=provider&weight=200&providerAddresses=10.0.0.1:20880&enabled=true&configVersion=v3.0";
        assert!(applies_to_provider(&rule(ok), &p));
        let consumer_side = ok.replace("side=provider", "side=consumer");
        assert!(!applies_to_provider(&rule(&consumer_side), &p));
        let other_address = ok.replace(
            "providerAddresses=10.0.0.1:20880",
            "providerAddresses=10.0.0.2:20880",
        );
        assert!(!applies_to_provider(&rule(&other_address), &p));
        let other_service = ok.replace("/a.B?", "/c.D?");
        assert!(!applies_to_provider(&rule(&other_service), &p));
        let any_service = "override://0.0.0.0/*?category=appdynamicconfigurators&side=provider&weight=7&application=p&enabled=true&configVersion=v3.0&providerAddresses=0.0.0.0";
        assert!(applies_to_provider(&rule(any_service), &p));
        // Legacy rules: a port names a provider; no port is for consumers unless 0.0.0.0.
        assert!(applies_to_provider(
            &rule("override://10.0.0.1:20880/a.B?weight=3"),
            &p
        ));
        assert!(!applies_to_provider(
            &rule("override://10.0.0.9/a.B?weight=3"),
            &p
        ));
        assert!(applies_to_provider(
            &rule("override://0.0.0.0/a.B?weight=3"),
            &p
        ));
    }

    #[test]
    fn service_scope_beats_application_scope_and_withdrawing_restores() {
        let p = provider();
        let sets = ProviderSets::default();
        sets.app.replace_urls(&[Url::parse("override://0.0.0.0/*?category=appdynamicconfigurators&side=provider&weight=7&timeout=9&application=p&enabled=true&configVersion=v3.0").unwrap()]);
        sets.service.replace_urls(&[Url::parse("override://0.0.0.0/a.B?version=1.0.0&category=dynamicconfigurators&side=provider&weight=200&disabled=true&enabled=true&configVersion=v3.0").unwrap()]);
        let u = sets.configure(&p);
        assert_eq!(u.get_param("weight"), Some("200"));
        assert_eq!(u.get_param("timeout"), Some("9"));
        assert_eq!(u.get_param("disabled"), Some("true"));
        assert_eq!(u.get_param("category"), None);
        sets.service.replace(Vec::new());
        assert_eq!(sets.configure(&p).get_param("weight"), Some("7"));
        sets.app.replace(Vec::new());
        assert_eq!(sets.configure(&p), p);
    }
}
