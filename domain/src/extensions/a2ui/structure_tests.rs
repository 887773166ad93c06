//! The structure rules of a surface, each at its bound and one past it.

use serde_json::{json, Value};

use super::*;
use crate::extensions::a2ui::BASIC_CATALOG_ID;

fn create(surface: &str) -> Value {
    json!({"version": "v0.9", "createSurface": {"surfaceId": surface, "catalogId": BASIC_CATALOG_ID}})
}

fn update(surface: &str, components: Vec<Value>) -> Value {
    json!({"version": "v0.9", "updateComponents": {"surfaceId": surface, "components": components}})
}

fn text(id: &str) -> Value {
    json!({"id": id, "component": "Text", "text": "x"})
}

fn column(id: &str, children: &[&str]) -> Value {
    json!({"id": id, "component": "Column", "children": children})
}

/// The surfaces after `messages`, as a task holding them knows them.
fn holding(messages: &[Value]) -> Surfaces {
    let mut s = Surfaces::default();
    messages.iter().for_each(|m| s.apply(m));
    s
}

fn refused(current: &Surfaces, messages: &[Value]) -> UiError {
    check(current, messages).expect_err("refused")
}

#[test]
fn a_tree_of_distinct_components_passes() {
    let ok = [
        create("s"),
        update(
            "s",
            vec![
                column("root", &["title", "card", "tabs", "modal"]),
                text("title"),
                json!({"id": "card", "component": "Card", "child": "inner"}),
                text("inner"),
                json!({"id": "tabs", "component": "Tabs", "tabs": [{"title": "A", "child": "a"}]}),
                text("a"),
                json!({"id": "modal", "component": "Modal", "trigger": "open", "content": "body"}),
                text("open"),
                text("body"),
            ],
        ),
    ];
    check(&Surfaces::default(), &ok).unwrap();
    assert_eq!(
        references(
            &json!({"id": "l", "component": "List", "children": {"componentId": "row", "path": "/items"}})
        ),
        ["row"]
    );
}

#[test]
fn an_id_twice_in_one_message_is_refused() {
    let e = refused(
        &Surfaces::default(),
        &[
            create("s"),
            update("s", vec![column("root", &["t"]), text("t"), text("t")]),
        ],
    );
    assert_eq!(e.field, "messages[1].updateComponents.components[2].id");
    assert!(e.reason.contains("twice"), "{e}");
    // A later message replacing a component is an update, not a duplicate.
    let current = holding(&[
        create("s"),
        update("s", vec![column("root", &["t"]), text("t")]),
    ]);
    check(&current, &[update("s", vec![text("t")])]).unwrap();
}

#[test]
fn a_component_containing_itself_is_refused_also_across_emits() {
    let e = refused(
        &Surfaces::default(),
        &[create("s"), update("s", vec![column("root", &["root"])])],
    );
    assert!(e.reason.contains("contains itself"), "{e}");
    let e = refused(
        &Surfaces::default(),
        &[
            create("s"),
            update(
                "s",
                vec![
                    column("root", &["a"]),
                    json!({"id": "a", "component": "Card", "child": "root"}),
                ],
            ),
        ],
    );
    assert!(e.reason.contains("contains itself"), "{e}");
    // The loop closed by a later call, against what the task already holds.
    let current = holding(&[
        create("s"),
        update("s", vec![column("root", &["a"]), column("a", &["b"])]),
    ]);
    let e = refused(&current, &[update("s", vec![column("b", &["a"])])]);
    assert_eq!(e.field, "messages[0]");
    assert!(e.reason.contains("contains itself"), "{e}");
}

#[test]
fn the_render_bomb_is_refused() {
    // A Column whose children are the next level four times, sixteen levels down: 4^16 nodes.
    let mut components = vec![column("root", &["l1", "l1", "l1", "l1"])];
    for level in 1..16 {
        let next = format!("l{}", level + 1);
        components.push(column(&format!("l{level}"), &[&next, &next, &next, &next]));
    }
    components.push(text("l16"));
    let e = refused(
        &Surfaces::default(),
        &[create("s"), update("s", components)],
    );
    assert!(e.reason.contains("nodes"), "{e}");
}

#[test]
fn nodes_at_the_bound_pass_and_one_more_is_refused() {
    let at: Vec<&str> = vec!["t"; MAX_SURFACE_NODES - 1];
    check(
        &Surfaces::default(),
        &[
            create("s"),
            update("s", vec![column("root", &at), text("t")]),
        ],
    )
    .unwrap();
    let past: Vec<&str> = vec!["t"; MAX_SURFACE_NODES];
    let e = refused(
        &Surfaces::default(),
        &[
            create("s"),
            update("s", vec![column("root", &past), text("t")]),
        ],
    );
    assert!(
        e.reason
            .contains(&format!("{} nodes", MAX_SURFACE_NODES + 1)),
        "{e}"
    );
}

fn chain(levels: usize) -> Vec<Value> {
    let id = |i: usize| {
        if i == 0 {
            ROOT_ID.to_string()
        } else {
            format!("c{i}")
        }
    };
    let mut out: Vec<Value> = (0..levels - 1)
        .map(|i| column(&id(i), &[&id(i + 1)]))
        .collect();
    out.push(text(&id(levels - 1)));
    out
}

#[test]
fn depth_at_the_bound_passes_and_one_more_is_refused() {
    check(
        &Surfaces::default(),
        &[create("s"), update("s", chain(MAX_SURFACE_DEPTH))],
    )
    .unwrap();
    let e = refused(
        &Surfaces::default(),
        &[create("s"), update("s", chain(MAX_SURFACE_DEPTH + 1))],
    );
    assert!(e.reason.contains("levels deep"), "{e}");
}

#[test]
fn components_at_the_bound_pass_and_one_more_is_refused() {
    let ids: Vec<String> = (1..MAX_SURFACE_COMPONENTS)
        .map(|i| format!("t{i}"))
        .collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut components = vec![column("root", &refs)];
    components.extend(ids.iter().map(|i| text(i)));
    assert_eq!(components.len(), MAX_SURFACE_COMPONENTS);
    check(
        &Surfaces::default(),
        &[create("s"), update("s", components.clone())],
    )
    .unwrap();
    // One more, unreferenced, is still one component too many.
    components.push(text("spare"));
    let e = refused(
        &Surfaces::default(),
        &[create("s"), update("s", components)],
    );
    assert!(e.reason.contains("components"), "{e}");
}

#[test]
fn bytes_at_the_bound_pass_and_one_more_is_refused() {
    // Components of a known size, the last one padded to land exactly on the bound.
    let big =
        |id: &str, len: usize| json!({"id": id, "component": "Text", "text": "x".repeat(len)});
    let size = |v: &Value| crate::wire::json_size(v);
    let mut components = vec![column("root", &[])];
    let mut total = size(&components[0]);
    let mut n = 0;
    while total + size(&big("pXXX", 4000)) < MAX_SURFACE_BYTES {
        let c = big(&format!("p{n:03}"), 4000);
        total += size(&c);
        components.push(c);
        n += 1;
    }
    let pad = MAX_SURFACE_BYTES - total - size(&big("last", 0));
    components.push(big("last", pad));
    let sum: usize = components.iter().map(size).sum();
    assert_eq!(sum, MAX_SURFACE_BYTES);
    check(
        &Surfaces::default(),
        &[create("s"), update("s", components.clone())],
    )
    .unwrap();
    let last = components.len() - 1;
    components[last] = big("last", pad + 1);
    let e = refused(
        &Surfaces::default(),
        &[create("s"), update("s", components)],
    );
    assert!(e.reason.contains("bytes"), "{e}");
}

#[test]
fn surfaces_at_the_bound_pass_and_one_more_is_refused() {
    let creates: Vec<Value> = (0..MAX_SURFACES)
        .map(|i| create(&format!("s{i}")))
        .collect();
    let current = holding(&creates);
    check(&current, &[create("s0")]).unwrap();
    let e = refused(&current, &[create("another")]);
    assert!(e.reason.contains("surfaces"), "{e}");
    // Deleting one first makes room.
    check(
        &current,
        &[
            json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s1"}}),
            create("another"),
        ],
    )
    .unwrap();
}
