//! Parsing `#[rubbo::service(..)] trait ..` into a checked model.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Error, FnArg, GenericArgument, ItemTrait, LitStr, Pat, PathArguments, Result,
    ReturnType, Token, TraitItem, TraitItemFn, Type,
};

/// `interface = "..", version = "..", group = ".."`.
pub(crate) struct ServiceArgs {
    pub(crate) interface: LitStr,
    pub(crate) version: Option<LitStr>,
    pub(crate) group: Option<LitStr>,
}

impl Parse for ServiceArgs {
    fn parse(input: ParseStream<'_>) -> Result<Self> {
        let mut interface = None;
        let mut version = None;
        let mut group = None;
        let pairs = Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated(input)?;
        for pair in pairs {
            let key = pair
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let slot = match key.as_str() {
                "interface" => &mut interface,
                "version" => &mut version,
                "group" => &mut group,
                _ => {
                    return Err(Error::new(
                        pair.path.span(),
                        format!(
                            "unknown #[rubbo::service] argument `{key}`; expected `interface`, `version` or `group`"
                        ),
                    ));
                }
            };
            if slot.is_some() {
                return Err(Error::new(pair.path.span(), format!("`{key}` given twice")));
            }
            *slot = Some(string_lit(&pair.value)?);
        }
        let interface = interface.ok_or_else(|| {
            Error::new(
                Span::call_site(),
                "#[rubbo::service] needs the Java interface: `interface = \"com.example.FooService\"`",
            )
        })?;
        Ok(ServiceArgs {
            interface,
            version,
            group,
        })
    }
}

fn string_lit(expr: &syn::Expr) -> Result<LitStr> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Ok(s.clone()),
        other => Err(Error::new_spanned(other, "expected a string literal")),
    }
}

/// One service method.
pub(crate) struct Method {
    /// The method as it goes back into the trait (attributes cleaned, `async` removed).
    pub(crate) item: TraitItemFn,
    pub(crate) ident: syn::Ident,
    pub(crate) wire_name: String,
    pub(crate) params: Vec<Param>,
    /// `T` of `Result<T, E>`.
    pub(crate) ok: Type,
    /// The whole declared return type.
    pub(crate) output: Type,
    /// The streaming shape, for a method taking a `Streaming<A>` or returning an
    /// `Outbound<R>` (Triple wrapper mode, Java's `StreamObserver`).
    pub(crate) stream: Option<Stream>,
}

/// The streaming shape of a method and its element types.
pub(crate) struct Stream {
    /// `"Server"`, `"Client"` or `"Bidi"` (`StreamKind`'s variant).
    pub(crate) kind: &'static str,
    /// The request element type (`A` of `Streaming<A>`, or the one parameter).
    pub(crate) request: Type,
    /// The reply element type (`R` of `Outbound<R>`, or the `Ok` type).
    pub(crate) reply: Type,
}

/// `T` of a type whose last path segment is `name<T>`.
fn generic_of(ty: &Type, name: &str) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(t)] => Some(t.clone()),
        _ => None,
    }
}

/// The streaming shape of a method with these parameters and `Ok` type.
fn stream_shape(params: &[Param], ok: &Type, span: Span) -> Result<Option<Stream>> {
    let replies = generic_of(ok, "Outbound");
    let streamed: Vec<usize> = params
        .iter()
        .enumerate()
        .filter(|(_, p)| generic_of(&p.ty, "Streaming").is_some())
        .map(|(i, _)| i)
        .collect();
    if streamed.is_empty() {
        let Some(reply) = replies else {
            return Ok(None);
        };
        let [one] = params else {
            return Err(Error::new(
                span,
                "a server-streaming rubbo method (returning `Outbound<R>`) takes exactly one                  request parameter, as Java's `void m(A, StreamObserver<R>)`",
            ));
        };
        if one.borrowed.is_some() || one.java.is_some() {
            return Err(Error::new_spanned(
                &one.ty,
                "the request of a server-streaming method is an owned value with its own Java type",
            ));
        }
        return Ok(Some(Stream {
            kind: "Server",
            request: one.ty.clone(),
            reply,
        }));
    }
    let ([one], [_]) = (params, streamed.as_slice()) else {
        return Err(Error::new(
            span,
            "a streaming rubbo method takes one `Streaming<A>` and nothing else, as Java's              `StreamObserver<A> m(StreamObserver<R>)`",
        ));
    };
    let request =
        generic_of(&one.ty, "Streaming").ok_or_else(|| Error::new(span, "unreachable"))?;
    Ok(Some(match replies {
        Some(reply) => Stream {
            kind: "Bidi",
            request,
            reply,
        },
        None => Stream {
            kind: "Client",
            request,
            reply: ok.clone(),
        },
    }))
}

/// One parameter after `&self`.
pub(crate) struct Param {
    /// The declared type.
    pub(crate) ty: Type,
    /// `Some(T)` when the parameter is `&T`: it travels as `T`'s owned form.
    pub(crate) borrowed: Option<Type>,
    /// `#[rubbo(java = "..")]`.
    pub(crate) java: Option<LitStr>,
}

/// Checks the trait and extracts its methods; the trait keeps its non-method parts.
pub(crate) fn parse_trait(item: &mut ItemTrait) -> Result<Vec<Method>> {
    let mut errors = Errors::default();
    if !item.generics.params.is_empty() {
        errors.push(Error::new_spanned(
            &item.generics,
            "a #[rubbo::service] trait cannot be generic",
        ));
    }
    let mut methods = Vec::new();
    for trait_item in &mut item.items {
        match trait_item {
            TraitItem::Fn(f) => {
                if let Some(m) = errors.take(parse_method(f)) {
                    methods.push(m);
                }
            }
            other => errors.push(Error::new_spanned(
                other,
                "a #[rubbo::service] trait holds only `async fn` methods",
            )),
        }
    }
    errors.finish().map(|()| methods)
}

fn parse_method(f: &TraitItemFn) -> Result<Method> {
    let sig = &f.sig;
    let mut errors = Errors::default();
    if sig.asyncness.is_none() {
        errors.push(Error::new(
            sig.fn_token.span(),
            format!(
                "rubbo service methods must be `async fn`: write `async fn {}(&self, ..)`",
                sig.ident
            ),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(Error::new_spanned(
            &sig.generics,
            "rubbo service methods cannot be generic",
        ));
    }
    if let Some(v) = &sig.variadic {
        errors.push(Error::new_spanned(
            v,
            "rubbo service methods cannot be variadic",
        ));
    }
    let name = errors.take(rubbo_attr(&f.attrs, "name")).flatten();
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none() => {}
        Some(other) => errors.push(Error::new_spanned(
            other,
            "the first parameter of a rubbo service method must be `&self`",
        )),
        None => errors.push(Error::new(
            sig.ident.span(),
            "a rubbo service method takes `&self` first",
        )),
    }
    let mut params = Vec::new();
    for input in inputs {
        let FnArg::Typed(pt) = input else {
            continue;
        };
        if !matches!(&*pt.pat, Pat::Ident(_) | Pat::Wild(_)) && f.default.is_none() {
            errors.push(Error::new_spanned(&pt.pat, "expected a parameter name"));
        }
        let java = errors.take(rubbo_attr(&pt.attrs, "java")).flatten();
        let ty = (*pt.ty).clone();
        let borrowed = match &ty {
            Type::Reference(r) if r.mutability.is_none() => Some((*r.elem).clone()),
            Type::Reference(r) => {
                errors.push(Error::new_spanned(
                    r,
                    "rubbo service parameters cannot be `&mut`",
                ));
                None
            }
            _ => None,
        };
        params.push(Param { ty, borrowed, java });
    }
    let result = errors.take(result_type(sig));
    let ident = sig.ident.clone();
    let wire_name = match name {
        Some(n) if n.value().is_empty() => {
            errors.push(Error::new(n.span(), "the wire name cannot be empty"));
            String::new()
        }
        Some(n) => n.value(),
        None => lower_camel(&ident.to_string()),
    };
    errors.finish()?;
    let Some((ok, output)) = result else {
        return Err(Error::new(sig.ident.span(), "unreachable: no return type"));
    };
    let stream = stream_shape(&params, &ok, sig.ident.span())?;
    let mut item = f.clone();
    item.attrs.retain(|a| !a.path().is_ident("rubbo"));
    for input in &mut item.sig.inputs {
        if let FnArg::Typed(pt) = input {
            pt.attrs.retain(|a| !a.path().is_ident("rubbo"));
        }
    }
    Ok(Method {
        item,
        ident,
        wire_name,
        params,
        ok,
        output,
        stream,
    })
}

/// Collects several errors, so one expansion reports them all.
#[derive(Default)]
struct Errors(Option<Error>);

impl Errors {
    fn push(&mut self, e: Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    fn take<T>(&mut self, r: Result<T>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }

    fn finish(self) -> Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// `Result<T, RpcError>` (any path ending so) gives `T`.
fn result_type(sig: &syn::Signature) -> Result<(Type, Type)> {
    const MSG: &str = "a rubbo service method returns `Result<T, rubbo::RpcError>`";
    let ReturnType::Type(_, ty) = &sig.output else {
        return Err(Error::new(
            sig.paren_token.span.close(),
            format!("{MSG}: add `-> Result<(), rubbo::RpcError>`"),
        ));
    };
    let fail = || Error::new_spanned(ty, MSG);
    let Type::Path(p) = &**ty else {
        return Err(fail());
    };
    let last = p.path.segments.last().ok_or_else(fail)?;
    if last.ident != "Result" {
        return Err(fail());
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return Err(fail());
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    let [ok, err] = types.as_slice() else {
        return Err(fail());
    };
    let err_is_rpc = matches!(err, Type::Path(e) if e.path.segments.last().is_some_and(|s| s.ident == "RpcError"));
    if !err_is_rpc {
        return Err(Error::new_spanned(
            err,
            "the error type of a rubbo service method is `rubbo::RpcError`",
        ));
    }
    Ok(((*ok).clone(), (**ty).clone()))
}

/// The value of `#[rubbo(<key> = "..")]`, rejecting other keys.
fn rubbo_attr(attrs: &[Attribute], key: &str) -> Result<Option<LitStr>> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("rubbo")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(key) {
                if found.is_some() {
                    return Err(meta.error(format!("`{key}` given twice")));
                }
                found = Some(meta.value()?.parse::<LitStr>()?);
                Ok(())
            } else {
                let got = meta
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| "?".to_owned());
                Err(meta.error(format!(
                    "unknown rubbo attribute `{got}` here; expected `{key} = \"..\"`"
                )))
            }
        })?;
    }
    Ok(found)
}

/// `echo_int` -> `echoInt` (Java's method naming); a raw identifier loses its `r#`.
pub(crate) fn lower_camel(rust: &str) -> String {
    let rust = rust.strip_prefix("r#").unwrap_or(rust);
    let mut out = String::with_capacity(rust.len());
    let mut upper = false;
    for c in rust.chars() {
        if c == '_' {
            if out.chars().all(|c| c == '_') {
                out.push(c);
            } else {
                upper = true;
            }
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::lower_camel;

    #[test]
    fn snake_to_lower_camel() {
        assert_eq!(lower_camel("echo"), "echo");
        assert_eq!(lower_camel("echo_int"), "echoInt");
        assert_eq!(lower_camel("list_users"), "listUsers");
        assert_eq!(lower_camel("get_url_v2"), "getUrlV2");
        assert_eq!(lower_camel("r#type"), "type");
        assert_eq!(lower_camel("_hidden_one"), "_hiddenOne");
        assert_eq!(lower_camel("already__double"), "alreadyDouble");
    }
}
