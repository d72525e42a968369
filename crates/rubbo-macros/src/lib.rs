//! Procedural macros for Rubbo. Use them through the `rubbo` crate
//! (`#[rubbo::service]`, `#[derive(rubbo::JavaType)]`): the generated code names
//! `::rubbo::codegen`.

mod expand;
mod java_type;
mod model;

use proc_macro::TokenStream;
use syn::{DeriveInput, ItemTrait, parse_macro_input};

/// Turns a Rust trait into a Dubbo service definition: the trait itself, a consumer
/// stub `<Trait>Client` and a provider dispatcher `<Trait>Server`.
///
/// ```ignore
/// #[rubbo::service(interface = "org.rubbo.interop.InteropService", version = "1.0.0")]
/// pub trait InteropService {
///     async fn echo(&self, s: Option<String>) -> Result<Option<String>, rubbo::RpcError>;
///     async fn echo_int(&self, v: i32) -> Result<i32, rubbo::RpcError>; // wire name "echoInt"
///     #[rubbo(name = "listUsers")]
///     async fn users(&self, n: i32) -> Result<Vec<User>, rubbo::RpcError>;
///     async fn echo_user(
///         &self,
///         #[rubbo(java = "Lorg/rubbo/interop/User;")] u: Option<User>,
///     ) -> Result<Option<User>, rubbo::RpcError>;
///     async fn ping(&self) -> Result<(), rubbo::RpcError>;
/// }
/// ```
///
/// # Arguments
///
/// `interface = ".."` (the Java interface name, required), `version = ".."` and
/// `group = ".."` (optional).
///
/// # Methods
///
/// Every method is `async fn name(&self, params..) -> Result<T, rubbo::RpcError>`
/// (no generics, no `&mut`). In the emitted trait it becomes
/// `fn name(&self, params..) -> impl Future<Output = Result<T, RpcError>> + Send`, so
/// servers can run the futures on any tokio worker; implement it with a plain
/// `async fn` (its future must be `Send`). A default body is allowed.
///
/// - The wire name is the Rust name in lowerCamelCase (`echo_int` is `echoInt`), or
///   `#[rubbo(name = "..")]`. Two methods may share a wire name (Java overloads) if
///   their descriptors differ; equal name and descriptors fail to compile.
/// - Each parameter's JVM descriptor is `<T as rubbo::JavaType>::DESCRIPTOR`
///   (computed at compile time), or `#[rubbo(java = "..")]` on the parameter, which
///   then travels by serde alone. `&T` parameters travel as `T::Owned`.
/// - Parameters need `Serialize + DeserializeOwned + Send + Sync + 'static` (their
///   owned form); `T` needs `JavaType + DeserializeOwned + Send + Sync + 'static`.
///
/// # Streaming methods (Triple wrapper mode, Java's `StreamObserver`)
///
/// A method taking a `rubbo::stream::Streaming<A>` or returning a
/// `rubbo::stream::Outbound<R>` is a stream, with the same shapes as the streaming
/// rpcs `rubbo-build` generates (errors are `RpcError`; a gRPC `Status` converts
/// into one):
///
/// | Rust | Java | `stream-methods` |
/// |---|---|---|
/// | `async fn m(&self, req: A) -> Result<Outbound<R>, RpcError>` | `void m(A, StreamObserver<R>)` | `server` |
/// | `async fn m(&self, reqs: Streaming<A>) -> Result<R, RpcError>` | `StreamObserver<A> m(StreamObserver<R>)` | `client` |
/// | `async fn m(&self, reqs: Streaming<A>) -> Result<Outbound<R>, RpcError>` | `StreamObserver<A> m(StreamObserver<R>)` | `bidi` |
///
/// Each message is one hessian2 value in a `TripleRequestWrapper` /
/// `TripleResponseWrapper`, as Java writes it; the descriptors are Java's
/// (`ALorg/apache/dubbo/common/stream/StreamObserver;`, or the `StreamObserver`
/// alone); an error ends the stream with its gRPC status in the trailers. The
/// client implements the same trait: pass requests as a `Streaming`
/// (`Outbound::into()`, e.g. from `rubbo::stream::channel`), read replies from the
/// returned `Outbound` (a `Stream` of `Result<R, Status>`). Streams are Triple only:
/// over dubbo, the consumer refuses to send one and the provider answers `Forbidden`.
///
/// # Generated items
///
/// - `<Trait>Client`: `new(BoxInvoker)`, `with_attachment(k, v)`,
///   `with_attachments(map)`, `invoker()`, and consts `INTERFACE`, `VERSION`, `GROUP`,
///   `METHODS: &[rubbo::codegen::MethodDescriptor]`, `SERVICE`. It implements the
///   trait: each call sends an invocation with `Arguments::typed` and decodes the
///   result (a Java exception becomes an `RpcError` of kind `Biz`).
/// - `<Trait>Server<I>`: `new(Arc<I>)`, `get_ref()`, `into_invoker(url) -> BoxInvoker`,
///   const `SERVICE`. It matches the invocation's method name and descriptors, decodes
///   the arguments (typed, values or encoded bytes), runs the implementation inside
///   the provider [`context`](../rubbo/context/index.html), and answers `Ok(v)` as the
///   value (`None`/`()` as null), `Err(e)` with a business exception as that
///   exception, other errors as errors. Unknown method: `MethodNotFound` naming the
///   exported `name(descriptors)`.
#[proc_macro_attribute]
pub fn service(args: TokenStream, input: TokenStream) -> TokenStream {
    let args = parse_macro_input!(args as model::ServiceArgs);
    let item = parse_macro_input!(input as ItemTrait);
    expand::expand(args, item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `rubbo::JavaType` for a struct or enum from its Java class name:
/// `#[java(class = "org.rubbo.interop.User")]`, or else the serde rename
/// (`#[serde(rename = "org.rubbo.interop.User")]`). Its descriptor is
/// `Lorg/rubbo/interop/User;`.
#[proc_macro_derive(JavaType, attributes(java))]
pub fn derive_java_type(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    java_type::derive(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
