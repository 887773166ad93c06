//! A surface's data model and the bindings that read it: values at RFC 6901 JSON Pointers (set
//! by `updateDataModel`, read by `{"path": …}` bindings, relative paths inside a List's template
//! resolved against the item), and the one function of the basic catalog a page can evaluate
//! without the agent, `formatString` (`${/path}` placeholders).

use serde_json::{Map, Value};

/// Deepest pointer followed or created (a model is a tree; a longer path is ignored).
pub const MAX_POINTER_TOKENS: usize = 32;

fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// Sets `value` at `pointer` in `root` (the whole model for "" or "/"), creating objects on the
/// way; without a value, removes what is there.
pub fn set(root: &mut Value, pointer: &str, value: Option<Value>) {
    let path = tokens(pointer);
    if pointer.is_empty() || pointer == "/" || path.is_empty() {
        *root = value.unwrap_or(Value::Null);
        return;
    }
    if path.len() > MAX_POINTER_TOKENS {
        return;
    }
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = root;
    for t in parents {
        if !at.is_object() && !at.is_array() {
            *at = Value::Object(Map::new());
        }
        at = match at {
            Value::Array(a) => match t.parse::<usize>() {
                Ok(i) if i < a.len() => &mut a[i],
                _ => return,
            },
            Value::Object(o) => o.entry(t.clone()).or_insert(Value::Null),
            _ => return,
        };
    }
    if !at.is_object() && !at.is_array() {
        if value.is_none() {
            return;
        }
        *at = Value::Object(Map::new());
    }
    match (at, value) {
        (Value::Object(o), Some(v)) => {
            o.insert(last.clone(), v);
        }
        (Value::Object(o), None) => {
            o.remove(last);
        }
        (Value::Array(a), v) => {
            let i = if last == "-" {
                a.len()
            } else {
                match last.parse::<usize>() {
                    Ok(i) => i,
                    Err(_) => return,
                }
            };
            match v {
                Some(v) if i < a.len() => a[i] = v,
                Some(v) if i == a.len() => a.push(v),
                None if i < a.len() => {
                    a.remove(i);
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// The absolute pointer a binding's path names: as is when it starts with `/`, else under
/// `base` (the List item a template is drawn for).
pub fn absolute(path: &str, base: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{base}/{path}")
    }
}

/// What a property holds once evaluated, and the pointer it is bound to (when it is a binding,
/// which makes an input two-way).
pub struct Bound {
    pub value: Value,
    pub path: Option<String>,
}

/// Evaluates a dynamic property (a literal, `{"path"}`, 0.8's `{"literalString"}` and kin, or a
/// `formatString` call) against `data` at `base`.
pub fn eval(data: &Value, v: Option<&Value>, base: &str) -> Bound {
    let literal = |value: Value| Bound { value, path: None };
    let Some(v) = v else {
        return literal(Value::Null);
    };
    let Value::Object(o) = v else {
        return literal(v.clone());
    };
    if let Some(p) = o.get("path").and_then(Value::as_str) {
        let path = absolute(p, base);
        let value = data.pointer(&path).cloned().unwrap_or(Value::Null);
        return Bound {
            value,
            path: Some(path),
        };
    }
    for k in [
        "literalString",
        "literalNumber",
        "literalBoolean",
        "literalArray",
    ] {
        if let Some(l) = o.get(k) {
            return literal(l.clone());
        }
    }
    if o.get("call").and_then(Value::as_str) == Some("formatString") {
        let template = v
            .pointer("/args/value")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return literal(Value::String(format_string(data, template, base)));
    }
    literal(Value::Null)
}

/// `formatString`: each `${path}` replaced by the value there (shown as text).
fn format_string(data: &Value, template: &str, base: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        match rest[start + 2..].find('}') {
            Some(end) => {
                let path = &rest[start + 2..start + 2 + end];
                out.push_str(&shown(
                    data.pointer(&absolute(path, base)).unwrap_or(&Value::Null),
                ));
                rest = &rest[start + 3 + end..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// A value as a person reads it: strings as they are, nothing for null, JSON for the rest.
pub fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
