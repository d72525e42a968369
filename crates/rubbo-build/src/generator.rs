//! The service generator: Rust source for one proto service (server trait, client,
//! server dispatcher, service descriptor), naming only `::rubbo::codegen::*`.

use std::fmt::Write as _;
use std::path::PathBuf;

use prost_build::{Method, Service, ServiceGenerator};

/// What to generate for each service.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) client: bool,
    pub(crate) server: bool,
    /// Where prost-build writes the encoded `FileDescriptorSet` of the compiled
    /// protos, which each service descriptor embeds (`None`: an empty one).
    pub(crate) descriptor_set: Option<PathBuf>,
}

/// prost-build's hook: called once per service of each compiled proto.
#[derive(Debug)]
pub(crate) struct Generator {
    pub(crate) options: Options,
}

impl ServiceGenerator for Generator {
    fn generate(&mut self, service: Service, buf: &mut String) {
        buf.push_str(&generate(&service, &self.options));
    }
}

const CG: &str = "::rubbo::codegen";

/// The wire name of a service: `package.Service`, or `Service` without a package.
pub(crate) fn interface_name(service: &Service) -> String {
    if service.package.is_empty() {
        service.proto_name.clone()
    } else {
        format!("{}.{}", service.package, service.proto_name)
    }
}

fn is_unary(m: &Method) -> bool {
    !m.client_streaming && !m.server_streaming
}

fn kind(m: &Method) -> &'static str {
    match (m.client_streaming, m.server_streaming) {
        (true, true) => "bidirectional streaming",
        (true, false) => "client streaming",
        (false, true) => "server streaming",
        (false, false) => "unary",
    }
}

/// Escapes `s` as the inside of a Rust string literal.
fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// The `MethodDescriptor::stream` value of `m`.
fn stream_kind(m: &Method) -> &'static str {
    match (m.client_streaming, m.server_streaming) {
        (true, true) => "Some(::rubbo::codegen::StreamKind::Bidi)",
        (true, false) => "Some(::rubbo::codegen::StreamKind::Client)",
        (false, true) => "Some(::rubbo::codegen::StreamKind::Server)",
        (false, false) => "None",
    }
}

/// The server trait's request type of `m`: the message, or a stream of them.
fn server_input(m: &Method) -> String {
    if m.client_streaming {
        format!("{CG}::Streaming<{}>", m.input_type)
    } else {
        m.input_type.clone()
    }
}

/// The server trait's reply type of `m`: the message, or a stream of them.
fn server_output(m: &Method) -> String {
    if m.server_streaming {
        format!("{CG}::Outbound<{}>", m.output_type)
    } else {
        m.output_type.clone()
    }
}

/// The Rust source of `service`.
pub(crate) fn generate(service: &Service, options: &Options) -> String {
    let interface = interface_name(service);
    let name = &service.name;
    let client = format!("{name}Client");
    let server = format!("{name}Server");
    let methods: Vec<&Method> = service.methods.iter().collect();
    let mut out = String::new();

    // The server trait, implemented by the provider (and, for its unary rpcs, by the
    // client).
    let _ = writeln!(out);
    service.comments.append_with_indent(0, &mut out);
    let _ = writeln!(
        out,
        "/// The proto service `{interface}` (Triple, IDL mode): each rpc is an async \
         method taking the request message (a [`{CG}::Streaming`] of them for a \
         client or bidirectional streaming rpc) and returning the reply (an \
         [`{CG}::Outbound`] stream of them for a server or bidirectional streaming \
         rpc) or a gRPC status. A streaming rpc left unimplemented answers \
         `UNIMPLEMENTED`."
    );
    if options.server {
        let _ = writeln!(out, "///\n/// Implement it and export [`{server}`].");
    }
    if options.client {
        let _ = writeln!(
            out,
            "///\n/// [`{client}`] calls a provider: its unary rpcs through this trait, its \
             streaming rpcs as its own methods of the same names."
        );
    }
    let _ = writeln!(out, "pub trait {name} {{");
    for m in &methods {
        m.comments.append_with_indent(1, &mut out);
        if !m.comments.leading.is_empty() || !m.comments.trailing.is_empty() {
            let _ = writeln!(out, "    ///");
        }
        let signature = format!(
            "    /// The {kind} rpc `{proto}` (`/{interface}/{proto}`).\n    \
             fn {rust}(&self, request: {input}) -> impl {CG}::StdFuture<Output = \
             {CG}::Result<{output}, {CG}::Status>> + {CG}::Send",
            kind = kind(m),
            proto = m.proto_name,
            rust = m.name,
            input = server_input(m),
            output = server_output(m),
        );
        if is_unary(m) {
            let _ = writeln!(out, "{signature};");
        } else {
            let _ = writeln!(
                out,
                "{signature} {{\n        let _ = request;\n        async {{\n            \
                 {CG}::Err({CG}::Status::unimplemented({msg}))\n        }}\n    }}",
                msg = lit(&format!("/{interface}/{} is not implemented", m.proto_name)),
            );
        }
    }
    let _ = writeln!(out, "}}");

    write_client(&mut out, service, &interface, &client, &methods, options);
    if options.server {
        write_server(&mut out, name, &client, &server, &methods);
    }
    out
}

/// The client struct: the service descriptor's home (so it exists even with no client
/// methods generated), with typed methods when `methods` is set.
fn write_client(
    out: &mut String,
    service: &Service,
    interface: &str,
    client: &str,
    all: &[&Method],
    options: &Options,
) {
    let methods = options.client;
    let name = &service.name;
    let descriptor_set = match &options.descriptor_set {
        Some(path) => format!("include_bytes!({})", lit(&path.to_string_lossy())),
        None => "&[]".to_owned(),
    };
    let table: String = all
        .iter()
        .map(|m| {
            format!(
                "        {CG}::MethodDescriptor {{ name: {wire}, parameter_types: \"\", \
                 rust_name: {rust}, parameter_count: 1, idl: true, stream: {CG}::{stream} }},\n",
                wire = lit(&m.proto_name),
                rust = lit(&m.name),
                stream = stream_kind(m),
            )
        })
        .collect();
    let _ = write!(
        out,
        r#"
/// Consumer stub of the proto service `{interface}`: each method sends its request
/// message bare (Triple's IDL mode) to `/{interface}/{{rpc}}` through the invoker given
/// to [`{client}::new`].
#[derive({CG}::Clone, {CG}::Debug)]
pub struct {client} {{
    inner: {CG}::Client,
}}

impl {client} {{
    /// The service name on the wire: the proto `package.Service`.
    pub const INTERFACE: &'static str = {iface_lit};
    /// The rpcs (wire name, Rust name, streaming shape), in proto order.
    pub const METHODS: &'static [{CG}::MethodDescriptor] = &[
{table}    ];
    /// The encoded protobuf `FileDescriptorSet` of the protos this service was
    /// generated from (imports included): its schema, for server reflection and JSON.
    pub const FILE_DESCRIPTOR_SET: &'static [u8] = {descriptor_set};
    /// The whole service definition.
    pub const SERVICE: {CG}::ServiceDescriptor = {CG}::ServiceDescriptor {{
        interface: Self::INTERFACE,
        version: "",
        group: "",
        methods: Self::METHODS,
        file_descriptor_set: Self::FILE_DESCRIPTOR_SET,
    }};

    /// A client calling through `invoker` (from `Rubbo::refer_url` or `refer`, or a
    /// server's invoker).
    pub fn new(invoker: {CG}::BoxInvoker) -> Self {{
        Self {{
            inner: {CG}::Client::new(&Self::SERVICE, invoker),
        }}
    }}

    /// This client with one more attachment sent with every call (as a header).
    pub fn with_attachment(
        self,
        key: impl {CG}::Into<{CG}::String>,
        value: impl {CG}::Into<{CG}::Value>,
    ) -> Self {{
        Self {{
            inner: self.inner.with_attachment(key, value),
        }}
    }}

    /// This client with more attachments sent with every call.
    pub fn with_attachments(self, attachments: {CG}::Attachments) -> Self {{
        Self {{
            inner: self.inner.with_attachments(attachments),
        }}
    }}

    /// The invoker calls go through.
    pub fn invoker(&self) -> &{CG}::BoxInvoker {{
        self.inner.invoker()
    }}
}}
"#,
        iface_lit = lit(interface),
    );
    if !methods {
        return;
    }
    let _ = writeln!(out, "\nimpl {client} {{");
    for (i, m) in all.iter().enumerate().filter(|(_, m)| !is_unary(m)) {
        let (input, output, call) = match (m.client_streaming, m.server_streaming) {
            (false, _) => (
                m.input_type.clone(),
                format!("{CG}::Streaming<{}>", m.output_type),
                format!(
                    "server_streaming::<{}, {}>({i}, &request)",
                    m.input_type, m.output_type
                ),
            ),
            (true, false) => (
                format!("{CG}::Outbound<{}>", m.input_type),
                m.output_type.clone(),
                format!(
                    "client_streaming::<{}, {}>({i}, request)",
                    m.input_type, m.output_type
                ),
            ),
            (true, true) => (
                format!("{CG}::Outbound<{}>", m.input_type),
                format!("{CG}::Streaming<{}>", m.output_type),
                format!(
                    "bidi_streaming::<{}, {}>({i}, request)",
                    m.input_type, m.output_type
                ),
            ),
        };
        let _ = writeln!(
            out,
            "    /// Calls the {kind} rpc `{proto}`: the replies as they come, decoded as \
             they are read (dropping them cancels the call).\n    \
             pub fn {rust}(&self, request: {input}) -> impl {CG}::StdFuture<Output = \
             {CG}::Result<{output}, {CG}::Status>> + {CG}::Send + 'static {{\n        \
             self.inner.{call}\n    }}",
            kind = kind(m),
            proto = m.proto_name,
            rust = m.name,
        );
    }
    let _ = writeln!(out, "}}");
    let _ = writeln!(out, "\nimpl {name} for {client} {{");
    for (i, m) in all.iter().enumerate().filter(|(_, m)| is_unary(m)) {
        let _ = writeln!(
            out,
            "    fn {rust}(&self, request: {input}) -> impl {CG}::StdFuture<Output = \
             {CG}::Result<{output}, {CG}::Status>> + {CG}::Send {{\n        \
             self.inner.unary::<{input}, {output}>({i}, &request)\n    }}",
            rust = m.name,
            input = m.input_type,
            output = m.output_type,
        );
    }
    let _ = writeln!(out, "}}");
}

/// The server: the dispatcher the builder exports (`Rubbo::export`).
fn write_server(out: &mut String, name: &str, client: &str, server: &str, all: &[&Method]) {
    let arms: String = all
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let serve = match (m.client_streaming, m.server_streaming) {
                (false, false) => "serve_unary",
                (false, true) => "serve_server_streaming",
                (true, false) => "serve_client_streaming",
                (true, true) => "serve_bidi_streaming",
            };
            format!(
                "            {CG}::Some({i}) => {{\n                \
                 let service = {CG}::StdArc::clone(&self.inner);\n                \
                 {CG}::{serve}(invocation, move |request: {input}| async move {{\n                    \
                 <RubboImpl as {name}>::{rust}(&*service, request).await\n                \
                 }})\n            }}\n",
                input = server_input(m),
                rust = m.name,
            )
        })
        .collect();
    let _ = write!(
        out,
        r#"
/// Provider dispatcher of [`{name}`]: routes each call by rpc name to the
/// implementation. Export it with `Rubbo::export({server}::new(Arc::new(impl)))`.
pub struct {server}<RubboImpl> {{
    inner: {CG}::StdArc<RubboImpl>,
}}

impl<RubboImpl> {CG}::Clone for {server}<RubboImpl> {{
    fn clone(&self) -> Self {{
        Self {{
            inner: {CG}::StdArc::clone(&self.inner),
        }}
    }}
}}

impl<RubboImpl> {CG}::Debug for {server}<RubboImpl> {{
    fn fmt(&self, f: &mut {CG}::Formatter<'_>) -> {CG}::FmtResult {{
        f.debug_struct({server_lit})
            .field("interface", &{client}::INTERFACE)
            .finish_non_exhaustive()
    }}
}}

impl<RubboImpl> {server}<RubboImpl>
where
    RubboImpl: {name} + {CG}::Send + {CG}::Sync + 'static,
{{
    /// The service definition (same as the client's).
    pub const SERVICE: {CG}::ServiceDescriptor = {client}::SERVICE;

    /// Serves `service`.
    pub fn new(service: {CG}::StdArc<RubboImpl>) -> Self {{
        Self {{ inner: service }}
    }}

    /// The implementation.
    pub fn get_ref(&self) -> &RubboImpl {{
        &self.inner
    }}

    /// The exported invoker: dispatches each invocation to the implementation; its
    /// `url()` is `url`.
    pub fn into_invoker(self, url: {CG}::Url) -> {CG}::BoxInvoker {{
        {CG}::ServerInvoker::new(self, url).boxed()
    }}
}}

impl<RubboImpl> {CG}::Dispatch for {server}<RubboImpl>
where
    RubboImpl: {name} + {CG}::Send + {CG}::Sync + 'static,
{{
    fn service(&self) -> &'static {CG}::ServiceDescriptor {{
        &{client}::SERVICE
    }}

    fn dispatch(&self, invocation: {CG}::Invocation) -> {CG}::InvokeFuture {{
        let index = {client}::METHODS
            .iter()
            .position(|m| m.name == invocation.method());
        match index {{
{arms}            _ => {CG}::fail({client}::SERVICE.method_not_found(&invocation)),
        }}
    }}
}}
"#,
        server_lit = lit(server),
    );
}

#[cfg(test)]
mod tests {
    use prost_build::Comments;

    use super::*;

    fn method(proto: &str, client_streaming: bool, server_streaming: bool) -> Method {
        Method {
            name: proto.to_lowercase(),
            proto_name: proto.to_owned(),
            comments: Comments::default(),
            input_type: "Req".to_owned(),
            output_type: "Rep".to_owned(),
            input_proto_type: ".p.Req".to_owned(),
            output_proto_type: ".p.Rep".to_owned(),
            options: Default::default(),
            client_streaming,
            server_streaming,
        }
    }

    fn service(package: &str) -> Service {
        Service {
            name: "Greeter".to_owned(),
            proto_name: "Greeter".to_owned(),
            package: package.to_owned(),
            comments: Comments::default(),
            methods: vec![method("Greet", false, false), method("Watch", false, true)],
            options: Default::default(),
        }
    }

    #[test]
    fn the_interface_is_the_proto_package_and_service() {
        assert_eq!(interface_name(&service("a.b")), "a.b.Greeter");
        assert_eq!(interface_name(&service("")), "Greeter");
    }

    #[test]
    fn every_rpc_is_generated_with_its_streaming_shape() {
        let all = Options {
            client: true,
            server: true,
            descriptor_set: Some(PathBuf::from("/out/set.bin")),
        };
        let code = generate(&service("a.b"), &all);
        assert!(
            code.contains(
                "pub const FILE_DESCRIPTOR_SET: &'static [u8] = include_bytes!(\"/out/set.bin\");"
            ),
            "{code}"
        );
        assert!(code.contains("file_descriptor_set: Self::FILE_DESCRIPTOR_SET,"));
        assert!(code.contains("pub const INTERFACE: &'static str = \"a.b.Greeter\";"));
        assert!(code.contains("name: \"Greet\""), "{code}");
        assert!(code.contains("fn greet(&self, request: Req)"));
        assert!(
            code.contains("fn watch(&self, request: Req) -> impl ::rubbo::codegen::StdFuture<Output = ::rubbo::codegen::Result<::rubbo::codegen::Outbound<Rep>"),
            "{code}"
        );
        assert!(
            code.contains("stream: ::rubbo::codegen::Some(::rubbo::codegen::StreamKind::Server)")
        );
        assert!(code.contains("pub fn watch(&self, request: Req) -> impl ::rubbo::codegen::StdFuture<Output = ::rubbo::codegen::Result<::rubbo::codegen::Streaming<Rep>"));
        assert!(code.contains("::rubbo::codegen::serve_server_streaming(invocation"));
        assert!(code.contains("impl<RubboImpl> ::rubbo::codegen::Dispatch for GreeterServer"));
        // Only `::rubbo::codegen` paths and the message types.
        assert!(!code.contains("::std::") && !code.contains("::prost::"));
        let client_only = generate(
            &service("a.b"),
            &Options {
                client: true,
                server: false,
                descriptor_set: None,
            },
        );
        assert!(!client_only.contains("GreeterServer"));
        assert!(client_only.contains("pub const FILE_DESCRIPTOR_SET: &'static [u8] = &[];"));
    }
}
