//! `#[derive(JavaType)]`: a user type names its Java class.

use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{DeriveInput, Error, Expr, ExprLit, Lit, LitStr, Meta, Result, Token};

pub(crate) fn derive(input: DeriveInput) -> Result<TokenStream> {
    let ident = &input.ident;
    let class = java_class(&input)?
        .or(serde_rename(&input))
        .ok_or_else(|| {
            Error::new(
                input.ident.span(),
                "name the Java class: `#[java(class = \"com.example.Foo\")]` \
             (or `#[serde(rename = \"com.example.Foo\")]`)",
            )
        })?;
    let value = class.value();
    if value.is_empty() || value.contains(['/', ';', '[', ' ']) {
        return Err(Error::new(
            class.span(),
            "expected a Java class name such as `com.example.Foo` or `com.example.Outer$Inner`",
        ));
    }
    let descriptor = format!("L{};", value.replace('.', "/"));
    let mut generics = input.generics.clone();
    if !generics.params.is_empty() {
        // Generic types are serializable only for some parameters: say which.
        let (_, ty_generics, _) = input.generics.split_for_impl();
        generics
            .make_where_clause()
            .predicates
            .push(syn::parse_quote!(#ident #ty_generics: ::rubbo::codegen::Serialize));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics ::rubbo::codegen::JavaType for #ident #ty_generics #where_clause {
            const DESCRIPTOR: &'static str = #descriptor;
        }
    })
}

/// `#[java(class = "..")]`.
fn java_class(input: &DeriveInput) -> Result<Option<LitStr>> {
    let mut class = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("java")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("class") {
                class = Some(meta.value()?.parse::<LitStr>()?);
                Ok(())
            } else {
                Err(meta.error("unknown java attribute; expected `class = \"..\"`"))
            }
        })?;
    }
    Ok(class)
}

/// `#[serde(rename = "..")]` or `#[serde(rename(serialize = ".."))]`, if readable.
fn serde_rename(input: &DeriveInput) -> Option<LitStr> {
    input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("serde"))
        .filter_map(|a| {
            a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .find_map(|meta| match meta {
            Meta::NameValue(nv) if nv.path.is_ident("rename") => lit_str(&nv.value),
            Meta::List(list) if list.path.is_ident("rename") => list
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()?
                .into_iter()
                .find_map(|m| match m {
                    Meta::NameValue(nv) if nv.path.is_ident("serialize") => lit_str(&nv.value),
                    _ => None,
                }),
            _ => None,
        })
}

fn lit_str(e: &Expr) -> Option<LitStr> {
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.clone()),
        _ => None,
    }
}
