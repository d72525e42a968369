//! `rubbo decode hessian2|dubbo`: captured bytes as JSON.

use anyhow::{Result, anyhow, bail};
use bytes::Bytes;
use rubbo_common::{Outcome, Payload};
use rubbo_hessian2::{Decoder, value_to_json};
use rubbo_protocol_dubbo::codec;
use rubbo_remoting::{HEADER_LEN, Header, Status};
use serde_json::{Value as Json, json};

/// Decodes every Hessian value in `bytes` (one per line of output when several).
pub(crate) fn hessian2(bytes: &[u8]) -> Result<()> {
    let mut d = Decoder::new(bytes);
    let mut values = Vec::new();
    while !d.is_empty() {
        let at = d.position();
        let v = d
            .read_value()
            .map_err(|e| anyhow!("invalid hessian2 at byte {at}: {e}"))?;
        values.push(value_to_json(&v));
    }
    if values.is_empty() {
        bail!("no input bytes");
    }
    for v in values {
        crate::input::emit(&serde_json::to_string_pretty(&v)?)?;
    }
    Ok(())
}

/// Decodes every dubbo frame in `bytes`.
pub(crate) fn dubbo(bytes: &[u8]) -> Result<()> {
    let all = Bytes::copy_from_slice(bytes);
    let mut at = 0;
    if all.is_empty() {
        bail!("no input bytes");
    }
    while at < all.len() {
        let header = Header::decode(&all[at..])
            .map_err(|e| anyhow!("bad frame header at byte {at}: {e}"))?
            .ok_or_else(|| {
                anyhow!(
                    "truncated frame header at byte {at}: {} bytes left",
                    all.len() - at
                )
            })?;
        let len = usize::try_from(header.body_len)
            .map_err(|_| anyhow!("negative body length {} at byte {at}", header.body_len))?;
        let start = at + HEADER_LEN;
        if all.len() < start + len {
            bail!(
                "truncated frame at byte {at}: body length {len}, {} bytes present",
                all.len() - start
            );
        }
        let body = all.slice(start..start + len);
        crate::input::emit(&serde_json::to_string_pretty(&frame_json(
            &header, &body, at,
        )?)?)?;
        at = start + len;
    }
    Ok(())
}

fn frame_json(h: &Header, body: &Bytes, at: usize) -> Result<Json> {
    let ser = h.serialization();
    let mut out = json!({
        "offset": at,
        "header": {
            "request": h.is_request(),
            "two_way": h.is_two_way(),
            "event": h.is_event(),
            "serialization": ser,
            "status": if h.is_request() { Json::Null } else { json!(h.status) },
            "status_name": if h.is_request() { Json::Null } else { json!(Status::from_u8(h.status).name()) },
            "id": h.id,
            "body_length": h.body_len,
        }
    });
    let err = |e: &dyn std::fmt::Display| anyhow!("frame at byte {at}: {e}");
    out["body"] = if h.is_event() {
        let v = Decoder::new(body).read_value().map_err(|e| err(&e))?;
        let kind = match v.as_str() {
            None if v.is_null() => "heartbeat",
            Some("R") => "readonly",
            Some("W") => "writable",
            _ => "event",
        };
        json!({"event": kind, "value": value_to_json(&v)})
    } else if h.is_request() {
        let req = codec::decode_request_full(ser, body).map_err(|e| err(&e))?;
        let args = req.arguments.to_values().map_err(|e| err(&e))?;
        json!({
            "dubbo_version": req.dubbo_version,
            "path": &*req.path,
            "version": &*req.version,
            "method": &*req.method,
            "parameter_types": &*req.parameter_types,
            "arguments": args.iter().map(value_to_json).collect::<Vec<_>>(),
            "attachments": attachments_json(&req.attachments),
        })
    } else if Status::from_u8(h.status).is_ok() {
        let r = codec::decode_response(ser, body).map_err(|e| err(&e))?;
        let (outcome, attachments) = r.into_parts();
        let mut b = match outcome {
            Outcome::Value(Payload::Null) => json!({"value": null}),
            Outcome::Value(p) => {
                json!({"value": value_to_json(&p.to_value().map_err(|e| err(&e))?)})
            }
            Outcome::Exception(e) => json!({"exception": {
                "class": e.class, "message": e.message, "object": value_to_json(&e.value)}}),
        };
        b["attachments"] = attachments_json(&attachments);
        b
    } else {
        json!({"error": codec::decode_error_text(ser, body)})
    };
    Ok(out)
}

fn attachments_json(a: &rubbo_common::Attachments) -> Json {
    let mut keys: Vec<&String> = a.keys().collect();
    keys.sort();
    Json::Object(
        keys.into_iter()
            .map(|k| (k.clone(), value_to_json(&a[k])))
            .collect(),
    )
}
