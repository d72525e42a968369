//! The conversions of a generic call, as Java's `GenericFilter` and `PojoUtils` do
//! them: `$invoke(method, types, args)` to the real call, results to maps.

use rubbo_common::{
    Arguments, BizException, GENERIC_ASYNC_METHOD, GENERIC_METHOD, Invocation, RpcError, Value,
    descriptor,
};
use rubbo_hessian2::Map;

/// `$invoke` / `$invokeAsync`.
pub(crate) fn is_generic(method: &str) -> bool {
    method == GENERIC_METHOD || method == GENERIC_ASYNC_METHOD
}

/// Turns `$invoke(method, types, args)` into the call it stands for: the real method,
/// the descriptor built from the Java type names, and the arguments as values. A map
/// argument carrying `class` reads into the typed parameter's struct by field name,
/// as Java's `PojoUtils.realize` would.
pub(crate) fn unwrap_generic(inv: &Invocation) -> Result<Invocation, RpcError> {
    let values = inv.arguments().to_values()?;
    let [method, types, args] = <[Value; 3]>::try_from(values).map_err(|v| {
        RpcError::serialization(format!("$invoke takes 3 arguments, got {}", v.len()))
    })?;
    let method = match method {
        Value::String(m) => m,
        other => {
            return Err(RpcError::serialization(format!(
                "$invoke method name must be a string, got {other:?}"
            )));
        }
    };
    let types: Vec<String> = match types {
        Value::Null => Vec::new(),
        Value::List(l) => l
            .items
            .into_iter()
            .map(|t| match t {
                Value::String(s) => Ok(s),
                other => Err(RpcError::serialization(format!(
                    "$invoke parameter type must be a string, got {other:?}"
                ))),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(RpcError::serialization(format!(
                "$invoke parameter types must be a list, got {other:?}"
            )));
        }
    };
    let args: Vec<Value> = match args {
        Value::Null => Vec::new(),
        Value::List(l) => l.items,
        other => vec![other],
    };
    // No types at all: the provider finds the method by name (not overloaded).
    if !types.is_empty() && args.len() != types.len() {
        return Err(RpcError::serialization(format!(
            "$invoke of {method}: {} parameter types but {} arguments",
            types.len(),
            args.len()
        )));
    }
    let desc: String = types.iter().map(|t| descriptor::name_to_desc(t)).collect();
    let mut out = Invocation::new(inv.interface().to_owned(), method)
        .with_parameter_types(desc)
        .with_arguments(Arguments::Values(args));
    if let Some(v) = inv.version() {
        out = out.with_version(v.to_owned());
    }
    if let Some(g) = inv.group() {
        out = out.with_group(g.to_owned());
    }
    *out.attachments_mut() = inv.attachments().clone();
    Ok(out)
}

/// A result as a generic consumer expects it (Java's `PojoUtils.generalize`): objects
/// become maps with their class under `class`, enums their name, `BigDecimal` its
/// value; lists and maps are generalized element by element.
pub(crate) fn generalize(v: Value) -> Value {
    match v {
        Value::Object(o) => {
            let class = o.class.to_string();
            let fields = o.fields;
            // Enums travel as an object with the single field `name`.
            if fields.len() == 1 && &*fields[0].0 == "name" {
                if let Value::String(_) = &fields[0].1 {
                    return fields
                        .into_iter()
                        .next()
                        .map(|(_, v)| v)
                        .unwrap_or_default();
                }
            }
            if class == "java.math.BigDecimal" || class == "java.math.BigInteger" {
                return Value::Object(rubbo_hessian2::Object {
                    class: o.class,
                    fields,
                });
            }
            let mut entries = Vec::with_capacity(fields.len() + 1);
            entries.push((Value::from("class"), Value::String(class)));
            entries.extend(
                fields
                    .into_iter()
                    .map(|(k, v)| (Value::String(k.to_string()), generalize(v))),
            );
            Value::Map(Map {
                type_name: None,
                entries,
            })
        }
        Value::List(mut l) => {
            l.items = l.items.into_iter().map(generalize).collect();
            Value::List(l)
        }
        Value::Map(mut m) => {
            m.entries = m
                .entries
                .into_iter()
                .map(|(k, v)| (generalize(k), generalize(v)))
                .collect();
            Value::Map(m)
        }
        other => other,
    }
}

/// The class Java's `GenericFilter` wraps a generic call's exception in.
pub const GENERIC_EXCEPTION: &str = "com.alibaba.dubbo.rpc.service.GenericException";

/// A generic call's business exception as Java's `GenericFilter` sends it: a
/// `GenericException` carrying the original class and message in `exceptionClass`
/// and `exceptionMessage` (what `GenericException.getExceptionClass()` returns to a
/// Java generic consumer).
pub(crate) fn wrap_exception(e: BizException) -> BizException {
    if e.class.ends_with(".rpc.service.GenericException") {
        return e;
    }
    let detail = e.to_string();
    let mut value =
        rubbo_hessian2::JavaException::new(GENERIC_EXCEPTION, detail.clone()).to_value();
    if let Value::Object(o) = &mut value {
        o.fields.push((
            rubbo_common::GENERIC_EXCEPTION_CLASS_FIELD.into(),
            Value::String(e.class.clone()),
        ));
        o.fields.push((
            rubbo_common::GENERIC_EXCEPTION_MESSAGE_FIELD.into(),
            e.message.clone().into(),
        ));
    }
    BizException {
        class: GENERIC_EXCEPTION.to_owned(),
        message: Some(detail),
        value,
    }
}
