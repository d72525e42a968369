//! [`GenericClient`]: calls any method of a remote service by name, with dynamic
//! [`Value`]s and no generated code (Java's `GenericService.$invoke`).

use std::sync::Arc;

use rubbo_common::descriptor::{ECHO_DESC, GENERIC_DESC};
use rubbo_common::{
    Arguments, BoxInvoker, ECHO_METHOD, GENERIC_METHOD, Invocation, Outcome, Payload, RpcError,
    RpcResult, Value,
};

use crate::Rubbo;
use crate::bootstrap::ReferTarget;

/// A client for any service, called by method name with Java parameter type names and
/// [`Value`] arguments: `$invoke(method, parameterTypes, args)` as Java's
/// `GenericService` sends it. A POJO argument is a [`Value::Map`] with its Java class
/// under `class` (or a [`Value::Object`]); a POJO result comes back as a map with its
/// class under `class`, as the provider's `GenericFilter` generalizes it.
///
/// Get one from [`Rubbo::refer_generic`] / [`Rubbo::refer_generic_url`] (references
/// with `generic=true`, so the `genericimpl` filter tells the provider), or wrap any
/// invoker of the service with [`GenericClient::new`].
///
/// A business exception comes back as an [`RpcError`] of kind
/// [`Biz`](crate::ErrorKind::Biz) with the class and message the provider's method
/// threw; the `GenericException` Java wraps it in stays in
/// [`BizException::value`](crate::BizException).
///
/// ```
/// use std::sync::Arc;
/// use rubbo::{Filter, GenericClient, RpcError, Url, Value};
///
/// #[rubbo::service(interface = "org.example.Greeter")]
/// pub trait Greeter {
///     async fn hello(&self, name: String) -> Result<String, RpcError>;
/// }
/// struct Impl;
/// impl Greeter for Impl {
///     async fn hello(&self, name: String) -> Result<String, RpcError> {
///         Ok(format!("hello {name}"))
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// // Any invoker of the service: here the provider itself, behind the generic filter.
/// let provider = GreeterServer::new(Arc::new(Impl)).into_invoker(Url::new("local", "127.0.0.1", 0));
/// let invoker = rubbo::builtin_filters().get("generic")?.layer(provider);
/// let client = GenericClient::new(invoker);
/// let said = client.invoke("hello", &["java.lang.String"], vec![Value::from("world")]).await?;
/// assert_eq!(said.as_str(), Some("hello world"));
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct GenericClient {
    invoker: BoxInvoker,
    interface: Arc<str>,
    version: Option<Arc<str>>,
    group: Option<Arc<str>>,
}

impl GenericClient {
    /// A client calling through `invoker`; the interface, version and group come from
    /// its URL (`interface` or the path, `version`, `group`).
    pub fn new(invoker: BoxInvoker) -> Self {
        let url = invoker.url();
        let interface: Arc<str> = url.service_interface().unwrap_or_default().into();
        let version = url.version().filter(|v| !v.is_empty()).map(Arc::from);
        let group = url.group().filter(|g| !g.is_empty()).map(Arc::from);
        GenericClient {
            invoker,
            interface,
            version,
            group,
        }
    }

    /// The Java interface called.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The invoker calls go through.
    pub fn get_ref(&self) -> &BoxInvoker {
        &self.invoker
    }

    /// The invoker calls go through.
    pub fn into_inner(self) -> BoxInvoker {
        self.invoker
    }

    fn invocation(&self, method: &str, desc: &str, args: Vec<Value>) -> Invocation {
        let mut inv = Invocation::new(self.interface.clone(), method)
            .with_parameter_types(desc)
            .with_arguments(Arguments::Values(args));
        if let Some(v) = &self.version {
            inv = inv.with_version(v.clone());
        }
        if let Some(g) = &self.group {
            inv = inv.with_group(g.clone());
        }
        inv
    }

    /// The `$invoke` invocation of `method` (Java's `GenericService.$invoke(method,
    /// parameterTypes, args)`): the parameter types as a `String[]`, the arguments as
    /// an `Object[]`.
    pub fn invocation_of(
        &self,
        method: &str,
        parameter_types: &[&str],
        args: Vec<Value>,
    ) -> Invocation {
        self.invocation(
            GENERIC_METHOD,
            GENERIC_DESC,
            rubbo_common::generic_arguments(method, parameter_types, args),
        )
    }

    /// Calls `method`, the overload with these parameter types (Java names as
    /// `Class.getName()` or source spells them: `int`, `java.lang.String`,
    /// `org.example.User`, `java.lang.String[]`), with `args`. `null` and `void` come
    /// back as [`Value::Null`].
    pub async fn invoke(
        &self,
        method: &str,
        parameter_types: &[&str],
        args: Vec<Value>,
    ) -> Result<Value, RpcError> {
        match self.invoke_payload(method, parameter_types, args).await? {
            Payload::Null => Ok(Value::Null),
            p => p.to_value(),
        }
    }

    /// [`invoke`](Self::invoke), the result left as it came (still encoded when it
    /// came off the wire), for callers that decode it themselves.
    pub async fn invoke_payload(
        &self,
        method: &str,
        parameter_types: &[&str],
        args: Vec<Value>,
    ) -> Result<Payload, RpcError> {
        let inv = self.invocation_of(method, parameter_types, args);
        result_payload(self.invoker.invoke(inv).await)
    }

    /// `$echo(value)` (Java's `EchoService`): the provider answers `value` without
    /// reaching the service, to check it is alive.
    pub async fn echo(&self, value: Value) -> Result<Value, RpcError> {
        let inv = self.invocation(ECHO_METHOD, ECHO_DESC, vec![value]);
        match result_payload(self.invoker.invoke(inv).await)? {
            Payload::Null => Ok(Value::Null),
            p => p.to_value(),
        }
    }
}

/// A call's payload, its business exception as an error with the original class.
fn result_payload(result: Result<RpcResult, RpcError>) -> Result<Payload, RpcError> {
    match result?.into_parts().0 {
        Outcome::Value(p) => Ok(p),
        Outcome::Exception(e) => Err(RpcError::from_biz(e.unwrap_generic())),
    }
}

impl Rubbo {
    /// A [`GenericClient`] for `interface` (with `version` and `group`, `""` when
    /// unset) through the registries, without generated code: the reference has the
    /// parameters [`refer`](Self::refer) gives, minus `methods`, plus `generic=true`
    /// (as Java's generic `ReferenceConfig`).
    pub async fn refer_generic(
        &self,
        interface: &str,
        version: &str,
        group: &str,
    ) -> Result<GenericClient, RpcError> {
        let target = ReferTarget {
            interface,
            version,
            group,
            methods: None,
        };
        Ok(GenericClient::new(self.refer_target(&target).await?))
    }

    /// [`refer_generic`](Self::refer_generic) at fixed provider addresses
    /// (`dubbo://host:port`, several separated by `;`), bypassing registries, as
    /// [`refer_url`](Self::refer_url).
    pub async fn refer_generic_url(
        &self,
        address: &str,
        interface: &str,
        version: &str,
        group: &str,
    ) -> Result<GenericClient, RpcError> {
        let target = ReferTarget {
            interface,
            version,
            group,
            methods: None,
        };
        Ok(GenericClient::new(
            self.refer_url_target(&target, address).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rubbo_common::{
        BizException, GENERIC_EXCEPTION_CLASS_FIELD, GENERIC_EXCEPTION_MESSAGE_FIELD,
    };
    use rubbo_filter::GENERIC_EXCEPTION;
    use rubbo_hessian2::Object;

    #[test]
    fn a_wrapped_exception_is_unwrapped_and_kept() {
        let wrapper = Value::Object(
            Object::new(GENERIC_EXCEPTION)
                .with_field(GENERIC_EXCEPTION_CLASS_FIELD, "org.example.NotFound")
                .with_field(GENERIC_EXCEPTION_MESSAGE_FIELD, "no user 7"),
        );
        let e = BizException {
            class: GENERIC_EXCEPTION.into(),
            message: Some("org.example.NotFound: no user 7".into()),
            value: wrapper.clone(),
        }
        .unwrap_generic();
        assert_eq!(e.class, "org.example.NotFound");
        assert_eq!(e.message.as_deref(), Some("no user 7"));
        assert_eq!(e.value, wrapper);
        let plain = BizException::new("org.example.Other", Some("x".into()));
        assert_eq!(plain.clone().unwrap_generic(), plain);
    }
}
