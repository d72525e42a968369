//! Code generation for `#[rubbo::service]`: the rewritten trait, the client, the
//! server. Generated code names only `::rubbo::codegen::*`.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemTrait, LitStr, Result, TraitItem};

use crate::model::{Method, ServiceArgs, parse_trait};

pub(crate) fn expand(args: ServiceArgs, mut item: ItemTrait) -> Result<TokenStream> {
    let methods = parse_trait(&mut item)?;
    let cg = quote!(::rubbo::codegen);
    item.items = methods
        .iter()
        .map(|m| TraitItem::Fn(rewrite(m, &cg)))
        .collect();

    let name = &item.ident;
    let vis = &item.vis;
    let client = format_ident!("{}Client", name);
    let server = format_ident!("{}Server", name);
    let interface = &args.interface;
    let empty = LitStr::new("", interface.span());
    let version = args.version.as_ref().unwrap_or(&empty);
    let group = args.group.as_ref().unwrap_or(&empty);

    let table = methods.iter().map(|m| method_descriptor(m, &cg));
    let client_fns = methods
        .iter()
        .enumerate()
        .map(|(i, m)| client_fn(i, m, &cg));
    let arms = methods
        .iter()
        .enumerate()
        .map(|(i, m)| server_arm(i, m, name, &cg));

    let client_doc = format!(
        "Consumer stub of [`{name}`]: every method builds the Dubbo invocation \
         (interface `{iface}`, its wire method name and JVM descriptors) and calls the \
         invoker given to [`{client}::new`].",
        iface = interface.value(),
    );
    let server_name = server.to_string();
    let server_doc = format!(
        "Provider dispatcher of [`{name}`]: routes an invocation to the implementation by \
         wire method name and JVM descriptors. Export it with \
         [`{server}::into_invoker`]."
    );

    Ok(quote! {
        #item

        #[doc = #client_doc]
        #[derive(#cg::Clone, #cg::Debug)]
        #vis struct #client {
            inner: #cg::Client,
        }

        impl #client {
            /// The Java interface name.
            pub const INTERFACE: &'static str = #interface;
            /// The service version (`""` when unset).
            pub const VERSION: &'static str = #version;
            /// The service group (`""` when unset).
            pub const GROUP: &'static str = #group;
            /// The exported methods (wire name, JVM descriptors, Rust name), in
            /// declaration order.
            pub const METHODS: &'static [#cg::MethodDescriptor] = &[#(#table),*];
            /// The whole service definition.
            pub const SERVICE: #cg::ServiceDescriptor = #cg::ServiceDescriptor {
                interface: Self::INTERFACE,
                version: Self::VERSION,
                group: Self::GROUP,
                methods: Self::METHODS,
                file_descriptor_set: &[],
            };

            /// A client calling through `invoker` (a protocol invoker, a cluster, or a
            /// server's invoker).
            pub fn new(invoker: #cg::BoxInvoker) -> Self {
                Self {
                    inner: #cg::Client::new(&Self::SERVICE, invoker),
                }
            }

            /// This client with one more attachment sent with every call (Dubbo's
            /// client attachments).
            pub fn with_attachment(
                self,
                key: impl #cg::Into<#cg::String>,
                value: impl #cg::Into<#cg::Value>,
            ) -> Self {
                Self {
                    inner: self.inner.with_attachment(key, value),
                }
            }

            /// This client with more attachments sent with every call.
            pub fn with_attachments(self, attachments: #cg::Attachments) -> Self {
                Self {
                    inner: self.inner.with_attachments(attachments),
                }
            }

            /// The invoker calls go through.
            pub fn invoker(&self) -> &#cg::BoxInvoker {
                self.inner.invoker()
            }
        }

        const _: () = #cg::assert_unique(#client::METHODS);

        impl #name for #client {
            #(#client_fns)*
        }

        #[doc = #server_doc]
        #vis struct #server<RubboImpl> {
            inner: #cg::StdArc<RubboImpl>,
        }

        impl<RubboImpl> #cg::Clone for #server<RubboImpl> {
            fn clone(&self) -> Self {
                Self {
                    inner: #cg::StdArc::clone(&self.inner),
                }
            }
        }

        impl<RubboImpl> #cg::Debug for #server<RubboImpl> {
            fn fmt(&self, f: &mut #cg::Formatter<'_>) -> #cg::FmtResult {
                f.debug_struct(#server_name)
                    .field("interface", &#client::INTERFACE)
                    .finish_non_exhaustive()
            }
        }

        impl<RubboImpl> #server<RubboImpl>
        where
            RubboImpl: #name + #cg::Send + #cg::Sync + 'static,
        {
            /// The service definition (same as the client's).
            pub const SERVICE: #cg::ServiceDescriptor = #client::SERVICE;

            /// Serves `service`.
            pub fn new(service: #cg::StdArc<RubboImpl>) -> Self {
                Self { inner: service }
            }

            /// The implementation.
            pub fn get_ref(&self) -> &RubboImpl {
                &self.inner
            }

            /// The exported invoker: dispatches each invocation to the implementation;
            /// its `url()` is `url`.
            pub fn into_invoker(self, url: #cg::Url) -> #cg::BoxInvoker {
                #cg::ServerInvoker::new(self, url).boxed()
            }
        }

        impl<RubboImpl> #cg::Dispatch for #server<RubboImpl>
        where
            RubboImpl: #name + #cg::Send + #cg::Sync + 'static,
        {
            fn service(&self) -> &'static #cg::ServiceDescriptor {
                &#client::SERVICE
            }

            fn dispatch(&self, invocation: #cg::Invocation) -> #cg::InvokeFuture {
                match #client::SERVICE.find(invocation.method(), invocation.parameter_types()) {
                    #(#arms)*
                    _ => #cg::fail(#client::SERVICE.method_not_found(&invocation)),
                }
            }
        }
    })
}

/// The trait method as declared: `async fn f(..) -> R` becomes
/// `fn f(..) -> impl Future<Output = R> + Send`.
fn rewrite(m: &Method, cg: &TokenStream) -> syn::TraitItemFn {
    let mut item = m.item.clone();
    let output = &m.output;
    item.sig.asyncness = None;
    item.sig.output = syn::parse_quote_spanned! {output.span()=>
        -> impl #cg::StdFuture<Output = #output> + #cg::Send
    };
    if let Some(body) = item.default.take() {
        item.default = Some(syn::parse_quote!({ async move #body }));
    }
    item
}

fn arg_names(m: &Method) -> Vec<Ident> {
    (0..m.params.len())
        .map(|i| format_ident!("arg{}", i))
        .collect()
}

fn method_descriptor(m: &Method, cg: &TokenStream) -> TokenStream {
    if let Some(st) = &m.stream {
        // Java's parameters: `(A, StreamObserver)` or `(StreamObserver)`.
        let parts = if st.kind == "Server" {
            let req = &st.request;
            quote_spanned!(req.span()=> <#req as #cg::JavaType>::DESCRIPTOR, #cg::STREAM_OBSERVER_DESCRIPTOR)
        } else {
            quote!(#cg::STREAM_OBSERVER_DESCRIPTOR)
        };
        let count: usize = if st.kind == "Server" { 2 } else { 1 };
        let kind = format_ident!("{}", st.kind);
        let wire = &m.wire_name;
        let rust = m.ident.to_string();
        return quote! {
            #cg::MethodDescriptor {
                name: #wire,
                parameter_types: {
                    const PARTS: &[&str] = &[#parts];
                    const LEN: usize = #cg::concat_len(PARTS);
                    const BYTES: [u8; LEN] = #cg::concat_bytes::<LEN>(PARTS);
                    #cg::as_str(&BYTES)
                },
                rust_name: #rust,
                parameter_count: #count,
                idl: false,
                stream: #cg::Some(#cg::StreamKind::#kind),
            }
        };
    }
    let parts = m.params.iter().map(|p| match &p.java {
        Some(lit) => quote!(#lit),
        None => {
            let ty = p.borrowed.as_ref().unwrap_or(&p.ty);
            quote_spanned!(ty.span()=> <#ty as #cg::JavaType>::DESCRIPTOR)
        }
    });
    let wire = &m.wire_name;
    let rust = m.ident.to_string();
    let count = m.params.len();
    quote! {
        #cg::MethodDescriptor {
            name: #wire,
            parameter_types: {
                const PARTS: &[&str] = &[#(#parts),*];
                const LEN: usize = #cg::concat_len(PARTS);
                const BYTES: [u8; LEN] = #cg::concat_bytes::<LEN>(PARTS);
                #cg::as_str(&BYTES)
            },
            rust_name: #rust,
            parameter_count: #count,
            idl: false,
            stream: #cg::None,
        }
    }
}

fn client_fn(index: usize, m: &Method, cg: &TokenStream) -> TokenStream {
    let ident = &m.ident;
    let output = &m.output;
    let ok = &m.ok;
    let names = arg_names(m);
    let tys = m.params.iter().map(|p| &p.ty);
    let index = Literal::usize_unsuffixed(index);
    if let Some(st) = &m.stream {
        let (req, rep) = (&st.request, &st.reply);
        let call = match st.kind {
            "Server" => quote!(wrapper_server_streaming),
            "Client" => quote!(wrapper_client_streaming),
            _ => quote!(wrapper_bidi_streaming),
        };
        return quote! {
            fn #ident(&self, #(#names: #tys),*) -> impl #cg::StdFuture<Output = #output> + #cg::Send {
                self.inner.#call::<#req, #rep>(#index, #(#names),*)
            }
        };
    }
    let arguments = if m.params.is_empty() {
        quote!(#cg::Arguments::none())
    } else {
        let count = m.params.len();
        let values = m.params.iter().zip(&names).map(|(p, n)| {
            let owned = match p.borrowed {
                Some(_) => quote!(#cg::ToOwned::to_owned(#n)),
                None => quote!(#n),
            };
            match p.java {
                Some(_) => owned,
                None => quote!(#cg::Java(#owned)),
            }
        });
        quote!(#cg::Arguments::typed(#count, (#(#values,)*)))
    };
    quote! {
        fn #ident(&self, #(#names: #tys),*) -> impl #cg::StdFuture<Output = #output> + #cg::Send {
            self.inner.call::<#ok>(#index, #arguments)
        }
    }
}

fn server_arm(index: usize, m: &Method, service: &Ident, cg: &TokenStream) -> TokenStream {
    let ident = &m.ident;
    let ok = &m.ok;
    let names = arg_names(m);
    let index = Literal::usize_unsuffixed(index);
    if let Some(st) = &m.stream {
        let (req, rep) = (&st.request, &st.reply);
        let serve = match st.kind {
            "Server" => quote!(serve_wrapper_server_streaming),
            "Client" => quote!(serve_wrapper_client_streaming),
            _ => quote!(serve_wrapper_bidi_streaming),
        };
        return quote! {
            #cg::Some(#index) => {
                let service = #cg::StdArc::clone(&self.inner);
                #cg::#serve::<#req, #rep, _, _>(invocation, move |arg0| async move {
                    <RubboImpl as #service>::#ident(&*service, arg0).await
                })
            }
        };
    }
    let decode = if m.params.is_empty() {
        quote!()
    } else {
        let owned = m.params.iter().map(|p| match &p.borrowed {
            Some(t) => quote!(<#t as #cg::ToOwned>::Owned),
            None => {
                let t = &p.ty;
                quote!(#t)
            }
        });
        quote! {
            let (#(#names,)*) = match #cg::decode_arguments::<(#(#owned,)*)>(invocation.arguments()) {
                #cg::Ok(args) => args,
                #cg::Err(e) => return #cg::fail(e),
            };
        }
    };
    let call_args = m.params.iter().zip(&names).map(|(p, n)| match p.borrowed {
        Some(_) => quote!(#cg::Borrow::borrow(&#n)),
        None => quote!(#n),
    });
    let serve = quote_spanned!(ok.span()=> #cg::serve::<#ok, _>);
    quote! {
        #cg::Some(#index) => {
            #decode
            let service = #cg::StdArc::clone(&self.inner);
            #serve(invocation, async move {
                <RubboImpl as #service>::#ident(&*service, #(#call_args),*).await
            })
        }
    }
}
