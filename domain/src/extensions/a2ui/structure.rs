//! The shape of a surface, checked when the agent emits it: component ids unique in a message,
//! no component reaching itself, and bounded components, bytes, nodes and depth once the new
//! messages are folded into what the task's surfaces already hold. A surface that passes is a
//! tree of at most `MAX_SURFACE_NODES` nodes drawn from its `root` (a List's template counted
//! once; the board bounds what data expands it to).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::messages::UiError;
pub use super::surfaces::references;
use super::surfaces::{Shape, Surfaces};

/// Components one surface may hold.
pub const MAX_SURFACE_COMPONENTS: usize = 200;
/// Bytes of component JSON one surface may hold (each component's serialised size, summed).
pub const MAX_SURFACE_BYTES: usize = 128 * 1024;
/// Nodes a surface's tree may have, drawn from `root` with every reference followed (a
/// component referred to twice counts twice).
pub const MAX_SURFACE_NODES: usize = 500;
/// Levels a surface's tree may have, `root` being the first.
pub const MAX_SURFACE_DEPTH: usize = 16;
/// Surfaces one task may hold at once.
pub const MAX_SURFACES: usize = 16;
/// The component every surface is drawn from.
pub const ROOT_ID: &str = "root";

fn refuse(field: impl Into<String>, reason: impl Into<String>) -> UiError {
    UiError {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Checks `messages` (already schema-checked) against the surfaces the task holds: the first
/// rule broken is reported, naming the message and what broke it.
pub fn check(current: &Surfaces, messages: &[Value]) -> Result<(), UiError> {
    let mut shapes: BTreeMap<String, BTreeMap<String, Shape>> = current
        .iter()
        .map(|(id, s)| (id.clone(), s.shape.clone()))
        .collect();
    let mut touched: BTreeMap<String, usize> = BTreeMap::new();
    for (i, m) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let surface_of = |kind: &str| {
            m.get(kind)
                .and_then(|k| k.get("surfaceId"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        if let Some(s) = surface_of("createSurface") {
            shapes.insert(s.clone(), BTreeMap::new());
            if shapes.len() > MAX_SURFACES {
                return Err(refuse(
                    format!("{at}.createSurface.surfaceId"),
                    format!(
                        "a task holds at most {MAX_SURFACES} surfaces; delete one first (deleteSurface)"
                    ),
                ));
            }
            touched.insert(s, i);
        } else if let Some(s) = surface_of("deleteSurface") {
            shapes.remove(&s);
            touched.remove(&s);
        } else if let Some(s) = surface_of("updateComponents") {
            let components = m["updateComponents"]["components"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut seen = BTreeSet::new();
            let shape = shapes.entry(s.clone()).or_default();
            for (j, c) in components.iter().enumerate() {
                let Some(id) = c.get("id").and_then(Value::as_str) else {
                    continue;
                };
                if !seen.insert(id) {
                    return Err(refuse(
                        format!("{at}.updateComponents.components[{j}].id"),
                        format!("component id {id:?} appears twice in one message; ids are unique in a surface"),
                    ));
                }
                shape.insert(id.to_string(), Shape::of(c));
            }
            touched.insert(s, i);
        }
    }
    for (surface, i) in &touched {
        if let Some(shape) = shapes.get(surface) {
            check_surface(surface, shape)
                .map_err(|reason| refuse(format!("messages[{i}]"), reason))?;
        }
    }
    Ok(())
}

/// The rules one surface's folded shape must keep.
fn check_surface(surface: &str, shape: &BTreeMap<String, Shape>) -> Result<(), String> {
    if shape.len() > MAX_SURFACE_COMPONENTS {
        return Err(format!(
            "surface {surface:?} would hold {} components, more than {MAX_SURFACE_COMPONENTS}",
            shape.len()
        ));
    }
    let bytes: usize = shape.values().map(|s| s.bytes as usize).sum();
    if bytes > MAX_SURFACE_BYTES {
        return Err(format!(
            "surface {surface:?} would hold {bytes} bytes of components, more than {MAX_SURFACE_BYTES}"
        ));
    }
    if let Some(id) = cycle(shape) {
        return Err(format!(
            "component {id:?} of surface {surface:?} contains itself (a surface is a tree)"
        ));
    }
    let mut memo = BTreeMap::new();
    let (nodes, depth) = size(shape, ROOT_ID, &mut memo);
    if nodes > MAX_SURFACE_NODES {
        return Err(format!(
            "surface {surface:?} would draw {nodes} nodes from {ROOT_ID:?}, more than {MAX_SURFACE_NODES} (a component referred to n times counts n times)"
        ));
    }
    if depth > MAX_SURFACE_DEPTH {
        return Err(format!(
            "surface {surface:?} would be {depth} levels deep, more than {MAX_SURFACE_DEPTH}"
        ));
    }
    Ok(())
}

/// A component that reaches itself through its references, if any (iterative depth-first
/// search: a deep chain cannot overflow the stack).
fn cycle(shape: &BTreeMap<String, Shape>) -> Option<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    let mut marks: BTreeMap<&str, Mark> = BTreeMap::new();
    for start in shape.keys() {
        if marks.contains_key(start.as_str()) {
            continue;
        }
        // (component, index of the next reference to follow)
        let mut path: Vec<(&str, usize)> = vec![(start.as_str(), 0)];
        marks.insert(start.as_str(), Mark::Open);
        while let Some((id, next)) = path.last_mut() {
            let refs = shape
                .get(*id)
                .map(|s| s.refs.as_slice())
                .unwrap_or_default();
            match refs.get(*next) {
                Some(child) => {
                    *next += 1;
                    match marks.get(child.as_str()) {
                        Some(Mark::Open) => return Some(child.clone()),
                        Some(Mark::Done) => {}
                        None => {
                            marks.insert(child.as_str(), Mark::Open);
                            path.push((child.as_str(), 0));
                        }
                    }
                }
                None => {
                    marks.insert(id, Mark::Done);
                    path.pop();
                }
            }
        }
    }
    None
}

/// Nodes and levels of the tree drawn from `id` (a missing component is drawn as nothing).
/// Called only on a shape without cycles and of at most `MAX_SURFACE_COMPONENTS` components,
/// which bounds the recursion; counts saturate.
fn size<'a>(
    shape: &'a BTreeMap<String, Shape>,
    id: &'a str,
    memo: &mut BTreeMap<&'a str, (usize, usize)>,
) -> (usize, usize) {
    if let Some(known) = memo.get(id) {
        return *known;
    }
    let Some(s) = shape.get(id) else {
        return (0, 0);
    };
    let (mut nodes, mut depth) = (1usize, 0usize);
    for child in &s.refs {
        let (n, d) = size(shape, child, memo);
        nodes = nodes.saturating_add(n);
        depth = depth.max(d);
    }
    let out = (nodes, depth + 1);
    memo.insert(id, out);
    out
}

#[cfg(test)]
#[path = "structure_tests.rs"]
mod tests;
